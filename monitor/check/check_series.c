/*
 * check_series.c — per-second inputs of every threshold metric, from the
 * seconds `loopstat check` kept of each worker, and their estimates.
 *
 * Each metric is a ratio of per-second sums, computed as the model
 * computes it over a window (model_window.c), so that over the same
 * seconds the check's estimate is the figure `list` shows:
 *   shares   the model splits the off-CPU samples by schedstat's runnable
 *            share R of the window: idle = (1 − R) · poll/off. Here p =
 *            poll/off is a proportion stream (batch means), R a time-ratio
 *            stream, and idle = 100 (1 − R) p exactly as the model; its
 *            variance is the delta method's (1−R)² var p + p² var R.
 *   cpu      Δrun_ns (Δwait_ns) over Δt between the seconds' last
 *            schedstat readings.
 *   rates    Δcounter over Δt between the seconds' last shm readings.
 *   levels   the mean of each second's last reading.
 *   maxima   runqueue_max per second, and the longest stall seen.
 * Seconds are chained on their last readings, and the reading before the
 * range is the baseline, so the sums telescope to the window's deltas.
 */
#include "check/check_series.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_classify.h"
#include "probe_shm.h"

#define NS 1000000000ull

void check_tracks_init(struct check_tracks *ts) { memset(ts, 0, sizeof(*ts)); }

void check_tracks_done(struct check_tracks *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		free(ts->v[i].sec);
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}

static struct check_track *find_track(struct check_tracks *ts, pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->v[i].pid == pid && ts->v[i].tid == tid)
			return &ts->v[i];
	return NULL;
}

static struct check_track *add_track(struct check_tracks *ts, const struct snap_worker *w, int64_t first_sec)
{
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 8;
		struct check_track *v = realloc(ts->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		ts->v = v;
		ts->cap = cap;
	}
	struct check_track *tr = &ts->v[ts->n++];
	memset(tr, 0, sizeof(*tr));
	tr->pid = w->pid;
	tr->tid = w->tid;
	tr->first_sec = first_sec;
	tr->cur_sec = -1;
	return tr;
}

static int append_sec(struct check_track *tr, const struct snap_worker *w, int64_t sec)
{
	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? tr->cap * 2 : 64;
		struct check_secrec *v = realloc(tr->sec, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		tr->sec = v;
		tr->cap = cap;
	}
	struct check_secrec *r = &tr->sec[tr->n++];
	const struct series_bucket *b = &w->series.detail[sec % SERIES_DETAIL_S];
	if (b->sec == sec) {
		r->b = *b;
	} else {
		memset(&r->b, 0, sizeof(r->b));
		r->b.sec = -1;
	}
	r->stall_ms = tr->cur_sec == sec ? tr->cur_stall_ms : 0;
	return 0;
}

int check_tracks_update(struct check_tracks *ts, const struct snapshot *snap)
{
	int64_t now_sec = (int64_t)(snap->now_ns / NS);
	for (size_t i = 0; i < ts->n; i++)
		ts->v[i].present = 0;
	for (size_t i = 0; i < snap->n; i++) {
		const struct snap_worker *w = &snap->w[i];
		struct check_track *tr = find_track(ts, w->pid, w->tid);
		if (!tr) {
			/* from its first second still in the copied window */
			int64_t first = w->series.first_sec >= 0 ? w->series.first_sec : now_sec;
			for (; first < now_sec; first++)
				if (w->series.detail[first % SERIES_DETAIL_S].sec == first)
					break;
			if (!(tr = add_track(ts, w, first)))
				return -ENOMEM;
		}
		tr->present = 1;
		snprintf(tr->name, sizeof(tr->name), "%s", w->name);
		snprintf(tr->tag, sizeof(tr->tag), "%s", w->tag);
		tr->instrumented = w->instrumented;
		tr->gone |= w->gone;
		tr->no_access = w->no_access;
		for (int64_t sec = tr->first_sec + (int64_t)tr->n; sec < now_sec; sec++)
			if (append_sec(tr, w, sec) < 0)
				return -ENOMEM;
		/* the stall in progress now belongs to the current second */
		double stall = w->gone ? 0 : (double)series_stall_ns(&w->series, snap->now_ns) / 1e6;
		if (tr->cur_sec != now_sec) {
			tr->cur_sec = now_sec;
			tr->cur_stall_ms = 0;
		}
		if (stall > tr->cur_stall_ms)
			tr->cur_stall_ms = stall;
	}
	for (size_t i = 0; i < ts->n; i++)
		if (!ts->v[i].present)
			ts->v[i].gone = 1;   /* dropped by the sampler: it exited */
	ts->now_sec = now_sec;
	return 0;
}

