/* check_verdict: pass/fail only when the whole interval clears the limit, inconclusive when it straddles, nothing without samples; the exit code of a check. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_verdict.h"
#include "exitcodes.h"

static struct estimate iv(double est, double lo, double hi)
{
	return (struct estimate){ .ok = 1, .est = est, .lo = lo, .hi = hi, .se = (hi - lo) / 4, .df = 20,
					.n = 1000, .n_eff = 100 };
}

Test(check_verdict, interval_against_limit, .timeout = 5)
{
	struct estimate e = iv(40, 35, 45);
	cr_expect_eq(check_decide(CHECK_GE, &e, 30, 0), CHECK_PASS);
	cr_expect_eq(check_decide(CHECK_GE, &e, 50, 0), CHECK_FAIL);
	cr_expect_eq(check_decide(CHECK_GE, &e, 38, 0), CHECK_INCONCLUSIVE);
	cr_expect_eq(check_decide(CHECK_GE, &e, 35, 0), CHECK_PASS, "lo == limit satisfies >=");
	cr_expect_eq(check_decide(CHECK_GT, &e, 35, 0), CHECK_INCONCLUSIVE, "but not >");
	cr_expect_eq(check_decide(CHECK_GT, &e, 45, 0), CHECK_FAIL);
	cr_expect_eq(check_decide(CHECK_LT, &e, 50, 0), CHECK_PASS);
	cr_expect_eq(check_decide(CHECK_LT, &e, 45, 0), CHECK_INCONCLUSIVE, "hi == limit is not < limit");
	cr_expect_eq(check_decide(CHECK_LT, &e, 35, 0), CHECK_FAIL);
	cr_expect_eq(check_decide(CHECK_LE, &e, 45, 0), CHECK_PASS);
	cr_expect_eq(check_decide(CHECK_LE, &e, 34.9, 0), CHECK_FAIL);
	cr_expect_eq(check_decide(CHECK_LE, &e, 40, 0), CHECK_INCONCLUSIVE);
}

Test(check_verdict, point_estimate_mode, .timeout = 5)
{
	struct estimate e = iv(40, 35, 45);
	cr_expect_eq(check_decide(CHECK_GE, &e, 38, 1), CHECK_PASS);
	cr_expect_eq(check_decide(CHECK_GE, &e, 42, 1), CHECK_FAIL);
	struct estimate wide = iv(40, -INFINITY, INFINITY);
	cr_expect_eq(check_decide(CHECK_GE, &wide, 30, 0), CHECK_INCONCLUSIVE, "one second of data decides nothing");
	cr_expect_eq(check_decide(CHECK_GE, &wide, 30, 1), CHECK_PASS);
}

Test(check_verdict, nothing_to_measure, .timeout = 5)
{
	struct estimate none = { .ok = 0, .est = NAN, .lo = NAN, .hi = NAN };
	cr_expect_eq(check_decide(CHECK_GE, &none, 30, 0), CHECK_NOTHING);
	cr_expect_eq(check_decide(CHECK_GE, &none, 30, 1), CHECK_NOTHING, "not even as a point estimate");
	cr_expect_eq(check_decide(CHECK_GE, NULL, 30, 0), CHECK_NOTHING);
	struct estimate nan_est = iv(NAN, NAN, NAN);
	cr_expect_eq(check_decide(CHECK_LT, &nan_est, 30, 0), CHECK_NOTHING);
	cr_expect_str_eq(check_verdict_str(CHECK_NOTHING), "nothing");
	cr_expect_str_eq(check_verdict_str(CHECK_INCONCLUSIVE), "inconclusive");
}

/* A figure the samples cannot resolve (a sampled lag of spans shorter than
 * the period): inconclusive, never a pass or a fail, nor "nothing"; and so
 * a threshold relative to it, on either side. */
