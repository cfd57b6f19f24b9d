/*
 * model_window.c — a worker's figures over a window of its series: every
 * row of the metric table through the evaluator (eval.h), the top
 * blockers, the idle history and the run's largest keys.
 */
#include "model/model_window.h"
#include "model/eval.h"
#include "model/lag.h"
#include "model/limit.h"
#include "model/metric.h"
#include "model/stall.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(MODEL_HISTORY <= SERIES_HISTORY, "the view's history is read from the series'");

#define NS 1000000000ull

static int by_count_desc(const void *x, const void *y)
{
	const struct series_block *a = x, *b = y;
	return a->n < b->n ? 1 : a->n > b->n ? -1 : 0;
}

struct blocker_key {
	long   nr;
	int    fd;
	double pct;
};

static int by_pct_desc(const void *x, const void *y)
{
	const struct blocker_key *a = x, *b = y;
	return a->pct < b->pct ? 1 : a->pct > b->pct ? -1 : 0;
}

/* Under bpf: each syscall's share is the kernel's off-CPU time in it (the
 * evaluator's blocked_pct for that syscall), split among its fds as the
 * samples saw them (keys), fd -1 when they saw it on none. How many. */
static int exact_blockers(const struct eval_track *t, const struct series_exact *last, const struct series_block *keys,
			  int nkeys, struct blocker_key *out, int room)
{
	int n = 0;
	for (int j = 0; j < SERIES_EXACT_OFF; j++) {
		struct eval_filter f = { last->off_nr[j], -1 };
		struct estimate e;
		if (f.nr < 0 || model_eval(&metric_worker[METRIC_W_blocked_pct], &t, 1, &f, 0, &e) < 0 || !e.ok ||
		    !(e.est > 0))
			continue;
		double seen = 0;
		for (int k = 0; k < nkeys; k++)
			seen += keys[k].nr == f.nr ? keys[k].n : 0;
		if (!seen && n < room)
			out[n++] = (struct blocker_key){ f.nr, -1, e.est };
		for (int k = 0; k < nkeys && n < room && seen; k++)
			if (keys[k].nr == f.nr)
				out[n++] = (struct blocker_key){ f.nr, keys[k].fd, e.est * keys[k].n / seen };
	}
	qsort(out, (size_t)n, sizeof(*out), by_pct_desc);
	return n;
}

/* The largest (syscall, fd) keys of the periods, each with its share as
 * the evaluator gives blocked_pct for that key alone (exact_blockers
 * under bpf). */