const struct check_secrec *check_track_at(const struct check_track *tr, int64_t sec)
{
	if (sec < tr->first_sec || sec >= tr->first_sec + (int64_t)tr->n)
		return NULL;
	const struct check_secrec *r = &tr->sec[sec - tr->first_sec];
	return r->b.sec == sec ? r : NULL;
}

/* ---- the metrics thresholds may name ---- */

/* Metrics with a per-second form: all but tallies and interval widths. */
static int has_form(const struct metric *m)
{
	return m->kind != METRIC_TALLY && m->kind != METRIC_INTERVAL;
}

const struct check_metric *check_series_metrics(size_t *n)
{
	static struct check_metric rows[METRIC_NWORKER];
	static char units[METRIC_NWORKER][CHECK_UNIT_LEN];
	static size_t nrows;
	if (!nrows) {
		for (size_t i = 0; i < METRIC_NWORKER; i++) {
			const struct metric *m = &metric_worker[i];
			if (!has_form(m))
				continue;
			char *u = units[nrows];
			const char *per = strstr(m->name, "_per_s");
			if (m->unit == METRIC_PCT) {
				snprintf(u, CHECK_UNIT_LEN, "%%");
			} else if (m->unit == METRIC_MS) {
				snprintf(u, CHECK_UNIT_LEN, "ms");
			} else if (m->unit == METRIC_PER_S && per) {
				/* "headroom_ops_per_s" counts ops: its unit is "ops/s" */
				const char *w = per;
				while (w > m->name && w[-1] != '_')
					w--;
				snprintf(u, CHECK_UNIT_LEN, "%.*s/s", (int)(per - w), w);
			} else {
				u[0] = '\0';
			}
			rows[nrows] = (struct check_metric){
				.name = m->name, .unit = u, .filters = i == METRIC_W_blocked_pct ? "syscall,fd" : NULL,
			};
			nrows++;
		}
	}
	*n = nrows;
	return rows;
}

int check_series_filter_ok(void *arg, const struct check_metric *m, const char *key, const char *value, char *why,
			   size_t whylen)
{
	(void)arg, (void)m;
	if (strcmp(key, "syscall") == 0) {
		if (probe_syscall_nr(value) >= 0)
			return 0;
		snprintf(why, whylen, "no syscall '%s' on this architecture", value);
		return -1;
	}
	if (strcmp(key, "fd") == 0) {
		char *end;
		long fd = strtol(value, &end, 10);
		if (*value >= '0' && *value <= '9' && !*end && fd <= 1 << 30)
			return 0;
		snprintf(why, whylen, "fd '%s' is not a descriptor number", value);
		return -1;
	}
	snprintf(why, whylen, "unknown filter '%s'", key);
	return -1;
}

/* ---- per-second streams ---- */

enum stream {
	S_CLASS,     /* samples of a class (arg) over the off-CPU samples, or all (basis_all) */
	S_BUSY,      /* runnable ns (run + wait) over elapsed ns */
	S_CPU,       /* run ns over elapsed ns */
	S_WAIT,      /* wait ns over elapsed ns */
	S_COUNTER,   /* counter arg's growth over elapsed seconds */
	S_POLLNS,    /* poll time over elapsed ns, a poll in progress included */
	S_LEVEL,     /* counter arg's reading, one per second */
	S_RUNQMAX,   /* the runqueue's largest reading in the second */
	S_STALL,     /* the longest stall seen in the second */
};

/* How the fleet combines workers' seconds. */
enum combine { C_POOL, C_SUM, C_MAX };

struct stream_spec {
	enum stream st;
	int  arg;
	int  basis_all;
	int  filtered;          /* blocked samples matching nr (>= 0) and fd (>= 0) only */
	int  unkeyed;           /* blocked samples beyond the second's key table */
	long nr;
	int  fd;
};