Test(check_verdict, unresolved_is_inconclusive, .timeout = 5)
{
	struct estimate u = { .ok = 1, .unresolved = 1, .est = NAN, .lo = NAN, .hi = NAN };
	cr_expect_eq(check_decide(CHECK_LT, &u, 50, 0), CHECK_INCONCLUSIVE);
	cr_expect_eq(check_decide(CHECK_GE, &u, 50, 1), CHECK_INCONCLUSIVE, "as a point estimate too");
	struct check_threshold t = { .op = CHECK_LE, .relative = 1, .coef = 1, .value = 5 };
	struct estimate known = iv(40, 40, 40);
	struct check_result r;
	cr_expect_eq(check_result_judge(&r, &t, &u, &known, 0, CHECK_RUN_SD_PTS), CHECK_INCONCLUSIVE);
	cr_expect_eq(check_result_judge(&r, &t, &known, &u, 0, CHECK_RUN_SD_PTS), CHECK_INCONCLUSIVE);
}

Test(check_verdict, relative_uses_the_difference, .timeout = 5)
{
	struct check_threshold t = { .op = CHECK_GE, .relative = 1, .coef = 1, .value = -5 };
	strcpy(t.text, "idle_pct>=baseline-5");
	struct estimate now = iv(38, 36, 40), base = iv(40, 36, 44);
	struct check_result r;
	/* now's interval alone clears 35 = 40 − 5, but the baseline is uncertain too */
	cr_expect_eq(check_result_judge(&r, &t, &now, &base, 0, CHECK_RUN_SD_PTS), CHECK_INCONCLUSIVE);
	cr_expect(r.judged.est == -2 && r.judged.lo < -5 && r.judged.hi > 1, "diff [%g, %g]", r.judged.lo, r.judged.hi);
	cr_expect(r.limit == -5 && r.abs_limit == 35);
	cr_expect(r.baseline.ok && r.baseline.est == 40);
	cr_expect_eq(check_result_judge(&r, &t, &now, &base, 1, CHECK_RUN_SD_PTS), CHECK_PASS, "-2 >= -5 as points");
	struct estimate tight_now = iv(38, 37.9, 38.1), tight_base = iv(50, 49.9, 50.1);
	cr_expect_eq(check_result_judge(&r, &t, &tight_now, &tight_base, 0, CHECK_RUN_SD_PTS), CHECK_FAIL, "12 points down");
	cr_expect_eq(check_result_judge(&r, &t, &now, NULL, 0, CHECK_RUN_SD_PTS), CHECK_NOTHING, "no baseline to compare with");

	struct check_threshold abs_t = { .op = CHECK_GE, .value = 30 };
	cr_expect_eq(check_result_judge(&r, &abs_t, &now, NULL, 0, CHECK_RUN_SD_PTS), CHECK_PASS);
	cr_expect(r.limit == 30 && r.abs_limit == 30 && !r.baseline.ok && r.judged.est == 38);
}

/* A share moves between runs of one program by more than each run's own
 * interval shows: a relative threshold on it judges the difference with
 * the run-to-run spread in it; a rate (no spread measured) without. */
Test(check_verdict, relative_share_counts_the_spread_between_runs, .timeout = 5)
{
	struct check_metric idle = { .name = "idle_pct", .unit = "%" }, ops = { .name = "ops_per_s", .unit = "ops/s" };
	struct check_threshold t = { .op = CHECK_GE, .relative = 1, .coef = 1, .value = -0.5, .metric = &idle };
	strcpy(t.text, "idle_pct>=baseline-0.5");
	/* one point less idle, each run's own interval ±0.1 */
	struct estimate now = iv(58, 57.9, 58.1), base = iv(59, 58.9, 59.1);
	struct check_result r;
	cr_expect_eq(check_result_judge(&r, &t, &now, &base, 0, CHECK_RUN_SD_PTS), CHECK_INCONCLUSIVE);
	double sd = CHECK_RUN_SD_PTS, half = r.judged.hi - r.judged.est;
	cr_expect(fabs(r.judged.se * r.judged.se - 2 * 0.05 * 0.05 - 2 * sd * sd) < 1e-9, "se %g", r.judged.se);
	cr_expect(half > 1.96 * sqrt(2) * sd && half < 2.1 * sqrt(2) * sd, "half-width %g", half);
	cr_expect(check_result_judge(&r, &t, &now, &base, 1, CHECK_RUN_SD_PTS) == CHECK_FAIL, "as points: -1 < -0.5");
	/* ten points down is past any spread */
	struct estimate far = iv(49, 48.9, 49.1);
	cr_expect_eq(check_result_judge(&r, &t, &far, &base, 0, CHECK_RUN_SD_PTS), CHECK_FAIL);
	/* a rate's runs are judged on their own intervals */
	t.metric = &ops;
	cr_expect_eq(check_result_judge(&r, &t, &now, &base, 0, CHECK_RUN_SD_PTS), CHECK_FAIL);
	cr_expect(r.judged.hi < -0.5);
	cr_expect(check_run_sd(NULL, 1) == 0);
	/* --run-sd 0: the share judged on the runs' own intervals, as a rate is */
	t.metric = &idle;
	cr_expect_eq(check_result_judge(&r, &t, &now, &base, 0, 0), CHECK_FAIL);
	cr_expect(fabs(r.judged.se * r.judged.se - 2 * 0.05 * 0.05) < 1e-9);
}

