/*
 * profile_stalls.c — stalls captured, one group per stack (profile_stalls.h).
 */
#include "profile/profile_stalls.h"
#include "profile/profile_tree.h"
#include "util/textsafe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SHOWN_FRAMES 6   /* the innermost frames of each stack, in the report */

struct group {
	uint64_t key;                /* the stack's hash: state, syscall and every frame */
	char    *head;               /* owned: "state  thread  syscall target fiber" of its first stall */
	char    *frames;             /* owned: its innermost SHOWN_FRAMES frames, a line each */
	uint64_t count, first_ns, last_ns;
	uint64_t worst_ns;           /* the longest (an ended stall's whole length, else as captured) */
	uint64_t ended, ended_ns;    /* stalls whose end was seen, and their time */
	uint64_t waited, wait_ns;    /* of those, with a CPU wait measured, and its sum */
	uint64_t around_ns;          /* the time between the readings it was measured over */
};

struct profile_stalls {
	struct group *g;
	size_t   n, cap;
	uint64_t total, unkept;      /* stalls captured; of stacks past the cap */
};

static uint64_t mix(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (h ^ 0xff) * 1099511628211ull;   /* the end of a field */
}

static const char *state_name(enum probe_class c)
{
	return c == PROBE_RUNNING ? "running" : c == PROBE_BLOCKED ? "blocked" : "other";
}

struct profile_stalls *profile_stalls_new(void)
{
	return calloc(1, sizeof(struct profile_stalls));
}

void profile_stalls_delete(struct profile_stalls *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->g[i].head);
		free(s->g[i].frames);
	}
	free(s->g);
	free(s);
}

/* A new group's texts, from its first stall. */
static int describe(struct group *g, const struct rec_event *ev)
{
	char label[PROFILE_LABEL_MAX];
	size_t len = 0;
	FILE *f = open_memstream(&g->head, &len);
	if (!f)
		return -ENOMEM;
	textsafe_label(label, sizeof(label), ev->thread);
	fprintf(f, "%-8s %s", state_name(ev->cls), label);
	const char *parts[] = { ev->syscall, ev->target, ev->fiber && ev->fiber[0] ? ev->fiber : NULL };
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (parts[i]) {
			textsafe_label(label, sizeof(label), parts[i]);
			fprintf(f, "  %s%s", i == 2 ? "fiber " : "", label);
		}
	if (fclose(f) != 0)
		return -ENOMEM;
	f = open_memstream(&g->frames, &len);
	if (!f)
		return -ENOMEM;
	for (int i = 0; i < ev->nframes && i < SHOWN_FRAMES; i++) {
		textsafe_label(label, sizeof(label), ev->frames[i]);
		fprintf(f, "      %s\n", label);
	}
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

int profile_stalls_add(struct profile_stalls *s, const struct rec_event *ev)
{
	s->total++;
	uint64_t key = mix(mix(1469598103934665603ull, state_name(ev->cls)), ev->syscall);
	for (int i = 0; i < ev->nframes; i++)
		key = mix(key, ev->frames[i]);
	uint64_t dur = (uint64_t)ev->stall_ms * 1000000;
	size_t i = 0;
	while (i < s->n && s->g[i].key != key)
		i++;
	if (i == s->n) {
		if (s->n == PROFILE_STALLS_MAX_STACKS) {
			s->unkept++;
			return -1;
		}
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 16;
			struct group *g = realloc(s->g, cap * sizeof(*g));
			if (!g)
				return -ENOMEM;
			s->g = g;
			s->cap = cap;
		}
		struct group *g = &s->g[s->n];
		*g = (struct group){ .key = key, .first_ns = ev->t_ns };
		if (describe(g, ev) < 0) {
			free(g->head);
			free(g->frames);
			return -ENOMEM;
		}
		s->n++;
	}
	struct group *g = &s->g[i];
	g->count++;
	if (ev->t_ns < g->first_ns)
		g->first_ns = ev->t_ns;
	if (ev->t_ns > g->last_ns)
		g->last_ns = ev->t_ns;
	if (dur > g->worst_ns)
		g->worst_ns = dur;
	return (int)i;
}

void profile_stalls_end(struct profile_stalls *s, int i, uint64_t dur_ns, int64_t wait_ns, uint64_t around_ns)
{
	if (i < 0 || (size_t)i >= s->n)
		return;
	struct group *g = &s->g[i];
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

uint64_t profile_stalls_count(const struct profile_stalls *s) { return s->total; }

static int by_count(const void *x, const void *y)
{
	const struct group *a = x, *b = y;
	if (a->count != b->count)
		return a->count < b->count ? 1 : -1;
	return a->worst_ns < b->worst_ns ? 1 : a->worst_ns > b->worst_ns ? -1 : 0;
}

int profile_stalls_write(const struct profile_stalls *s, FILE *f)
{
	if (!s->total)
		return 0;
	struct group *v = malloc((s->n ? s->n : 1) * sizeof(*v));
	if (!v)
		return -EIO;
	memcpy(v, s->g, s->n * sizeof(*v));
	qsort(v, s->n, sizeof(*v), by_count);
	fprintf(f, "\nstalls captured (out of the poll past --stall-ms), %" PRIu64 ", in %zu stack%s "
		"(count, first and last time, worst, CPU wait around them: of the schedstat readings' time):\n",
		s->total, s->n, s->n == 1 ? "" : "s");
	for (size_t i = 0; i < s->n; i++) {
		const struct group *g = &v[i];
		char wait[64] = "cpu wait -";
		/* the schedstat readings around each stall: the wait's share of their time */
		if (g->waited && g->around_ns)
			snprintf(wait, sizeof(wait), "cpu wait %.0f%%",
				 100.0 * (double)g->wait_ns / (double)(g->around_ns > g->wait_ns ? g->around_ns : g->wait_ns));
		fprintf(f, "  %6" PRIu64 "x  %9.3f s .. %9.3f s  worst %6.0f ms  %-13s  %s\n", g->count,
			(double)g->first_ns / 1e9, (double)g->last_ns / 1e9, (double)g->worst_ns / 1e6, wait, g->head);
		fputs(g->frames, f);
	}
	if (s->unkept)
		fprintf(f, "  %6" PRIu64 "x  of stacks past the first %d, not shown\n", s->unkept, PROFILE_STALLS_MAX_STACKS);
	free(v);
	return ferror(f) ? -EIO : 0;
}
