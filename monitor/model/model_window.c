/*
 * model_window.c — a worker's figures over a window, read out of its series:
 * shares of time from the samples (split with schedstat's exact runnable
 * share), the top blockers, counter rates, stall and the idle history.
 */
#include "model/model_window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(MODEL_HISTORY <= SERIES_HISTORY, "the view's history is read from the series'");

#define NS 1000000000ull
/* Rates over less than this are noise. */
#define RATE_MIN_NS  (50ull * 1000000)

/* Window bounds: buckets with lo <= sec <= hi. */
struct window {
	int64_t lo, hi;
};

/*
 * How a window's samples become shares of time.
 *
 * A sample can say "running" only if the sampler gets a CPU while the
 * worker has one. When the two share a CPU and the sampler cannot preempt,
 * or the host runs the VM's vCPUs in turn, the sampler's wakeups slip past
 * the worker's busy phases and find it back in its poll: a loop busy 10 %
 * of the time read 98 % idle that way (docs/performance.md, "Monitor").
 * schedstat knows the runnable share exactly (on a CPU or waiting for one,
 * as /proc's "running"), so when it is known the samples only split the
 * rest, the time off the CPU, between poll, blocked and other: a slip does
 * not bias that split, the worker being off its CPU either way.
 */
struct split {
	double   running;    /* share of time runnable, 0..1 */
	double   scale;      /* share of time the basis covers */
	uint64_t basis;      /* samples the other shares come from */
};

static struct split split_samples(uint64_t n_running, uint64_t n_off, double runnable)
{
	struct split s = { 0 };
	if (!isnan(runnable) && n_off) {
		s.running = fmin(fmax(runnable, 0.0), 1.0);
		s.scale = 1.0 - s.running;
		s.basis = n_off;
	} else if (n_running + n_off) {
		s.basis = n_running + n_off;
		s.running = (double)n_running / (double)s.basis;
		s.scale = 1.0;
	}
	return s;
}

/* n samples of the basis as a percentage of time; n == basis gives exactly
 * 100 * scale (an all-poll worker reads 100, not 99.99999999999999) */
static double share_pct(const struct split *sp, uint64_t n)
{
	return sp->basis ? 100.0 * sp->scale * (double)n / (double)sp->basis : NAN;
}

static int by_count_desc(const void *x, const void *y)
{
	const struct series_block *a = x, *b = y;
	return a->n < b->n ? 1 : a->n > b->n ? -1 : 0;
}

static void fill_blockers(struct worker_view *w, struct series_block *keys, int nkeys, const struct split *sp)
{
	qsort(keys, (size_t)nkeys, sizeof(*keys), by_count_desc);
	w->nblocked_top = 0;
	for (int i = 0; i < nkeys && w->nblocked_top < MODEL_BLOCKERS && keys[i].n; i++) {
		struct blocker_view *b = &w->blocked_top[w->nblocked_top++];
		const char *name = probe_syscall_name(keys[i].nr);
		b->nr = keys[i].nr;
		b->fd = keys[i].fd;
		b->target[0] = '\0';
		if (name)
			snprintf(b->syscall, sizeof(b->syscall), "%s", name);
		else
			snprintf(b->syscall, sizeof(b->syscall), "syscall_%ld", keys[i].nr);
		b->pct = share_pct(sp, keys[i].n);
	}
}

static double rate(const struct series_reading *from, const struct series_reading *to, int idx)
{
	if (!from->valid || !to->valid || to->t_ns < from->t_ns + RATE_MIN_NS || to->v[idx] < from->v[idx])
		return NAN;
	return (double)(to->v[idx] - from->v[idx]) * 1e9 / (double)(to->t_ns - from->t_ns);
}

/*
 * poll_time_ns as of the reading, including the part of a blocking poll in
 * progress: poll_time_ns only grows when the poll returns, so a worker
 * blocked across a whole window would read 0 % idle, then over 100 %.
 */
static uint64_t poll_ns_at(const struct series_reading *r)
{
	uint64_t since = r->v[PROBE_SHM_poll_since_ns];
	uint64_t p = r->v[PROBE_SHM_poll_time_ns];
	return since && r->mono_ns > since ? p + (r->mono_ns - since) : p;
}

static void view_counters(const struct series *a, const struct series_reading *from, uint64_t runq_max,
			  struct worker_view *w)
{
	const struct series_reading *to = &a->shm_last;
	memcpy(w->totals, to->v, sizeof(w->totals));
	w->ops_per_s = rate(from, to, PROBE_SHM_ops);
	w->switches_per_s = rate(from, to, PROBE_SHM_switches);
	w->polls_per_s = rate(from, to, PROBE_SHM_polls);
	w->completions_per_s = rate(from, to, PROBE_SHM_completions);
	double poll_ns_per_s = NAN;
	uint64_t p0 = poll_ns_at(from), p1 = poll_ns_at(to);
	if (from->valid && to->valid && to->t_ns >= from->t_ns + RATE_MIN_NS && p1 >= p0)
		poll_ns_per_s = (double)(p1 - p0) * 1e9 / (double)(to->t_ns - from->t_ns);
	w->self_idle_pct = isnan(poll_ns_per_s) ? NAN : fmin(100.0, poll_ns_per_s / 1e7);
	w->runqueue_len = to->v[PROBE_SHM_runqueue_len];
	w->runqueue_max = runq_max > w->runqueue_len ? runq_max : w->runqueue_len;
	w->pending_ops = to->v[PROBE_SHM_pending_ops];
	w->fibers = to->v[PROBE_SHM_fibers_live];
}