static double sched_part(enum stream st, const struct series_sched *a, const struct series_sched *b)
{
	double run = (double)(b->run_ns - a->run_ns), wait = (double)(b->wait_ns - a->wait_ns);
	return st == S_CPU ? run : st == S_WAIT ? wait : run + wait;
}

/* poll_time_ns including a blocking poll in progress, as the model counts it */
static uint64_t poll_ns_at(const struct series_reading *r)
{
	uint64_t since = r->v[PROBE_SHM_poll_since_ns], p = r->v[PROBE_SHM_poll_time_ns];
	return since && r->mono_ns > since ? p + (r->mono_ns - since) : p;
}

static uint32_t blocked_matching(const struct series_bucket *b, const struct stream_spec *sp)
{
	uint32_t n = 0;
	for (int k = 0; k < SERIES_BLOCK_KEYS && b->blocks[k].n; k++)
		if ((sp->nr < 0 || b->blocks[k].nr == sp->nr) && (sp->fd < 0 || b->blocks[k].fd == sp->fd))
			n += b->blocks[k].n;
	return n;
}

static void fill_track(const struct check_track *tr, int64_t lo, int64_t hi, const struct stream_spec *sp,
		       struct est_sec *out)
{
	const struct check_secrec *base = check_track_at(tr, lo - 1);
	struct series_sched ps = { 0 };
	struct series_reading pr = { 0 };
	if (base) {
		ps = base->b.sched;
		pr = base->b.shm;
	}
	for (int64_t sec = lo; sec <= hi; sec++) {
		struct est_sec *o = &out[sec - lo];
		*o = (struct est_sec){ 0, 0 };
		const struct check_secrec *r = check_track_at(tr, sec);
		if (!r)
			continue;
		const struct series_bucket *b = &r->b;
		uint64_t off = (uint64_t)b->n[SERIES_POLL] + b->n[SERIES_BLOCKED] + b->n[SERIES_OTHER];
		switch (sp->st) {
		case S_CLASS:
			o->num = sp->unkeyed ? b->blocks_overflow : sp->filtered ? blocked_matching(b, sp) : b->n[sp->arg];
			o->den = (double)(sp->basis_all ? off + b->n[SERIES_RUNNING] : off);
			break;
		case S_BUSY:
		case S_CPU:
		case S_WAIT:
			if (!b->sched.valid)
				break;
			if (ps.valid && b->sched.t_ns > ps.t_ns && b->sched.run_ns >= ps.run_ns &&
			    b->sched.wait_ns >= ps.wait_ns) {
				o->num = sched_part(sp->st, &ps, &b->sched);
				o->den = (double)(b->sched.t_ns - ps.t_ns);
			}
			ps = b->sched;
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
		case S_LEVEL:
			if (b->shm.valid)
				*o = (struct est_sec){ (double)b->shm.v[sp->arg], 1 };
			break;
		case S_RUNQMAX:
			if (b->shm.valid)
				*o = (struct est_sec){ (double)(b->runq_max > b->shm.v[PROBE_SHM_runqueue_len] ?
								 b->runq_max : b->shm.v[PROBE_SHM_runqueue_len]), 1 };
			break;
		case S_STALL:
			if (b->shm.valid)
				*o = (struct est_sec){ r->stall_ms, 1 };
			break;
		}
	}
}

