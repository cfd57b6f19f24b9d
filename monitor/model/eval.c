/*
 * eval.c — the rules of the metric table, period by period, and their
 * estimates (eval.h says how each rule becomes per-period sums).
 */
#include "model/eval_int.h"
#include "model/lag.h"
#include "model/limit.h"
#include "model/model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "probe_shm.h"

/* ---- shares of wall time ---- */

static void clamp_interval(struct estimate *e, double lo, double hi)
{
	e->lo = fmax(lo, fmin(e->lo, hi));
	e->hi = fmin(hi, fmax(e->hi, lo));
}

/*
 * The one idle split, of every figure and the sparkline's seconds.
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
double eval_split(double runnable, double n_running, double n_off, double *running, double *scale)
{
	if (!isnan(runnable) && n_off > 0) {
		*running = fmin(fmax(runnable, 0), 1);
		*scale = 1 - *running;
		return n_off;
	}
	double all = n_running + n_off;
	*running = all > 0 ? n_running / all : NAN;
	*scale = all > 0 ? 1 : NAN;
	return all;
}

/* 100 (1 − R) p, with the delta method's variance; p's Wilson floor kept. */
static void split_share(const struct estimate *p, const struct estimate *R, struct estimate *out)
{
	double running, f;
	eval_split(R->est, 0, 1, &running, &f);   /* R is known here, and off-CPU samples were taken */
	*out = *p;
	out->est = 100 * f * p->est;
	double vp = f * f * p->se * p->se, vr = p->est * p->est * R->se * R->se;
	out->se = 100 * sqrt(vp + vr);
	out->df = fmin(p->df, R->df);
	out->correlated = p->correlated || R->correlated;
	if (!isfinite(out->se)) {
		out->lo = 0;
		out->hi = 100;
		return;
	}
	double half = est_t975(out->df) * out->se;
	out->lo = fmin(out->est - half, 100 * f * p->lo);
	out->hi = fmax(out->est + half, 100 * f * p->hi);
	/* as estimate.h defines it: samples × (binomial variance of the share ÷ its variance) */
	double s = out->est / 100;
	if (out->se > 0)
		out->n_eff = fmin(p->n, 1e4 * s * (1 - s) / (out->se * out->se));
	clamp_interval(out, 0, 100);
}

/* A share's two parts: schedstat's runnable share R, and the proportion p
 * of class arg among the off-CPU samples; without R (or without off-CPU
 * samples) p is over all samples, scaled to %, and *split is 0. */
static int share_parts(const struct eval_track *const *ts, size_t nt, int arg, const struct eval_filter *filter,
		       unsigned flags, struct estimate *R, struct estimate *p, int *split)
{
	struct stream_spec busy = { .st = S_BUSY };
	/* running: p only tells whether off-CPU samples were taken (any class will do) */
	struct stream_spec cs = { .st = S_CLASS, .arg = arg == SERIES_RUNNING ? SERIES_POLL : arg, .filter = filter };
	int err = stream_estimate(ts, nt, &busy, C_POOL, EST_RATE, 1, flags, R);
	if (err == 0)
		err = stream_estimate(ts, nt, &cs, C_POOL, EST_PROPORTION, 1, flags, p);
	if (err < 0)
		return err;
	*split = R->ok && p->ok;
	if (*split)
		return 0;
	cs.basis_all = 1;
	cs.arg = arg;
	return stream_estimate(ts, nt, &cs, C_POOL, EST_PROPORTION, 100, flags, p);
}

/* A share of wall time: class arg's (RUNNING: the runnable share itself). */
static int share(const struct eval_track *const *ts, size_t nt, int arg, const struct eval_filter *filter,
		 unsigned flags, struct estimate *out)
{
	struct estimate R, p;
	int split, err = share_parts(ts, nt, arg, filter, flags, &R, &p, &split);
	if (err < 0)
		return err;
	if (!split) {
		*out = p;
	} else if (arg != SERIES_RUNNING) {
		split_share(&p, &R, out);
	} else {
		double running, f;
		eval_split(R.est, 0, 1, &running, &f);
		*out = R;
		out->est = 100 * running;
		out->lo *= 100;
		out->hi *= 100;
		out->se *= 100;
		clamp_interval(out, 0, 100);
	}
	return 0;
}