static void view_sched(const struct series_sched *from, const struct series_sched *to, struct worker_view *w)
{
	w->cpu_pct = w->cpu_wait_pct = NAN;
	if (!from->valid || !to->valid || to->t_ns < from->t_ns + RATE_MIN_NS || to->run_ns < from->run_ns ||
	    to->wait_ns < from->wait_ns)
		return;
	double dt = (double)(to->t_ns - from->t_ns);
	w->cpu_pct = 100.0 * (double)(to->run_ns - from->run_ns) / dt;
	w->cpu_wait_pct = 100.0 * (double)(to->wait_ns - from->wait_ns) / dt;
}

/* Complete seconds only: the current one holds a handful of samples and
 * would flicker at the end of every sparkline. */
static void view_history(const struct series *a, int64_t now_sec, struct worker_view *w)
{
	now_sec--;
	int64_t span = a->first_sec < 0 ? 0 : now_sec - a->first_sec + 1;
	if (span < 0)
		span = 0;
	w->nhistory = span > MODEL_HISTORY ? MODEL_HISTORY : (int)span;
	for (int i = 0; i < w->nhistory; i++) {
		int64_t sec = now_sec - w->nhistory + 1 + i;
		const struct series_hist *hs = &a->hist[sec % SERIES_HISTORY];
		if (hs->sec != sec || !hs->n) {
			w->idle_history[i] = NAN;
			continue;
		}
		double runnable = hs->span_us ? (double)hs->busy_us / hs->span_us : NAN;
		struct split sp = split_samples(hs->run, (uint64_t)hs->n - hs->run, runnable);
		w->idle_history[i] = (float)share_pct(&sp, hs->poll);
	}
}

static int by_key_count_desc(const void *x, const void *y)
{
	const struct series_key *a = x, *b = y;
	return a->n < b->n ? 1 : a->n > b->n ? -1 : 0;
}

/* The run's largest keys (class, syscall, fd, pc, fiber), as shares of all
 * its samples; fd targets are the caller's, like the blockers'. */
static void view_keys(const struct series *a, struct worker_view *w)
{
	static const char *const cls[SERIES_NCLASS] = { "idle", "running", "blocked", "other" };
	struct series_key k[SERIES_KEYS];
	int nk = 0;
	uint64_t total = a->total.keys_overflow;
	for (; nk < SERIES_KEYS && a->total.keys[nk].n; nk++) {
		k[nk] = a->total.keys[nk];
		total += k[nk].n;
	}
	qsort(k, (size_t)nk, sizeof(k[0]), by_key_count_desc);
	w->nkeys = 0;
	for (int i = 0; i < nk && w->nkeys < MODEL_KEYS; i++) {
		struct key_view *v = &w->keys[w->nkeys++];
		const char *name = k[i].nr >= 0 ? probe_syscall_name(k[i].nr) : NULL;
		memset(v, 0, sizeof(*v));
		v->cls = cls[k[i].cls];
		v->nr = k[i].nr;
		v->fd = k[i].fd;
		v->pc = k[i].pc;
		v->sp = k[i].sp;
		if (k[i].nr >= 0)
			snprintf(v->syscall, sizeof(v->syscall), name ? "%s" : "syscall_%s", name ? name : "");
		if (k[i].nr >= 0 && !name)
			snprintf(v->syscall, sizeof(v->syscall), "syscall_%d", (int)k[i].nr);
		snprintf(v->fiber, sizeof(v->fiber), "%s", a->fiber_names[k[i].fiber]);
		v->pct = 100.0 * k[i].n / (double)total;
	}
	w->keys_unkeyed_pct = total ? 100.0 * a->total.keys_overflow / (double)total : NAN;
}