Test(check_verdict, exit_codes, .timeout = 5)
{
	struct check_tally t = { 0 };
	cr_expect_eq(check_exit_code(&t, 0), EXIT_NOTHING, "no threshold evaluated is never a pass");
	t = (struct check_tally){ .passed = 3 };
	cr_expect_eq(check_exit_code(&t, 0), EXIT_OK);
	t = (struct check_tally){ .passed = 3, .inconclusive = 1 };
	cr_expect_eq(check_exit_code(&t, 0), EXIT_INCONCLUSIVE);
	cr_expect_eq(check_exit_code(&t, 1), EXIT_FAIL, "--inconclusive=fail");
	t = (struct check_tally){ .passed = 3, .inconclusive = 1, .nothing = 1 };
	cr_expect_eq(check_exit_code(&t, 0), EXIT_NOTHING);
	t = (struct check_tally){ .passed = 3, .failed = 1, .inconclusive = 1, .nothing = 1 };
	cr_expect_eq(check_exit_code(&t, 0), EXIT_FAIL);
	cr_expect(EXIT_OK == 0 && EXIT_FAIL == 1 && EXIT_USAGE == 2 && EXIT_INCONCLUSIVE == 3 && EXIT_NOTHING == 4 &&
		  EXIT_ACCESS == 5 && EXIT_DEFERRED == 75);

	struct check_result r[4] = { { .verdict = CHECK_PASS }, { .verdict = CHECK_FAIL }, { .verdict = CHECK_PASS },
				     { .verdict = CHECK_NOTHING } };
	check_tally_results(&t, r, 4);
	cr_expect(t.passed == 2 && t.failed == 1 && t.inconclusive == 0 && t.nothing == 1);
}

Test(check_verdict, exit_codes_documented, .timeout = 5)
{
	static const struct { int code; const char *row; } rows[] = {
		{ EXIT_OK, "| 0 | `EXIT_OK` |" },
		{ EXIT_FAIL, "| 1 | `EXIT_FAIL` |" },
		{ EXIT_USAGE, "| 2 | `EXIT_USAGE` |" },
		{ EXIT_INCONCLUSIVE, "| 3 | `EXIT_INCONCLUSIVE` |" },
		{ EXIT_NOTHING, "| 4 | `EXIT_NOTHING` |" },
		{ EXIT_ACCESS, "| 5 | `EXIT_ACCESS` |" },
		{ EXIT_DEFERRED, "| 75 | `EXIT_DEFERRED` |" },
	};
	FILE *f = fopen("docs/check.md", "r");
	cr_assert(f, "docs/check.md (tests run from the source tree)");
	char *doc = NULL;
	size_t len = 0;
	cr_assert(getdelim(&doc, &len, 0, f) > 0);
	fclose(f);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char code[8];
		snprintf(code, sizeof(code), "| %d |", rows[i].code);
		cr_expect(strncmp(rows[i].row, code, strlen(code)) == 0, "%s is not %d", rows[i].row, rows[i].code);
		cr_expect(strstr(doc, rows[i].row), "docs/check.md lacks the row: %s", rows[i].row);
	}
	free(doc);
}
