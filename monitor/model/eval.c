/*
 * eval.c — the rules of the metric table, period by period, and their
 * estimates (eval.h says how each rule becomes per-period sums).
 */
#include "model/eval.h"
#include "model/lag.h"
#include "model/limit.h"
#include "model/model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "probe_shm.h"

#define NS 1000000000ull
/* Rates and ratios over less than this much time are noise. */
#define RATE_MIN_NS (50ull * 1000000)

/* ---- per-period streams ---- */

enum stream {
	S_CLASS,     /* samples of a class over the off-CPU samples, or over all (basis_all) */
	S_BUSY,      /* runnable ns (run + wait) over elapsed ns */
	S_SCHED,     /* run (arg RUN) or wait (arg WAIT) ns over elapsed ns */
	S_THROTTLE,  /* the cgroup's throttled ns over elapsed ns */
	S_COUNTER,   /* counter arg's growth over elapsed seconds */
	S_POLLNS,    /* poll time over elapsed ns, a poll in progress included */
	S_RUNQMAX,   /* the runqueue's largest reading in the period */
	S_STALL,     /* the longest stall seen in the period, ms */
	S_ACCEPTQ,   /* the longest accept queue read in the period */
	S_POOL,      /* the busiest pool's busy samples over its samples */
	S_SAMPLES,   /* samples taken (a tally) */
	S_STALLS,    /* stalls captured (a tally) */
};

/* How several workers' periods combine. */
enum combine { C_POOL, C_SUM, C_MAX };

struct stream_spec {
	enum stream st;
	int  arg;
	int  basis_all;
	const struct eval_filter *filter;   /* blocked samples matching it only */
};

/* poll_time_ns as of the reading, including the part of a blocking poll in
 * progress: poll_time_ns only grows when the poll returns, so a worker
 * blocked across a whole range would read 0 % idle, then over 100 %. */
static uint64_t poll_ns_at(const struct series_reading *r)
{
	uint64_t since = r->v[PROBE_SHM_poll_since_ns], p = r->v[PROBE_SHM_poll_time_ns];
	return since && r->mono_ns > since ? p + (r->mono_ns - since) : p;
}

static uint32_t blocked_matching(const struct eval_period *p, const struct eval_filter *f)
{
	uint32_t n = 0;
	for (int k = 0; k < p->nblocks && p->blocks[k].n; k++)
		if ((f->nr < 0 || p->blocks[k].nr == f->nr) && (f->fd < 0 || p->blocks[k].fd == f->fd))
			n += p->blocks[k].n;
	return n;
}

static uint32_t class_count(const struct eval_period *p, const struct stream_spec *sp)
{
	if (sp->filter)
		return blocked_matching(p, sp->filter);
	if (sp->arg == METRIC_ARG_UNKEYED)
		return p->blocks_overflow;
	return p->b->n[sp->arg];
}

/* The squared weights of class c's samples in the period (est_sec.w2). */
static double n2_of(const struct eval_period *p, int c)
{
	return p->n2_total ? (double)p->n2_total[c] : (double)p->b->n2[c];
}