/* The streams of several workers as one: pooled, summed (as rates) or the largest. */
static int fill(const struct check_track *const *trs, size_t ntr, int64_t lo, int64_t hi, const struct stream_spec *sp,
		enum combine how, struct est_sec *out)
{
	size_t m = (size_t)(hi - lo + 1);
	if (ntr == 1) {
		fill_track(trs[0], lo, hi, sp, out);
		return 0;
	}
	struct est_sec *tmp = malloc(m * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	memset(out, 0, m * sizeof(*out));
	for (size_t w = 0; w < ntr; w++) {
		fill_track(trs[w], lo, hi, sp, tmp);
		for (size_t i = 0; i < m; i++) {
			if (tmp[i].den <= 0)
				continue;
			if (how == C_POOL) {
				out[i].num += tmp[i].num;
				out[i].den += tmp[i].den;
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

static int stream_estimate(const struct check_track *const *trs, size_t ntr, int64_t lo, int64_t hi,
			   const struct stream_spec *sp, enum combine how, enum est_kind kind, double scale,
			   struct estimate *out)
{
	size_t m = hi >= lo ? (size_t)(hi - lo + 1) : 0;
	struct est_sec *v = malloc((m ? m : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	int err = m ? fill(trs, ntr, lo, hi, sp, how, v) : 0;
	if (err == 0)
		err = est_batch_means(v, m, kind, scale, out);
	free(v);
	return err;
}

/* ---- shares of wall time, split as the model splits them ---- */

static void clamp_interval(struct estimate *e, double lo, double hi)
{
	e->lo = fmax(lo, fmin(e->lo, hi));
	e->hi = fmin(hi, fmax(e->hi, lo));
}

/* 100 (1 − R) p, with the delta method's variance; p's Wilson floor kept. */
static void split_share(const struct estimate *p, const struct estimate *R, struct estimate *out)
{
	double f = 1 - fmin(fmax(R->est, 0), 1);
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
	/* as estimate defines it: samples × (binomial variance of the share ÷ its variance) */
	double s = out->est / 100;
	if (out->se > 0)
		out->n_eff = fmin(p->n, 1e4 * s * (1 - s) / (out->se * out->se));
	clamp_interval(out, 0, 100);
}

/* A share of wall time: cls's (or running's, cls < 0). */
static int share(const struct check_track *const *trs, size_t ntr, int64_t lo, int64_t hi, int cls,
		 const struct stream_spec *filter, struct estimate *out)
{
	struct stream_spec busy = { .st = S_BUSY };
	/* running: p only tells whether off-CPU samples were taken (any class will do) */
	struct stream_spec cs = filter ? *filter : (struct stream_spec){ .st = S_CLASS, .arg = cls < 0 ? SERIES_POLL : cls };
	struct estimate R, p;
	int err = stream_estimate(trs, ntr, lo, hi, &busy, C_POOL, EST_RATE, 1, &R);
	if (err == 0)
		err = stream_estimate(trs, ntr, lo, hi, &cs, C_POOL, EST_PROPORTION, 1, &p);
	if (err < 0)
		return err;
	if (R.ok && p.ok) {   /* schedstat known and off-CPU samples taken: the model's split */
		if (cls >= 0) {
			split_share(&p, &R, out);
		} else {
			*out = R;
			out->est = 100 * fmin(fmax(R.est, 0), 1);
			out->lo *= 100;
			out->hi *= 100;
			out->se *= 100;
			clamp_interval(out, 0, 100);
		}
		return 0;
	}
	/* no schedstat: every sample counts, as in the model */
	cs.basis_all = 1;
	if (cls < 0)
		cs.arg = SERIES_RUNNING;
	return stream_estimate(trs, ntr, lo, hi, &cs, C_POOL, EST_PROPORTION, 100, out);
}

static int blocked_share(const struct check_track *const *trs, size_t ntr, int64_t lo, int64_t hi,
			 const struct check_threshold *t, struct estimate *out)
{
	struct stream_spec f = { .st = S_CLASS, .arg = SERIES_BLOCKED, .nr = -1, .fd = -1 };
	for (int i = 0; i < t->nfilter; i++) {
		f.filtered = 1;
		if (strcmp(t->filter[i].key, "syscall") == 0)
			f.nr = probe_syscall_nr(t->filter[i].value);
		else if (strcmp(t->filter[i].key, "fd") == 0)
			f.fd = atoi(t->filter[i].value);
	}
	return share(trs, ntr, lo, hi, SERIES_BLOCKED, f.filtered ? &f : NULL, out);
}

/* ops/s ÷ (1 − idle): the delta method on both estimates; an idle
 * interval reaching 99% leaves the headroom unbounded above. */
static int headroom(const struct check_track *const *trs, size_t ntr, int64_t lo, int64_t hi,
		    struct estimate *out)
{
	struct stream_spec ops = { .st = S_COUNTER, .arg = PROBE_SHM_ops };
	struct estimate O, I;
	int err = stream_estimate(trs, ntr, lo, hi, &ops, C_SUM, EST_RATE, 1, &O);
	if (err == 0)
		err = share(trs, ntr, lo, hi, SERIES_POLL, NULL, &I);
	if (err < 0)
		return err;
	*out = O;
	if (!O.ok || !I.ok) {
		out->ok = 0;
		out->est = out->lo = out->hi = NAN;
		return 0;
	}
	double u = 1 - I.est / 100, ulo = 1 - I.hi / 100;   /* busy share, and its least */
	out->df = fmin(O.df, I.df);
	out->correlated = O.correlated || I.correlated;
	if (u <= 0.01) {
		out->est = out->hi = out->se = INFINITY;
		out->lo = I.lo < 99 && O.lo > 0 ? O.lo / (1 - I.lo / 100) : 0;
		return 0;
	}
	out->est = O.est / u;
	out->se = sqrt(pow(O.se / u, 2) + pow(O.est * I.se / 100 / (u * u), 2));
	double half = est_t975(out->df) * out->se;
	out->lo = fmax(0, out->est - half);
	out->hi = ulo <= 0.01 || !isfinite(half) ? INFINITY : out->est + half;
	return 0;
}

int check_series_estimate(const struct check_track *const *trs, size_t ntr, int64_t lo, int64_t hi,
			  const struct check_threshold *t, struct estimate *out)
{
	if (!trs || !ntr || !t || !t->metric || !out)
		return -EINVAL;
	const struct metric *m = metric_find(t->metric->name);
	if (!m)
		return -EINVAL;
	struct stream_spec sp = { 0 };
	enum combine how = m->unit == METRIC_PCT ? C_POOL : m->kind == METRIC_PEAK ? C_MAX : C_SUM;
	switch ((enum worker_metric)(m - metric_worker)) {
	case METRIC_W_idle_pct: return share(trs, ntr, lo, hi, SERIES_POLL, NULL, out);
	case METRIC_W_running_pct: return share(trs, ntr, lo, hi, -1, NULL, out);
	case METRIC_W_blocked_pct: return blocked_share(trs, ntr, lo, hi, t, out);
	case METRIC_W_other_pct: return share(trs, ntr, lo, hi, SERIES_OTHER, NULL, out);
	case METRIC_W_blocked_unkeyed_pct: {
		struct stream_spec f = { .st = S_CLASS, .arg = SERIES_BLOCKED, .unkeyed = 1, .nr = -1, .fd = -1 };
		return share(trs, ntr, lo, hi, SERIES_BLOCKED, &f, out);
	}
	case METRIC_W_headroom_ops_per_s: return headroom(trs, ntr, lo, hi, out);
	case METRIC_W_cpu_pct: sp.st = S_CPU; break;
	case METRIC_W_cpu_wait_pct: sp.st = S_WAIT; break;
	case METRIC_W_self_idle_pct: sp.st = S_POLLNS; break;
	case METRIC_W_ops_per_s: sp = (struct stream_spec){ S_COUNTER, PROBE_SHM_ops }; break;
	case METRIC_W_switches_per_s: sp = (struct stream_spec){ S_COUNTER, PROBE_SHM_switches }; break;
	case METRIC_W_polls_per_s: sp = (struct stream_spec){ S_COUNTER, PROBE_SHM_polls }; break;
	case METRIC_W_completions_per_s: sp = (struct stream_spec){ S_COUNTER, PROBE_SHM_completions }; break;
	case METRIC_W_runqueue_len: sp = (struct stream_spec){ S_LEVEL, PROBE_SHM_runqueue_len }; break;
	case METRIC_W_pending_ops: sp = (struct stream_spec){ S_LEVEL, PROBE_SHM_pending_ops }; break;
	case METRIC_W_fibers: sp = (struct stream_spec){ S_LEVEL, PROBE_SHM_fibers_live }; break;
	case METRIC_W_runqueue_max: sp.st = S_RUNQMAX; break;
	case METRIC_W_stall_ms: sp.st = S_STALL; break;
	default: return -EINVAL;   /* no per-second form (check_series_metrics never offers it) */
	}
	enum est_kind kind = m->kind == METRIC_PEAK ? EST_MAX : EST_RATE;
	double scale = m->unit == METRIC_PCT ? 100 : 1;
	int err = stream_estimate(trs, ntr, lo, hi, &sp, how, kind, scale, out);
	if (err == 0 && sp.st == S_POLLNS && out->ok) {   /* the model caps it at 100 too */
		out->est = fmin(out->est, 100);
		clamp_interval(out, 0, 100);
	}
	return err;
}