void model_window(const struct series *a, uint64_t now_ns, double window_s, int instrumented, struct worker_view *w)
{
	int64_t now_sec = (int64_t)(now_ns / NS);
	uint32_t n[SERIES_NCLASS] = { 0 };
	struct series_block keys[SERIES_BLOCK_KEYS * SERIES_DETAIL_S];
	uint32_t overflow = 0;
	memset(keys, 0, sizeof(keys));
	int nkeys = 0;
	uint64_t runq_max = 0;
	const struct series_reading *shm_from = &a->total.shm_first;
	const struct series_sched *sched_from = &a->total.sched_first;

	if (window_s > 0) {
		int64_t span = series_window_span(window_s);
		struct window win = { now_sec - span + 1, now_sec };
		/* the baseline for rates is the last reading before the window,
		 * or failing that the oldest one inside it */
		const struct series_bucket *before = &a->detail[(now_sec - span + SERIES_DETAIL_S) % SERIES_DETAIL_S];
		const struct series_reading *oldest = NULL;
		const struct series_sched *oldest_sched = NULL;
		for (int64_t sec = win.lo; sec <= win.hi; sec++) {
			if (sec < 0)
				continue;
			const struct series_bucket *b = &a->detail[sec % SERIES_DETAIL_S];
			if (b->sec != sec)
				continue; /* not that second's (unused is -1, which a young window's bounds hold) */
			for (int c = 0; c < SERIES_NCLASS; c++)
				n[c] += b->n[c];
			for (int k = 0; k < SERIES_BLOCK_KEYS && b->blocks[k].n; k++)
				series_add_block(keys, SERIES_BLOCK_KEYS * SERIES_DETAIL_S, &overflow, b->blocks[k].nr, b->blocks[k].fd,
					  b->blocks[k].n);
			overflow += b->blocks_overflow;
			if (b->runq_max > runq_max)
				runq_max = b->runq_max;
			if (!oldest && b->shm.valid)
				oldest = &b->shm;
			if (!oldest_sched && b->sched.valid)
				oldest_sched = &b->sched;
		}
		/* Baseline: the last reading before the window; else, for a worker
		 * younger than the window, its very first reading; else (a gap in
		 * readings) the oldest one inside the window. */
		int have_before = now_sec - span >= 0 && before->sec == now_sec - span;
		uint64_t lo_ns = win.lo > 0 ? (uint64_t)win.lo * NS : 0;
		if (have_before && before->shm.valid)
			shm_from = &before->shm;
		else if (!(a->total.shm_first.valid && a->total.shm_first.t_ns >= lo_ns) && oldest)
			shm_from = oldest;
		if (have_before && before->sched.valid)
			sched_from = &before->sched;
		else if (!(a->total.sched_first.valid && a->total.sched_first.t_ns >= lo_ns) && oldest_sched)
			sched_from = oldest_sched;
	} else {
		memcpy(n, a->total.n, sizeof(n));
		for (int k = 0; k < SERIES_BLOCK_KEYS * 2 && a->total.blocks[k].n; k++)
			keys[nkeys++] = a->total.blocks[k];
		overflow = a->total.blocks_overflow;
		runq_max = a->total.runq_max;
	}
	if (window_s > 0)
		while (nkeys < SERIES_BLOCK_KEYS * SERIES_DETAIL_S && keys[nkeys].n)
			nkeys++;

	view_sched(sched_from, &a->sched_last, w);
	uint64_t n_off = (uint64_t)n[SERIES_POLL] + n[SERIES_BLOCKED] + n[SERIES_OTHER];
	w->samples = n_off + n[SERIES_RUNNING];
	struct split sp = split_samples(n[SERIES_RUNNING], n_off, (w->cpu_pct + w->cpu_wait_pct) / 100.0);
	if (sp.basis) {
		w->idle_pct = share_pct(&sp, n[SERIES_POLL]);
		w->idle_ci95 = sp.scale * model_ci95_pts((double)n[SERIES_POLL] / (double)sp.basis, sp.basis);
		w->running_pct = 100.0 * sp.running;
		w->blocked_pct = share_pct(&sp, n[SERIES_BLOCKED]);
		w->other_pct = share_pct(&sp, n[SERIES_OTHER]);
		/* counted as blocked, just not attributable to a (syscall, fd) */
		w->blocked_unkeyed_pct = share_pct(&sp, overflow);
		fill_blockers(w, keys, nkeys, &sp);
	} else {
		w->idle_pct = w->idle_ci95 = w->running_pct = w->blocked_pct = w->other_pct = NAN;
		w->blocked_unkeyed_pct = NAN;
		w->nblocked_top = 0;
	}

	w->ops_per_s = w->switches_per_s = w->polls_per_s = w->completions_per_s = NAN;
	w->self_idle_pct = w->headroom_ops_per_s = NAN;
	w->self_report_disagreements = w->shortcut_samples = 0;
	w->unchanged_samples = a->unchanged_samples;
	w->stall_ms = 0;
	w->fiber_tag[0] = '\0';
	if (instrumented && a->shm_last.valid) {
		view_counters(a, shm_from, runq_max, w);
		w->self_report_disagreements = a->self_disagreements;
		w->shortcut_samples = a->shortcut_samples;
		w->headroom_ops_per_s = model_headroom(w->ops_per_s, w->idle_pct);
		w->stall_ms = (double)series_stall_ns(a, now_ns) / 1e6;
		snprintf(w->fiber_tag, sizeof(w->fiber_tag), "%s", a->fiber_tag);
	}
	view_history(a, now_sec, w);
	view_keys(a, w);
}