static void fill_track(const struct eval_track *t, const struct stream_spec *sp, struct est_sec *out)
{
	struct series_sched ps = t->sched_base;
	struct series_reading pr = t->shm_base;
	struct series_cgroup pc = t->cg_base;
	for (size_t i = 0; i < t->n; i++) {
		struct est_sec *o = &out[i];
		*o = (struct est_sec){ 0, 0, 0 };
		const struct eval_period *p = &t->p[i];
		const struct series_bucket *b = p->b;
		if (!b)
			continue;
		uint64_t off = (uint64_t)b->n[SERIES_POLL] + b->n[SERIES_BLOCKED] + b->n[SERIES_OTHER];
		switch (sp->st) {
		case S_CLASS:
			o->num = class_count(p, sp);
			o->den = (double)(sp->basis_all ? off + b->n[SERIES_RUNNING] : off);
			o->w2 = n2_of(p, SERIES_POLL) + n2_of(p, SERIES_BLOCKED) + n2_of(p, SERIES_OTHER) +
				(sp->basis_all ? n2_of(p, SERIES_RUNNING) : 0);
			break;
		case S_SAMPLES:
			*o = (struct est_sec){ (double)(p->n2_total ? p->taken_total : b->taken), 1, 0 };
			break;
		case S_STALLS:
			*o = (struct est_sec){ (double)b->stalls, 1 };
			break;
		case S_BUSY:
		case S_SCHED:
			if (!b->sched.valid)
				break;
			if (ps.valid && b->sched.t_ns > ps.t_ns && b->sched.run_ns >= ps.run_ns &&
			    b->sched.wait_ns >= ps.wait_ns) {
				double run = (double)(b->sched.run_ns - ps.run_ns), wait = (double)(b->sched.wait_ns - ps.wait_ns);
				o->num = sp->st == S_BUSY ? run + wait : sp->arg == METRIC_ARG_RUN ? run : wait;
				o->den = (double)(b->sched.t_ns - ps.t_ns);
			}
			ps = b->sched;
			break;
		case S_THROTTLE:
			if (!b->cg.valid)
				break;
			if (pc.valid && pc.group == b->cg.group && b->cg.t_ns > pc.t_ns &&
			    b->cg.throttled_ns >= pc.throttled_ns) {
				o->num = (double)(b->cg.throttled_ns - pc.throttled_ns);
				o->den = (double)(b->cg.t_ns - pc.t_ns);
			}
			pc = b->cg;
			break;
		case S_COUNTER:
		case S_POLLNS:
			if (!b->shm.valid)
				break;
			if (pr.valid && b->shm.t_ns > pr.t_ns) {
				uint64_t v0 = sp->st == S_POLLNS ? poll_ns_at(&pr) : pr.v[sp->arg];
				uint64_t v1 = sp->st == S_POLLNS ? poll_ns_at(&b->shm) : b->shm.v[sp->arg];
				double dt = (double)(b->shm.t_ns - pr.t_ns);
				if (v1 >= v0) {
					o->num = (double)(v1 - v0);
					o->den = sp->st == S_POLLNS ? dt : dt / 1e9;
				}
			}
			pr = b->shm;
			break;
		case S_RUNQMAX:
			if (b->shm.valid)
				*o = (struct est_sec){ (double)(b->runq_max > b->shm.v[PROBE_SHM_runqueue_len] ?
								b->runq_max : b->shm.v[PROBE_SHM_runqueue_len]), 1 };
			break;
		case S_STALL:
			if (b->shm.valid)
				*o = (struct est_sec){ (double)b->stall_max_ns / 1e6, 1 };
			break;
		case S_ACCEPTQ:
			if (b->listen.valid)
				*o = (struct est_sec){ (double)b->listen.queue_max, 1 };
			break;
		case S_POOL:
			if (b->pool.valid)
				*o = (struct est_sec){ (double)b->pool.busy, (double)b->pool.n };
			break;
		}
	}
}

