/*
 * eval_stream.c — a rule's per-period sums (eval.h: its streams), filled
 * from each worker's periods and combined over workers, and the periods
 * themselves: a track's seconds, or its run folded into one.
 */
#include "model/eval_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "probe_shm.h"

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

int stream_estimate(const struct eval_track *const *ts, size_t nt, const struct stream_spec *sp, enum combine how,
		    enum est_kind kind, double scale, unsigned flags, struct estimate *out)
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
				   a->total.lag_sum_us, a->total.lag_max_ns, a->total.n2, a->samples };
	*t = (struct eval_track){ .p = p, .n = 1, .shm_base = a->total.shm_first, .sched_base = a->total.sched_first,
				  .cg_base = a->total.cg_first, .exact_base = a->total.exact_first,
				  .disagreements = a->self_disagreements, .exact = a->exact,
				  .pooled = a->pooled };
}