/* A bound of a share's 95% interval, or its half-width: the evaluator's
 * own interval (whatever flags asked), the one check judges with; for
 * exact counts, the value (half-width 0). A sampled figure with no spread
 * over the periods (one second) has none: NaN. */
static int share_bound(const struct eval_track *const *ts, size_t nt, int arg, enum metric_kind kind,
		       struct estimate *out)
{
	int err = share(ts, nt, arg, NULL, EVAL_INTERVAL, out);
	if (err < 0 || !out->ok)
		return err;
	int exact = 1;
	for (size_t i = 0; i < nt; i++)
		exact &= ts[i]->exact;
	if (exact)   /* measured, not estimated: the measurement's own interval, the value itself */
		out->lo = out->hi = out->est;
	double v = kind == METRIC_LOWER ? out->lo : kind == METRIC_UPPER ? out->hi : (out->hi - out->lo) / 2;
	out->est = out->lo = out->hi = isfinite(out->lo) && isfinite(out->hi) ? v : NAN;
	return 0;
}

/* Row m's value over the tracks (no interval), NaN when unknown. */
static double point(int m, const struct eval_track *const *ts, size_t nt)
{
	struct estimate e;
	return model_eval(&metric_worker[m], ts, nt, NULL, 0, &e) == 0 && e.ok && isfinite(e.est) ? e.est : NAN;
}

/* The loop's bound from headroom_loop, tightened to the quota's or the
 * pool's where one is tighter (model_headroom_bound decides, for the JSON's
 * headroom_bound too): the interval scaled with it. */
static void headroom_tighten(const struct eval_track *const *ts, size_t nt, double ops, double idle,
			     struct estimate *out)
{
	enum model_bound which;
	double b = model_headroom_bound(ops, idle, point(METRIC_W_quota_cpus, ts, nt), point(METRIC_W_cpu_pct, ts, nt),
					point(METRIC_W_pool_busy_pct, ts, nt), &which);
	if (which != MODEL_BOUND_QUOTA && which != MODEL_BOUND_POOL)
		return;
	double f = isfinite(out->est) && out->est > 0 ? b / out->est : NAN;
	out->est = b;
	out->lo = isfinite(f) ? out->lo * f : b;
	out->hi = isfinite(f) && isfinite(out->hi) ? out->hi * f : b;
	out->se = isfinite(f) ? out->se * f : NAN;
}

/* rate ÷ (1 − idle): the delta method on both estimates; an idle interval
 * reaching 99% leaves the headroom unbounded above. */
static int headroom_loop(const struct eval_track *const *ts, size_t nt, int counter, unsigned flags,
			 struct estimate *out, double *ops_est, double *idle_est)
{
	struct stream_spec ops = { .st = S_COUNTER, .arg = counter };
	struct estimate O, I;
	int err = stream_estimate(ts, nt, &ops, C_SUM, EST_RATE, 1, flags, &O);
	if (err == 0)
		err = share(ts, nt, SERIES_POLL, NULL, flags, &I);
	if (err < 0)
		return err;
	*out = O;
	*ops_est = O.est;
	*idle_est = I.est;
	if (!O.ok || !I.ok) {
		out->ok = 0;
		out->est = out->lo = out->hi = NAN;
		return 0;
	}
	double u = 1 - I.est / 100, ulo = 1 - I.hi / 100;   /* busy share, and its least */
	out->df = fmin(O.df, I.df);
	out->correlated = O.correlated || I.correlated;
	double h = model_headroom(O.est, I.est);   /* the one loop bound (model.h): none at idle >= 99% */
	if (isnan(h)) {
		out->est = out->hi = out->se = INFINITY;
		out->lo = I.lo < 99 && O.lo > 0 ? model_headroom(O.lo, I.lo) : 0;
		return 0;
	}
	out->est = h;
	if (!(flags & EVAL_INTERVAL)) {
		out->lo = out->hi = out->est;
		return 0;
	}
	out->se = sqrt(pow(O.se / u, 2) + pow(O.est * I.se / 100 / (u * u), 2));
	double half = est_t975(out->df) * out->se;
	out->lo = fmax(0, out->est - half);
	out->hi = ulo <= 0.01 || !isfinite(half) ? INFINITY : out->est + half;
	return 0;
}