/* The streams of several workers as one: pooled, summed (as rates) or the largest. */
static int fill(const struct eval_track *const *ts, size_t nt, const struct stream_spec *sp, enum combine how,
		struct est_sec *out)
{
	size_t m = ts[0]->n;
	if (nt == 1) {
		fill_track(ts[0], sp, out);
		return 0;
	}
	struct est_sec *tmp = malloc(m * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	memset(out, 0, m * sizeof(*out));
	for (size_t w = 0; w < nt; w++) {
		fill_track(ts[w], sp, tmp);
		for (size_t i = 0; i < m; i++) {
			if (tmp[i].den <= 0)
				continue;
			if (how == C_POOL) {
				out[i].num += tmp[i].num;
				out[i].den += tmp[i].den;
				out[i].w2 += tmp[i].w2 > 0 ? tmp[i].w2 : tmp[i].den;
			} else if (how == C_SUM) {
				out[i].num += tmp[i].num / tmp[i].den;
				out[i].den = 1;
			} else {
				out[i].num = out[i].den > 0 ? fmax(out[i].num, tmp[i].num) : tmp[i].num;
				out[i].den = 1;
			}
		}
	}
	free(tmp);
	return 0;
}

/* Time-based streams need RATE_MIN_NS of readings (their den is ns, or s). */
static int too_short(const struct stream_spec *sp, const struct est_sec *v, size_t m, int summed)
{
	if (summed || (sp->st != S_BUSY && sp->st != S_SCHED && sp->st != S_THROTTLE && sp->st != S_COUNTER &&
		       sp->st != S_POLLNS))
		return 0;
	double den = 0;
	for (size_t i = 0; i < m; i++)
		den += v[i].den > 0 ? v[i].den : 0;
	return den * (sp->st == S_COUNTER ? 1e9 : 1) < (double)RATE_MIN_NS;
}

static int stream_estimate(const struct eval_track *const *ts, size_t nt, const struct stream_spec *sp,
			   enum combine how, enum est_kind kind, double scale, unsigned flags, struct estimate *out)
{
	size_t m = ts[0]->n;
	struct est_sec *v = malloc((m ? m : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	int err = m ? fill(ts, nt, sp, how, v) : 0;
	if (err == 0 && too_short(sp, v, m, nt > 1 && how == C_SUM))
		m = 0;   /* as no data */
	if (err == 0)
		err = flags & EVAL_INTERVAL ? est_batch_means(v, m, kind, scale, out) : est_point(v, m, kind, scale, out);
	free(v);
	return err;
}

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

void eval_period_of(struct eval_period *p, const struct series_bucket *b, int64_t sec)
{
	if (!b || b->sec != sec) {
		*p = (struct eval_period){ 0 };
		return;
	}
	*p = (struct eval_period){ b, b->blocks, SERIES_BLOCK_KEYS, b->blocks_overflow };
}

void eval_track_seconds(struct eval_track *t, struct eval_period *p, const struct series *a, int64_t lo, int64_t hi)
{
	memset(t, 0, sizeof(*t));
	t->p = p;
	t->n = hi >= lo ? (size_t)(hi - lo + 1) : 0;
	t->disagreements = a->self_disagreements;
	t->exact = a->exact;
	t->pooled = a->pooled;
	for (int64_t sec = lo; sec <= hi; sec++)
		eval_period_of(&p[sec - lo], sec >= 0 ? &a->detail[sec % SERIES_DETAIL_S] : NULL, sec);
	/* Baseline: the last readings before the range; else, for a worker
	 * first read inside it, its very first readings; else (a gap) none,
	 * and the chain starts at the first period's readings. */
	const struct series_bucket *before = lo > 0 ? &a->detail[(lo - 1) % SERIES_DETAIL_S] : NULL;
	int have_before = before && before->sec == lo - 1;
	uint64_t lo_ns = lo > 0 ? (uint64_t)lo * NS : 0;
	if (have_before && before->shm.valid)
		t->shm_base = before->shm;
	else if (a->total.shm_first.valid && a->total.shm_first.t_ns >= lo_ns)
		t->shm_base = a->total.shm_first;
	if (have_before && before->sched.valid)
		t->sched_base = before->sched;
	else if (a->total.sched_first.valid && a->total.sched_first.t_ns >= lo_ns)
		t->sched_base = a->total.sched_first;
	if (have_before && before->cg.valid)
		t->cg_base = before->cg;
	else if (a->total.cg_first.valid && a->total.cg_first.t_ns >= lo_ns)
		t->cg_base = a->total.cg_first;
	if (have_before && before->exact.valid)
		t->exact_base = before->exact;
	else if (a->total.exact_first.valid && a->total.exact_first.t_ns >= lo_ns)
		t->exact_base = a->total.exact_first;
}

void eval_track_run(struct eval_track *t, struct eval_period *p, struct series_bucket *b, const struct series *a)
{
	memset(b, 0, sizeof(*b));
	memcpy(b->n, a->total.n, sizeof(b->n));
	b->sec = a->first_sec;
	b->shm = a->shm_last;
	b->sched = a->sched_last;
	b->cg = a->cg_last;
	b->listen = a->listen_last;
	b->listen.queue_max = a->total.accept_max;
	b->pool = a->total.pool;
	b->runq_max = a->total.runq_max;
	b->stall_max_ns = a->total.stall_max_ns;
	b->stalls = a->total.stalls;
	b->exact = a->exact_last;
	*p = (struct eval_period){ b, a->total.blocks, SERIES_BLOCK_KEYS * 2, a->total.blocks_overflow, a->total.lag_n,
				   a->total.lag_max_ns, a->total.n2, a->samples };
	*t = (struct eval_track){ .p = p, .n = 1, .shm_base = a->total.shm_first, .sched_base = a->total.sched_first,
				  .cg_base = a->total.cg_first, .exact_base = a->total.exact_first,
				  .disagreements = a->self_disagreements, .exact = a->exact,
				  .pooled = a->pooled };
}
