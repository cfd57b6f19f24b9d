/*
 * track.c — the seconds kept of every worker, and estimates over them.
 */
#include "model/track.h"
#include "model/model_window.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ull

void tracks_init(struct tracks *ts) { memset(ts, 0, sizeof(*ts)); }

void tracks_done(struct tracks *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		free(ts->v[i].sec);
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}

static struct track *find_track(struct tracks *ts, pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->v[i].pid == pid && ts->v[i].tid == tid)
			return &ts->v[i];
	return NULL;
}

static struct track *add_track(struct tracks *ts, const struct snap_worker *w, int64_t first_sec)
{
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 8;
		struct track *v = realloc(ts->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		ts->v = v;
		ts->cap = cap;
	}
	struct track *tr = &ts->v[ts->n++];
	memset(tr, 0, sizeof(*tr));
	tr->pid = w->pid;
	tr->tid = w->tid;
	tr->first_sec = first_sec;
	return tr;
}

static int append_sec(struct track *tr, const struct snap_worker *w, int64_t sec)
{
	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? tr->cap * 2 : 64;
		struct track_sec *v = realloc(tr->sec, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		tr->sec = v;
		tr->cap = cap;
	}
	struct track_sec *r = &tr->sec[tr->n++];
	const struct series_bucket *b = &w->series.detail[sec % SERIES_DETAIL_S];
	if (b->sec == sec) {
		r->b = *b;
	} else {
		memset(&r->b, 0, sizeof(r->b));
		r->b.sec = -1;
	}
	return 0;
}

int tracks_update(struct tracks *ts, const struct snapshot *snap)
{
	int64_t now_sec = (int64_t)(snap->now_ns / NS);
	for (size_t i = 0; i < ts->n; i++)
		ts->v[i].present = 0;
	for (size_t i = 0; i < snap->n; i++) {
		const struct snap_worker *w = &snap->w[i];
		struct track *tr = find_track(ts, w->pid, w->tid);
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
		snprintf(tr->service, sizeof(tr->service), "%s", w->service);
		snprintf(tr->tag, sizeof(tr->tag), "%s", w->tag);
		tr->instrumented = w->instrumented;
		tr->gone |= w->gone;
		tr->no_access = w->no_access;
		for (int64_t sec = tr->first_sec + (int64_t)tr->n; sec < now_sec; sec++)
			if (append_sec(tr, w, sec) < 0)
				return -ENOMEM;
		tr->disagreements = w->series.self_disagreements;
		tr->exact = w->series.exact;
		tr->pooled = w->series.pooled;
		if (!tr->shm_first.valid)
			tr->shm_first = w->series.total.shm_first;
		if (!tr->sched_first.valid)
			tr->sched_first = w->series.total.sched_first;
		if (!tr->cg_first.valid)
			tr->cg_first = w->series.total.cg_first;
	}
	for (size_t i = 0; i < ts->n; i++)
		if (!ts->v[i].present)
			ts->v[i].gone = 1;   /* dropped by the sampler: it exited */
	ts->now_sec = now_sec;
	return 0;
}

const struct track_sec *track_at(const struct track *tr, int64_t sec)
{
	if (sec < tr->first_sec || sec >= tr->first_sec + (int64_t)tr->n)
		return NULL;
	const struct track_sec *r = &tr->sec[sec - tr->first_sec];
	return r->b.sec == sec ? r : NULL;
}

/* ---- estimates: the evaluator over the kept seconds ---- */

/* tr's seconds [lo, hi] as a track, its baseline the reading before them. */
static void track_of(const struct track *tr, int64_t lo, int64_t hi, struct eval_period *p, struct eval_track *t)
{
	memset(t, 0, sizeof(*t));
	t->p = p;
	t->n = (size_t)(hi - lo + 1);
	t->disagreements = tr->disagreements;
	t->exact = tr->exact;
	t->pooled = tr->pooled;
	for (int64_t sec = lo; sec <= hi; sec++) {
		const struct track_sec *r = track_at(tr, sec);
		eval_period_of(&p[sec - lo], r ? &r->b : NULL, sec);
	}
	const struct track_sec *base = track_at(tr, lo - 1);
	uint64_t lo_ns = lo > 0 ? (uint64_t)lo * NS : 0;
	if (base && base->b.shm.valid)
		t->shm_base = base->b.shm;
	else if (tr->shm_first.valid && tr->shm_first.t_ns >= lo_ns)
		t->shm_base = tr->shm_first;
	if (base && base->b.sched.valid)
		t->sched_base = base->b.sched;
	else if (tr->sched_first.valid && tr->sched_first.t_ns >= lo_ns)
		t->sched_base = tr->sched_first;
	if (base && base->b.cg.valid)
		t->cg_base = base->b.cg;
	else if (tr->cg_first.valid && tr->cg_first.t_ns >= lo_ns)
		t->cg_base = tr->cg_first;
}

int track_eval(const struct metric *m, const struct eval_filter *filter, const struct track *const *trs, size_t ntr,
	       int64_t lo, int64_t hi, unsigned flags, struct estimate *out)
{
	if (!m || !trs || !ntr || !out || hi < lo)
		return -EINVAL;
	size_t n = (size_t)(hi - lo + 1);
	struct eval_period *p = calloc(n * ntr, sizeof(*p));
	struct eval_track *ts = calloc(ntr, sizeof(*ts));
	const struct eval_track **tp = calloc(ntr, sizeof(*tp));
	struct estimate *ests = calloc(ntr, sizeof(*ests));
	int err = p && ts && tp && ests ? 0 : -ENOMEM;
	for (size_t w = 0; w < ntr && !err; w++) {
		track_of(trs[w], lo, hi, p + w * n, &ts[w]);
		tp[w] = &ts[w];
	}
	if (!err && !metric_is_fleet(m)) {
		err = model_eval(m, tp, ntr, filter, flags, out);
	} else if (!err) {
		for (size_t w = 0; w < ntr && !err; w++)
			err = model_eval(&metric_worker[m->of], &tp[w], 1, NULL, flags, &ests[w]);
		if (!err)
			model_eval_fleet(m, ests, ntr, out);
	}
	free(p);
	free(ts);
	free(tp);
	free(ests);
	return err;
}

int track_intervals(struct model *m, const struct tracks *ts, int64_t lo, int64_t hi)
{
	for (size_t i = 0; i < m->n; i++) {
		struct worker_view *w = &m->workers[i];
		const struct track *tr = NULL;
		for (size_t k = 0; k < ts->n && !tr; k++)
			if (ts->v[k].pid == w->pid && ts->v[k].tid == w->tid)
				tr = &ts->v[k];
		for (int r = 0; tr && r < METRIC_NWORKER; r++) {
			const struct metric *row = &metric_worker[r];
			struct estimate e = { .ok = 0 };
			/* the shares too: the figure shown is the one the interval is
			 * about and check judges (else a replay showed idle 43.8 over
			 * [40.4, 43.7], the share over partial seconds as well) */
			if (!model_row_is_interval(row) && (row->kind != METRIC_SHARE || hi < lo))
				continue;
			int err = hi >= lo ? track_eval(row, NULL, &tr, 1, lo, hi, EVAL_INTERVAL, &e) : 0;
			if (err < 0)
				return err;
			model_set_row(w, row, e.ok && isfinite(e.est) ? e.est : NAN);
		}
	}
	return 0;
}