/* The sustainable rate: the tightest of the loop's, the quota's and the pool's bounds. */
static int headroom(const struct eval_track *const *ts, size_t nt, int counter, unsigned flags,
		    struct estimate *out)
{
	double ops = NAN, idle = NAN;
	int err = headroom_loop(ts, nt, counter, flags, out, &ops, &idle);
	if (err == 0 && out->ok)
		headroom_tighten(ts, nt, ops, idle, out);
	return err;
}

/* Bucket b's reading of a LEVEL's arg into *v: 1 when b has that reading
 * (its value may still be NaN: unknown, as a group without a quota). */
static int level_value(const struct series_bucket *b, int arg, double *v)
{
	if (!b)
		return 0;
	switch (arg) {
	case METRIC_ARG_QUOTA:
		*v = b->cg.quota_cpus;
		return b->cg.valid;
	case METRIC_ARG_ACCEPTQ:
		*v = (double)b->listen.queue;
		return b->listen.valid;
	case METRIC_ARG_BACKLOG:
		*v = b->listen.limit ? (double)b->listen.limit : NAN;   /* 0: not shown (another namespace) */
		return b->listen.valid;
	case METRIC_ARG_POOL_THREADS:
		*v = (double)b->pool.threads;
		return b->pool.valid;
	default:
		*v = (double)b->shm.v[arg];
		return b->shm.valid;
	}
}

/* Whether worker w's last quota reading is of a cgroup an earlier worker
 * of ts already gave (workers sharing a group share its quota: once). */
static int quota_counted(const struct eval_track *const *ts, size_t w, uint32_t group)
{
	for (size_t k = 0; k < w; k++)
		for (size_t i = ts[k]->n; i-- > 0;)
			if (ts[k]->p[i].b && ts[k]->p[i].b->cg.valid) {
				if (ts[k]->p[i].b->cg.group == group)
					return 1;
				break;
			}
	return 0;
}

/* The last reading of arg in the range, summed over the workers (a
 * cgroup's quota once however many of them it holds): an observed fact,
 * no interval. */
static void level(const struct eval_track *const *ts, size_t nt, int arg, struct estimate *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = EST_MAX;
	out->df = INFINITY;
	double sum = 0;
	for (size_t w = 0; w < nt; w++)
		for (size_t i = ts[w]->n; i-- > 0;) {
			double v;
			if (level_value(ts[w]->p[i].b, arg, &v)) {
				if (isnan(v))
					break;
				if (arg == METRIC_ARG_QUOTA && quota_counted(ts, w, ts[w]->p[i].b->cg.group))
					break;
				sum += v;
				out->ok = 1;
				out->n++;
				break;
			}
		}
	out->est = out->lo = out->hi = out->ok ? sum : NAN;
	out->n_eff = out->n;
}

/* A run total the track carries (a tally that is no sum over periods). */
static void run_total(const struct eval_track *const *ts, size_t nt, struct estimate *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = EST_MAX;
	out->ok = 1;
	out->df = INFINITY;
	for (size_t w = 0; w < nt; w++)
		out->est += (double)ts[w]->disagreements;
	out->lo = out->hi = out->est;
	out->n = out->n_eff = (double)nt;
}

/* The verdict over the periods: each rule's figure evaluated there (values
 * only), then the rules; a 0/1 figure for the row's kind. A worker whose
 * process only shares its group's quota is not held back by it (limit.h). */
