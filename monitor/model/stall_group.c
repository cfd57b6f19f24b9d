/*
 * stall_group.c — stalls captured, one group per stack (stall_group.h).
 */
#include "model/stall_group.h"
#include "util/textsafe.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;   /* the end of a field */
}

void stall_groups_init(struct stall_groups *s) { memset(s, 0, sizeof(*s)); }

void stall_groups_done(struct stall_groups *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->g[i].head);
		free(s->g[i].frames);
	}
	free(s->g);
	memset(s, 0, sizeof(*s));
}

/* A new group's texts, from its first stall. */
static int describe(struct stall_group *g, const struct stall_in *in)
{
	char label[STALL_GROUP_LABEL_MAX];
	size_t len = 0;
	FILE *f = open_memstream(&g->head, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "%-8s", in->state);
	if (in->thread) {   /* top's list is one worker's: no thread */
		textsafe_label(label, sizeof(label), in->thread);
		fprintf(f, " %s", label);
	}
	const char *parts[] = { in->syscall, in->target, in->fiber && in->fiber[0] ? in->fiber : NULL };
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i] && parts[i][0]) {
			textsafe_label(label, sizeof(label), parts[i]);
			fprintf(f, "  %s%s", i == 2 ? "fiber " : "", label);
		}
	if (fclose(f) != 0)
		return -ENOMEM;
	f = open_memstream(&g->frames, &len);
	if (!f)
		return -ENOMEM;
	for (int i = 0; i < in->nframes && i < STALL_GROUP_SHOWN_FRAMES; i++) {
		textsafe_label(label, sizeof(label), in->frames[i] ? in->frames[i] : "?");
		fprintf(f, "      %s\n", label);
	}
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

int stall_groups_add(struct stall_groups *s, const struct stall_in *in)
{
	s->total++;
	uint64_t key = mix(mix(1469598103934665603ull, in->state), in->syscall);
	for (int i = 0; i < in->nframes; i++)
		key = mix(key, in->frames[i]);
	size_t i = 0;
	while (i < s->n && s->g[i].key != key)
		i++;
	if (i == s->n) {
		if (s->n == STALL_GROUP_MAX) {
			s->unkept++;
			return -1;
		}
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			struct stall_group *g = realloc(s->g, cap * sizeof(*g));
			if (!g)
				return -ENOMEM;
			s->g = g;
			s->cap = cap;
		}
		struct stall_group *g = &s->g[s->n];
		*g = (struct stall_group){ .key = key, .first_ns = in->t_ns, .last_ns = in->t_ns };
		if (describe(g, in) < 0) {
			free(g->head);
			free(g->frames);
			return -ENOMEM;
		}
		s->n++;
	}
	struct stall_group *g = &s->g[i];
	g->count++;
	if (in->t_ns < g->first_ns)
		g->first_ns = in->t_ns;
	if (in->t_ns > g->last_ns)
		g->last_ns = in->t_ns;
	if (in->dur_ns > g->worst_ns)
		g->worst_ns = in->dur_ns;
	return (int)i;
}

void stall_groups_end(struct stall_groups *s, int i, uint64_t dur_ns, int64_t wait_ns, uint64_t around_ns)
{
	if (i < 0 || (size_t)i >= s->n)
		return;
	struct stall_group *g = &s->g[i];
	if (dur_ns > g->worst_ns)
		g->worst_ns = dur_ns;
	g->ended++;
	g->ended_ns += dur_ns;
	if (wait_ns >= 0 && around_ns) {
		g->waited++;
		g->wait_ns += (uint64_t)wait_ns;
		g->around_ns += around_ns;
	}
}

static int by_count(const void *x, const void *y)
{
	const struct stall_group *a = x, *b = y;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return a->worst_ns < b->worst_ns ? 1 : a->worst_ns > b->worst_ns ? -1 : 0;
}

struct stall_group *stall_groups_sorted(const struct stall_groups *s)
{
	struct stall_group *v = malloc((s->n ? s->n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	if (s->n)
		memcpy(v, s->g, s->n * sizeof(*v));
	qsort(v, s->n, sizeof(*v), by_count);
	return v;
}

double stall_group_wait_pct(const struct stall_group *g)
{
	if (!g->waited || !g->around_ns)
		return NAN;
	/* the readings around each stall: the wait's share of their time */
	return 100.0 * (double)g->wait_ns / (double)(g->around_ns > g->wait_ns ? g->around_ns : g->wait_ns);
}
