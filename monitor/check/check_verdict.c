/*
 * check_verdict.c — interval against limit, and the exit code.
 */
#include "check/check_verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "exitcodes.h"
#include "model/metric.h"

/* Is x on the good side of the limit? */
static int good(enum check_op op, double x, double limit)
{
	switch (op) {
	case CHECK_LT: return x < limit;
	case CHECK_LE: return x <= limit;
	case CHECK_GT: return x > limit;
	case CHECK_GE: return x >= limit;
	}
	return 0;
}

enum check_verdict check_decide(enum check_op op, const struct estimate *e, double limit, int point_estimate)
{
	if (e && e->ok && e->unresolved && !isnan(limit))
		return CHECK_INCONCLUSIVE;   /* measured, but finer than the samples resolve */
	if (!e || !e->ok || isnan(e->est) || isnan(limit))
		return CHECK_NOTHING;
	if (point_estimate)
		return good(op, e->est, limit) ? CHECK_PASS : CHECK_FAIL;
	if (isnan(e->lo) || isnan(e->hi))
		return CHECK_INCONCLUSIVE;
	/* both ends good, or both bad; the good side is convex, so the interval between agrees */
	int lo_good = good(op, e->lo, limit), hi_good = good(op, e->hi, limit);
	if (lo_good && hi_good)
		return CHECK_PASS;
	if (!lo_good && !hi_good)
		return CHECK_FAIL;
	return CHECK_INCONCLUSIVE;
}

const char *check_verdict_str(enum check_verdict v)
{
	static const char *const s[] = { "pass", "fail", "inconclusive", "nothing" };
	return (unsigned)v < 4 ? s[v] : "?";
}

double check_run_sd(const struct metric *m, double pts)
{
	/* rates, levels and times are judged on their runs' intervals alone:
	 * their spread between runs is not measured yet */
	return m && m->unit == METRIC_PCT ? pts : 0;
}

int check_runs_diff(const struct metric *m, const struct estimate *a, const struct estimate *b, double coef,
		    double pts, struct estimate *out)
{
	double sd = check_run_sd(m, pts);
	return est_diff_runs(a, b, coef, sd * sd, out);
}

int check_set_run_sd(const char *arg, double *pts, char *msg, size_t len)
{
	if (cli_parse_number(arg, 0, CHECK_RUN_SD_MAX, pts) == 0)
		return 0;
	snprintf(msg, len, "invalid run-to-run spread '%s': expected 0 to %g points", arg, CHECK_RUN_SD_MAX);
	return -1;
}

enum check_verdict check_result_judge(struct check_result *r, const struct check_threshold *t,
				      const struct estimate *value, const struct estimate *baseline,
				      int point_estimate, double run_sd)
{
	r->threshold = t;
	r->value = *value;
	memset(&r->baseline, 0, sizeof(r->baseline));
	r->baseline.est = r->baseline.lo = r->baseline.hi = NAN;
	if (!t->relative) {
		r->judged = *value;
		r->limit = r->abs_limit = t->value;
	} else if (baseline && baseline->ok) {
		r->baseline = *baseline;
		check_runs_diff(t->metric ? metric_find_any(t->metric->name) : NULL, value, baseline, t->coef, run_sd,
				&r->judged);
		r->limit = t->value;
		r->abs_limit = check_limit(t, baseline->est);
	} else {
		r->judged = *value;
		r->judged.ok = 0;
		r->limit = t->value;
		r->abs_limit = NAN;
	}
	r->verdict = check_decide(t->op, &r->judged, r->limit, point_estimate);
	return r->verdict;
}

void check_tally_add(struct check_tally *t, enum check_verdict v)
{
	switch (v) {
	case CHECK_PASS: t->passed++; break;
	case CHECK_FAIL: t->failed++; break;
	case CHECK_INCONCLUSIVE: t->inconclusive++; break;
	case CHECK_NOTHING: t->nothing++; break;
	}
}

void check_tally_results(struct check_tally *t, const struct check_result *r, size_t n)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < n; i++)
		check_tally_add(t, r[i].verdict);
}

int check_exit_code(const struct check_tally *t, int inconclusive_fail)
{
	if (t->failed)
		return EXIT_FAIL;
	if (t->nothing || t->passed + t->inconclusive == 0)
		return EXIT_NOTHING;
	if (t->inconclusive)
		return inconclusive_fail ? EXIT_FAIL : EXIT_INCONCLUSIVE;
	return EXIT_OK;
}
