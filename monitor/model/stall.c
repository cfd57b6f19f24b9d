/*
 * stall.c — captured stalls into the worker's view (stall.h).
 */
#include "model/stall.h"

#include <stdio.h>
#include <string.h>

#include "probe_classify.h"

#define NS 1000000000.0

static void view_of(struct stall_view *v, const struct series_stall *st)
{
	static const char *const states[SERIES_NCLASS] = { "idle", "running", "blocked", "other" };
	static const char *const from[] = { "none", "syscall", "perf", "bpf" };
	memset(v, 0, sizeof(*v));
	v->t_s = (double)st->t_ns / NS;
	v->dur_ms = st->dur_ms;
	v->ended = st->ended;
	v->lo_ms = st->lo_ms;
	v->hi_ms = st->hi_ms;
	v->state = st->cls < SERIES_NCLASS ? states[st->cls] : "other";
	v->fd = st->fd;
	if (st->nr >= 0) {
		const char *name = probe_syscall_name(st->nr);
		if (name)
			snprintf(v->syscall, sizeof(v->syscall), "%s", name);
		else
			snprintf(v->syscall, sizeof(v->syscall), "syscall_%d", (int)st->nr);
	}
	snprintf(v->target, sizeof(v->target), "%s", st->target);
	snprintf(v->fiber, sizeof(v->fiber), "%s", st->fiber);
	v->stack_from = st->stack_from < sizeof(from) / sizeof(from[0]) ? from[st->stack_from] : "none";
	snprintf(v->why, sizeof(v->why), "%s", st->why);
	v->nframes = st->nframes > 0 && st->nframes <= SERIES_STALL_FRAMES ? st->nframes : 0;
	for (int i = 0; i < v->nframes; i++)
		snprintf(v->frames[i], sizeof(v->frames[i]), "%s", st->frames[i]);
}

void model_stalls(const struct series *a, struct worker_view *w)
{
	uint32_t n = a->total.stalls;
	w->nstall_log = 0;
	for (uint32_t k = 0; k < SERIES_STALLS && k < n; k++)
		view_of(&w->stall_log[w->nstall_log++], &a->stalls[(n - 1 - k) % SERIES_STALLS]);
}