static void fill_blockers(struct worker_view *w, const struct eval_track *t)
{
	static const int room = SERIES_BLOCK_KEYS * SERIES_DETAIL_S;
	struct series_block keys[SERIES_BLOCK_KEYS * SERIES_DETAIL_S];
	struct blocker_key top[4 * MODEL_BLOCKERS];
	uint32_t overflow = 0;
	int nkeys = 0, ntop = 0;
	memset(keys, 0, sizeof(keys));
	for (size_t i = 0; i < t->n; i++)
		for (int k = 0; t->p[i].b && k < t->p[i].nblocks && t->p[i].blocks[k].n; k++)
			series_add_block(keys, room, &overflow, t->p[i].blocks[k].nr, t->p[i].blocks[k].fd,
					 t->p[i].blocks[k].n);
	while (nkeys < room && keys[nkeys].n)
		nkeys++;
	qsort(keys, (size_t)nkeys, sizeof(*keys), by_count_desc);
	const struct series_exact *first, *last;
	if (model_eval_exact_ends(t, &first, &last) == 0) {
		ntop = exact_blockers(t, last, keys, nkeys, top, (int)(sizeof(top) / sizeof(top[0])));
	} else {
		for (; ntop < nkeys && ntop < MODEL_BLOCKERS; ntop++) {
			struct eval_filter f = { keys[ntop].nr, keys[ntop].fd };
			struct estimate e;
			top[ntop] = (struct blocker_key){ keys[ntop].nr, keys[ntop].fd, NAN };
			if (model_eval(&metric_worker[METRIC_W_blocked_pct], &t, 1, &f, 0, &e) == 0 && e.ok)
				top[ntop].pct = e.est;
		}
	}
	w->nblocked_top = 0;
	for (int i = 0; i < ntop && w->nblocked_top < MODEL_BLOCKERS; i++) {
		struct blocker_view *b = &w->blocked_top[w->nblocked_top++];
		const char *name = probe_syscall_name(top[i].nr);
		b->nr = top[i].nr;
		b->fd = top[i].fd;
		b->target[0] = '\0';
		if (name)
			snprintf(b->syscall, sizeof(b->syscall), "%s", name);
		else
			snprintf(b->syscall, sizeof(b->syscall), "syscall_%ld", top[i].nr);
		b->pct = top[i].pct;
	}
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
		double runnable = hs->span_us ? (double)hs->busy_us / hs->span_us : NAN, running, scale;
		double basis = eval_split(runnable, hs->run, (double)hs->n - hs->run, &running, &scale);
		/* n == basis gives exactly 100 * scale (an all-poll second reads 100, not 99.99999999999999) */
		w->idle_history[i] = basis > 0 ? (float)(100.0 * scale * hs->poll / basis) : NAN;
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

int model_row_is_interval(const struct metric *m)
{
	return m->kind == METRIC_INTERVAL || m->kind == METRIC_LOWER || m->kind == METRIC_UPPER;
}

void model_set_row(struct worker_view *w, const struct metric *m, double v)
{
	char *field = (char *)w + m->offset;
	if (m->type == METRIC_DOUBLE)
		*(double *)field = v;
	else if (m->type == METRIC_U64)
		*(uint64_t *)field = isnan(v) ? 0 : (uint64_t)llround(v);
}

/* The share row whose interval m bounds, or NULL. */
static const struct metric *bounded_share(const struct metric *m)
{
	for (int i = 0; i < METRIC_NWORKER; i++)
		if (metric_worker[i].kind == METRIC_SHARE && metric_worker[i].arg == m->arg)
			return &metric_worker[i];
	return NULL;
}

/* A bound is of the figure shown: its distance from the share comes from
 * the whole seconds (ti), the share itself from all of t, partial seconds
 * too (else a 4-s replay showed idle 46.5 over [44.3, 45.4]). How far the
 * share over t is from the share over ti: NaN when either is unknown. */
static double shown_minus_whole(const struct metric *m, const struct eval_track *t, const struct eval_track *ti)
{
	const struct metric *s = bounded_share(m);
	struct estimate all = { .ok = 0 }, whole = { .ok = 0 };
	if (!s || model_eval(s, &t, 1, NULL, 0, &all) < 0 || model_eval(s, &ti, 1, NULL, 0, &whole) < 0 ||
	    !all.ok || !whole.ok || !isfinite(all.est) || !isfinite(whole.est))
		return NAN;
	return all.est - whole.est;
}

/* Every row of the table over the track t (the interval rows over ti: the
 * whole seconds of t's periods), into w's fields; a counter row of a
 * worker without readings of its slot stays unknown. */
static void fill_rows(const struct eval_track *t, const struct eval_track *ti, int instrumented, struct worker_view *w)
{
	double shift = NAN;   /* shown_minus_whole, once for both bounds */
	int shift_arg = -1;
	for (int i = 0; i < METRIC_NWORKER; i++) {
		const struct metric *m = &metric_worker[i];
		struct estimate e = { .ok = 0 };
		if (m->source != METRIC_COUNTERS || instrumented)
			model_eval(m, model_row_is_interval(m) ? &ti : &t, 1, NULL, 0, &e);
		if ((m->kind == METRIC_LOWER || m->kind == METRIC_UPPER) && e.ok && isfinite(e.est)) {
			if (shift_arg != m->arg) {
				shift = shown_minus_whole(m, t, ti);
				shift_arg = m->arg;
			}
			if (isfinite(shift))
				e.est = fmin(fmax(e.est + shift, 0), 100);
		}
		/* unbounded headroom is shown as unknown */
		model_set_row(w, m, e.ok && isfinite(e.est) ? e.est : NAN);
	}
}

/*
 * Rates the kernel counted (the bpf source: series_add_exact) where the
 * window has two exact readings: an uninstrumented loop's poll returns,
 * and its ops as the events its poll returned, which give its headroom
 * over the evaluator's idle (itself exact there, eval.c's exact_share, as
 * cpu wait is). The busy spans are already the kernel's (the series took
 * them instead of the samples').
 */
static void exact_rows(const struct eval_track *t, struct worker_view *w)
{
	const struct series_exact *first, *last;
	if (model_eval_exact_ends(t, &first, &last) < 0)
		return;
	w->exact = 1;   /* (a source may have said so already: model_build's identity) */
	double dt = (double)(last->t_ns - first->t_ns);
	if (isnan(w->polls_per_s))
		w->polls_per_s = (double)(last->returns - first->returns) / (dt / 1e9);
	if (isnan(w->ops_per_s) && last->events > first->events)
		w->ops_per_s = (double)(last->events - first->events) / (dt / 1e9);
	if (isnan(w->headroom_ops_per_s) && !isnan(w->ops_per_s) && w->idle_pct < 99)
		w->headroom_ops_per_s = w->ops_per_s / (1 - w->idle_pct / 100);
}

/* The lag rows the samples cannot resolve, and why the last (the
 * tail's reason, the one a check on p99 or max meets), into w->lag_why. */
static void lag_unresolved_why(const struct eval_track *t, struct worker_view *w)
{
	char why[160], last[160] = "", names[40] = "";
	size_t k = 0;
	w->lag_why[0] = '\0';
	for (int i = 0; i < METRIC_NWORKER; i++) {
		const struct metric *m = &metric_worker[i];
		if (m->kind != METRIC_LAG || lag_why(&t, 1, m->arg, why, sizeof(why)) || k >= sizeof(names))
			continue;
		k += (size_t)snprintf(names + k, sizeof(names) - k, "%s%s", k ? ", " : "", m->name);
		memcpy(last, why, sizeof(last));
	}
	/* a reason too long for its field ends in "..." */
	if (k && snprintf(w->lag_why, sizeof(w->lag_why), "%s: %s", names, last) >= (int)sizeof(w->lag_why))
		memcpy(w->lag_why + sizeof(w->lag_why) - 4, "...", 4);
}

static void fill_worker(const struct series *a, const struct eval_track *t, const struct eval_track *ti,
			int64_t now_sec, int instrumented, struct worker_view *w)
{
	instrumented = instrumented && a->shm_last.valid;
	fill_rows(t, ti, instrumented, w);
	exact_rows(t, w);
	/* which bound the evaluator's headroom is: the model says, views print */
	model_headroom_bound(w->ops_per_s, w->idle_pct, w->quota_cpus, w->cpu_pct, w->pool_busy_pct, &w->headroom_bound);
	w->quota_shared = model_eval_quota_shared(&t, 1);
	w->accept_queue_held = model_eval_acceptq_held(&t, 1);
	fill_blockers(w, t);
	struct lag_hist lag;
	lag_collect(&t, 1, &lag);
	lag_octaves(&lag, MODEL_LAG_SHIFT, w->lag_octaves, MODEL_LAG_OCTAVES);
	w->lag_exact = lag.exact || a->exact_spans;
	lag_unresolved_why(t, w);
	memset(w->totals, 0, sizeof(w->totals));
	w->fiber_tag[0] = '\0';
	/* the slot's word or, under bpf, the kernel's */
	w->shortcut_samples = a->shortcut_samples;
	w->unchanged_samples = a->unchanged_samples;
	if (instrumented) {
		memcpy(w->totals, a->shm_last.v, sizeof(w->totals));
		snprintf(w->fiber_tag, sizeof(w->fiber_tag), "%s", a->fiber_tag);
	}
	view_history(a, now_sec, w);
	view_keys(a, w);
	model_stalls(a, w);
}

void model_window_range(const struct series *a, int64_t lo, int64_t hi, int instrumented, struct worker_view *w)
{
	struct eval_period p[SERIES_DETAIL_S];
	struct eval_track t;
	if (hi - lo + 1 > SERIES_DETAIL_S)
		lo = hi - SERIES_DETAIL_S + 1;
	eval_track_seconds(&t, p, a, lo, hi);
	fill_worker(a, &t, &t, hi + 1, instrumented, w);
}

void model_window(const struct series *a, uint64_t now_ns, double window_s, int instrumented, struct worker_view *w)
{
	int64_t now_sec = (int64_t)(now_ns / NS);
	struct eval_period p[SERIES_DETAIL_S];
	struct eval_track t;
	struct series_bucket folded;
	if (window_s > 0) {
		eval_track_seconds(&t, p, a, now_sec - series_window_span(window_s) + 1, now_sec);
		fill_worker(a, &t, &t, now_sec, instrumented, w);
		return;
	}
	/* the run folded into one period: its interval from its whole seconds
	 * still in the ring (the feed's kept seconds replace it: track_intervals) */
	struct eval_period ps[SERIES_DETAIL_S];
	struct eval_track ti;
	int64_t lo = a->first_sec > now_sec - SERIES_DETAIL_S + 2 ? a->first_sec : now_sec - SERIES_DETAIL_S + 2;
	eval_track_seconds(&ti, ps, a, lo, now_sec - 1);
	eval_track_run(&t, p, &folded, a);
	fill_worker(a, &t, &ti, now_sec, instrumented, w);
}
