/*
 * diff_compare.c — pairing two runs' units and judging each metric's
 * change: the interval is check_runs_diff's (Welch–Satterthwaite on the
 * runs' own intervals plus their run-to-run spread, as `check --baseline`
 * judges), the direction the metric table's.
 */
#include "diff/diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *diff_verdict_str(enum diff_verdict v)
{
	static const char *const s[] = { "same", "worse", "better", "unknown" };
	return (unsigned)v < 4 ? s[v] : "?";
}

enum diff_verdict diff_judge(const struct metric *m, const struct estimate *d)
{
	if (!d->ok || !isfinite(d->lo) || !isfinite(d->hi))
		return DIFF_UNKNOWN;
	if (d->kind == EST_MAX && d->est != 0)
		return DIFF_UNKNOWN;   /* a maximum is one observation a side: no interval */
	int up = d->lo > 0, down = d->hi < 0;
	if (!up && !down)
		return DIFF_SAME;
	/* sort_desc: a larger value means a busier worker, which is worse */
	return up == !!m->sort_desc ? DIFF_WORSE : DIFF_BETTER;
}

/* Does a field known on both sides differ? "" on either side matches. */
static int field_ok(const char *a, const char *b)
{
	return !a[0] || !b[0] || strcmp(a, b) == 0;
}

static int pairs(const struct diff_unit *a, const struct diff_unit *b)
{
	return a->is_service == b->is_service && field_ok(a->service, b->service) && strcmp(a->name, b->name) == 0 &&
	       field_ok(a->runtime, b->runtime) && field_ok(a->role, b->role) && strcmp(a->tag, b->tag) == 0;
}

/* The pair's rows: every metric measured on either side. */
static void judge_pair(struct diff_pair *p, double run_sd)
{
	p->nrows = 0;
	for (size_t i = 0; i < METRIC_NWORKER; i++) {
		const struct estimate *ea = &p->a->est[i], *eb = &p->b->est[i];
		if (!ea->ok && !eb->ok)
			continue;
		struct diff_row *r = &p->rows[p->nrows++];
		r->m = &metric_worker[i];
		check_runs_diff(r->m, eb, ea, 1, run_sd, &r->change);
		if (ea->kind == EST_MAX || eb->kind == EST_MAX)
			r->change.kind = EST_MAX;
		r->verdict = diff_judge(r->m, &r->change);
	}
}

/* --fail-on: the condition holding (check's "pass" of it) is a regression. */
static enum check_verdict fail_on(const struct diff_pair *p, const struct check_threshold *t)
{
	const struct metric *m = metric_find(t->metric->name);
	for (size_t i = 0; m && i < p->nrows; i++)
		if (p->rows[i].m == m)   /* as check judges: a maximum as the fact it is */
			return check_decide(t->op, &p->rows[i].change, t->value, 0);
	return CHECK_NOTHING;
}

int diff_compare(const struct diff_run *a, const struct diff_run *b, const struct check_set *set, double run_sd,
		 struct diff_result *out)
{
	memset(out, 0, sizeof(*out));
	out->run_sd = run_sd;
	char *used = calloc(b->n + 1, 1);
	out->p = calloc(a->n + b->n + 1, sizeof(*out->p));
	out->hits = calloc(a->n * (set ? set->n : 0) + 1, sizeof(*out->hits));
	if (!used || !out->p || !out->hits) {
		free(used);
		diff_result_done(out);
		return -ENOMEM;
	}
	/* the k-th unit of a key in A with the k-th in B, each in its run's order */
	for (size_t i = 0; i < a->n; i++) {
		struct diff_pair *p = &out->p[out->n++];
		p->a = &a->u[i];
		for (size_t j = 0; j < b->n && !p->b; j++)
			if (!used[j] && pairs(&a->u[i], &b->u[j])) {
				used[j] = 1;
				p->b = &b->u[j];
			}
		if (!p->b)
			continue;
		out->matched++;
		judge_pair(p, run_sd);
		for (size_t k = 0; set && k < set->n; k++) {
			struct diff_fail_on *h = &out->hits[out->nhits++];
			h->t = &set->v[k];
			h->pair = p;
			h->v = fail_on(p, h->t);
			/* the condition is the regression: its pass is check's fail;
			 * a pair without the metric (not instrumented...) is no verdict */
			if (h->v != CHECK_NOTHING)
				check_tally_add(&out->fail_on, h->v == CHECK_PASS ? CHECK_FAIL
							       : h->v == CHECK_FAIL ? CHECK_PASS : h->v);
		}
	}
	/* a threshold no pair could judge is nothing to measure */
	for (size_t k = 0; set && k < set->n; k++) {
		int judged = 0;
		for (size_t i = 0; i < out->nhits; i++)
			judged |= out->hits[i].t == &set->v[k] && out->hits[i].v != CHECK_NOTHING;
		if (!judged)
			check_tally_add(&out->fail_on, CHECK_NOTHING);
	}
	for (size_t j = 0; j < b->n; j++)
		if (!used[j])
			out->p[out->n++].b = &b->u[j];
	free(used);
	return 0;
}

void diff_result_done(struct diff_result *r)
{
	free(r->p);
	free(r->hits);
	memset(r, 0, sizeof(*r));
}