static int limit(const struct eval_track *const *ts, size_t nt, int kind, struct estimate *out)
{
	double fig[METRIC_NLIMITS] = { 0 };
	struct estimate e;
	int err = 0;
#define LIMIT_X_EVAL(k, metric, op, threshold, reason)                                      \
	if (err == 0) {                                                                     \
		err = model_eval(&metric_worker[METRIC_W_##metric], ts, nt, NULL, 0, &e);    \
		fig[METRIC_LIMIT_##k] = e.ok && isfinite(e.est) ? e.est : NAN;              \
	}
	LIMIT_RULES(LIMIT_X_EVAL)
#undef LIMIT_X_EVAL
	if (err < 0)
		return err;
	if (model_eval_quota_shared(ts, nt))
		model_limit_shared_quota(fig);
	model_limit_backlog_held(fig, model_eval_acceptq_held(ts, nt));
	int v = model_limit_verdict(fig, NULL, 0);
	memset(out, 0, sizeof(*out));
	out->kind = EST_MAX;
	out->df = INFINITY;
	out->ok = v >= 0;
	out->est = out->lo = out->hi = v < 0 ? NAN : v == kind;
	out->n = out->n_eff = (double)nt;
	return 0;
}

int model_eval_exact_ends(const struct eval_track *t, const struct series_exact **first,
			  const struct series_exact **last)
{
	*first = t->exact_base.valid ? &t->exact_base : NULL;
	*last = NULL;
	for (size_t i = 0; i < t->n; i++) {
		const struct series_bucket *b = t->p[i].b;
		if (b && b->exact.valid) {
			if (!*first)
				*first = &b->exact;
			*last = &b->exact;
		}
	}
	return *first && *last && (*last)->t_ns >= (*first)->t_ns + NS / 2 ? 0 : -ENOENT;
}

/* A clock of an exact reading: the field at offset field, or with f the
 * off-CPU time in f's syscall (0 when it has no place in e). */
static uint64_t exact_clock(const struct series_exact *e, size_t field, const struct eval_filter *f)
{
	if (!f)
		return *(const uint64_t *)((const char *)e + field);
	for (int j = 0; j < SERIES_EXACT_OFF; j++)
		if (e->off_nr[j] >= 0 && e->off_nr[j] == f->nr)
			return e->off_ns[j];
	return 0;
}

/*
 * A share of time the kernel counted (the bpf source, series_add_exact):
 * the clock's growth between the first and the last exact reading of
 * each track, over the time between them, pooled over the tracks. It is
 * measured, not estimated, so its interval is the measurement's own: zero
 * wide. 0 when every track has two readings half a second apart at least,
 * else -ENOENT (the samples' estimate stands).
 */
static int exact_share(const struct eval_track *const *ts, size_t nt, size_t field, const struct eval_filter *f,
		       struct estimate *out)
{
	double num = 0, den = 0;
	for (size_t w = 0; w < nt; w++) {
		const struct series_exact *first, *last;
		if (model_eval_exact_ends(ts[w], &first, &last) < 0)
			return -ENOENT;
		uint64_t a = exact_clock(first, field, f), z = exact_clock(last, field, f);
		num += z >= a ? (double)(z - a) : 0;
		den += (double)(last->t_ns - first->t_ns);
	}
	/* n: the whole seconds measured, as every output prints a count */
	double secs = round(den / NS);
	*out = (struct estimate){ .kind = EST_PROPORTION, .ok = 1, .df = INFINITY, .n = secs, .n_eff = secs };
	out->est = out->lo = out->hi = fmin(100.0, 100.0 * num / den);
	return 0;
}

int model_eval(const struct metric *m, const struct eval_track *const *ts, size_t nt,
	       const struct eval_filter *filter, unsigned flags, struct estimate *out)
{
	if (!m || metric_is_fleet(m) || !ts || !nt || !out)
		return -EINVAL;
	for (size_t w = 1; w < nt; w++)
		if (ts[w]->n != ts[0]->n)
			return -EINVAL;
	struct stream_spec sp = { .arg = m->arg };
	enum combine how = C_SUM;
	enum est_kind kind = EST_RATE;
	double scale = 1;
	int err;
	/* the kernel's exact counts where a track has them: idle and its
	 * interval (zero wide, its bounds the value), cpu wait */
	if ((m->kind == METRIC_SHARE || m->kind == METRIC_INTERVAL || m->kind == METRIC_LOWER ||
	     m->kind == METRIC_UPPER) && m->arg == SERIES_POLL &&
	    exact_share(ts, nt, offsetof(struct series_exact, poll_ns), NULL, out) == 0) {
		if (m->kind == METRIC_INTERVAL)
			out->est = out->lo = out->hi = 0;
		return 0;
	}
	if (m->kind == METRIC_RATIO && m->arg == METRIC_ARG_WAIT &&
	    exact_share(ts, nt, offsetof(struct series_exact, rq_ns), NULL, out) == 0)
		return 0;
	/* blocked: off a CPU in syscalls other than the loop's poll, in all
	 * or in the filter's syscall */
	if (m->kind == METRIC_SHARE && m->arg == SERIES_BLOCKED &&
	    exact_share(ts, nt, offsetof(struct series_exact, blocked_ns), filter, out) == 0)
		return 0;
	switch (m->kind) {
	case METRIC_SHARE:
		return share(ts, nt, m->arg, m->arg == SERIES_BLOCKED ? filter : NULL, flags, out);
	case METRIC_HEADROOM:
		return headroom(ts, nt, m->arg, flags, out);
	case METRIC_LEVEL:
		level(ts, nt, m->arg, out);
		return 0;
	case METRIC_LIMIT:
		return limit(ts, nt, m->arg, out);
	case METRIC_LAG:
		lag_eval(ts, nt, m->arg, out);
		return 0;
	case METRIC_INTERVAL:
	case METRIC_LOWER:
	case METRIC_UPPER:
		return share_bound(ts, nt, m->arg, m->kind, out);
	case METRIC_TALLY:
		if (m->arg != METRIC_ARG_SAMPLES && m->arg != METRIC_ARG_STALLS) {
			run_total(ts, nt, out);
			return 0;
		}
		sp.st = m->arg == METRIC_ARG_STALLS ? S_STALLS : S_SAMPLES;
		kind = EST_RATE;
		break;
	case METRIC_RATIO:
		sp.st = m->arg == METRIC_ARG_POLL_NS ? S_POLLNS : m->arg == METRIC_ARG_THROTTLED ? S_THROTTLE : S_SCHED;
		how = C_POOL;
		scale = 100;
		break;
	case METRIC_RATE:
		sp.st = S_COUNTER;
		break;
	case METRIC_POOLED:
		sp.st = S_POOL;
		how = C_POOL;
		kind = EST_PROPORTION;
		scale = 100;
		break;
	case METRIC_PEAK:
		sp.st = m->arg == METRIC_ARG_STALL ? S_STALL : m->arg == METRIC_ARG_ACCEPTQ ? S_ACCEPTQ : S_RUNQMAX;
		how = C_MAX;
		kind = EST_MAX;
		break;
	}
	err = stream_estimate(ts, nt, &sp, how, kind, scale, flags, out);
	if (err == 0 && (sp.st == S_SAMPLES || sp.st == S_STALLS) && out->ok)
		out->est = out->lo = out->hi = out->est * out->n;   /* a count, not a mean per period */
	if (err == 0 && sp.st == S_POLLNS && out->ok) {   /* a poll in progress can outrun the readings */
		out->est = fmin(out->est, 100);
		clamp_interval(out, 0, 100);
	}
	return err;
}

void model_eval_fleet(const struct metric *m, const struct estimate *ests, size_t n, struct estimate *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = EST_MAX;
	out->df = INFINITY;
	double var = 0;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct estimate *e = &ests[i];
		if (m->reduce == METRIC_R_COUNT) {
			k++;
			continue;
		}
		if (!e->ok || !isfinite(e->est))
			continue;
		if (k == 0 || m->reduce != METRIC_R_MIN) {
			out->est = k ? out->est + e->est : e->est;
			out->lo = k ? out->lo + e->lo : e->lo;
			out->hi = k ? out->hi + e->hi : e->hi;
		} else if (e->est < out->est || e->lo < out->lo || e->hi < out->hi) {
			out->est = fmin(out->est, e->est);
			out->lo = fmin(out->lo, e->lo);
			out->hi = fmin(out->hi, e->hi);
		}
		var += e->se * e->se;
		out->df = fmin(out->df, e->df);
		out->correlated |= e->correlated;
		k++;
	}
	out->ok = k > 0 || m->reduce == METRIC_R_COUNT;
	out->n = out->n_eff = (double)k;
	if (m->reduce == METRIC_R_COUNT) {
		out->est = out->lo = out->hi = (double)k;
		return;
	}
	if (!k) {
		out->est = out->lo = out->hi = out->se = NAN;
		return;
	}
	out->se = m->reduce == METRIC_R_MIN ? NAN : sqrt(var);
	if (m->reduce == METRIC_R_MEAN) {
		out->est /= (double)k;
		out->lo /= (double)k;
		out->hi /= (double)k;
		out->se /= (double)k;
	}
}
