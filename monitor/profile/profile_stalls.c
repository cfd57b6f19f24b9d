/*
 * profile_stalls.c — a recording's stalls grouped by stack for report
 * (profile_stalls.h), through the model's grouping (model/stall_group.h)
 * that top's stall list uses too.
 */
#include "profile/profile_stalls.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

struct profile_stalls {
	struct stall_groups g;
};

static const char *state_name(enum probe_class c)
{
	return c == PROBE_RUNNING ? "running" : c == PROBE_BLOCKED ? "blocked" : "other";
}

struct profile_stalls *profile_stalls_new(void)
{
	struct profile_stalls *s = malloc(sizeof(*s));
	if (s)
		stall_groups_init(&s->g);
	return s;
}

void profile_stalls_delete(struct profile_stalls *s)
{
	if (!s)
		return;
	stall_groups_done(&s->g);
	free(s);
}

int profile_stalls_add(struct profile_stalls *s, const struct rec_event *ev)
{
	struct stall_in in = { .state = state_name(ev->cls), .thread = ev->thread, .syscall = ev->syscall,
			       .target = ev->target, .fiber = ev->fiber, .frames = ev->frames, .nframes = ev->nframes,
			       .t_ns = ev->t_ns, .dur_ns = (uint64_t)ev->stall_ms * 1000000 };
	return stall_groups_add(&s->g, &in);
}

void profile_stalls_end(struct profile_stalls *s, int i, uint64_t dur_ns, int64_t wait_ns, uint64_t around_ns)
{
	stall_groups_end(&s->g, i, dur_ns, wait_ns, around_ns);
}

uint64_t profile_stalls_count(const struct profile_stalls *s) { return s->g.total; }

int profile_stalls_write(const struct profile_stalls *s, FILE *f)
{
	if (!s->g.total)
		return 0;
	struct stall_group *v = stall_groups_sorted(&s->g);
	if (!v)
		return -EIO;
	fprintf(f, "\nstalls captured (out of the poll past --stall-ms), %" PRIu64 ", in %zu stack%s "
		"(count, first and last time, worst, CPU wait around them: of the schedstat readings' time):\n",
		s->g.total, s->g.n, s->g.n == 1 ? "" : "s");
	for (size_t i = 0; i < s->g.n; i++) {
		const struct stall_group *g = &v[i];
		char wait[64] = "cpu wait -";
		double pct = stall_group_wait_pct(g);
		if (!isnan(pct))
			snprintf(wait, sizeof(wait), "cpu wait %.0f%%", pct);
		fprintf(f, "  %6" PRIu64 "x  %9.3f s .. %9.3f s  worst %6.0f ms  %-13s  %s\n", g->count,
			(double)g->first_ns / 1e9, (double)g->last_ns / 1e9, (double)g->worst_ns / 1e6, wait, g->head);
		fputs(g->frames, f);
	}
	if (s->g.unkept)
		fprintf(f, "  %6" PRIu64 "x  of stacks past the first %d, not shown\n", s->g.unkept, STALL_GROUP_MAX);
	free(v);
	return ferror(f) ? -EIO : 0;
}
