/* estimate: the batch-means 95% interval covers the truth ~95% of the time on autocorrelated streams, where the binomial interval does not. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "model/estimate.h"
#include "model/model.h"
#include "support/check_streams.h"

#define RUNS 400

static struct cs_rng rng;

/* What the TUI shows: Wilson's interval as if every sample were independent. */
static int naive_covers(const struct est_sec *secs, int nsec, double truth)
{
	double hits = 0, n = 0;
	for (int s = 0; s < nsec; s++) {
		hits += secs[s].num;
		n += secs[s].den;
	}
	double p = hits / n, z2n = 1.959964 * 1.959964 / n;
	double centre = (p + z2n / 2) / (1 + z2n) * 100, half = model_ci95_pts(p, (uint64_t)n);
	return centre - half <= truth * 100 && truth * 100 <= centre + half;
}

Test(estimate, markov_proportion_coverage, .timeout = 60)
{
	enum { NSEC = 60 };
	const double a = 0.01, b = 0.015, truth = b / (a + b);   /* 60% idle */
	struct est_sec secs[NSEC];
	int covered = 0, naive = 0;
	double neff = 0, n = 0;
	rng = (struct cs_rng){ 13 };
	for (int r = 0; r < RUNS; r++) {
		cs_markov(&rng, secs, NSEC, a, b);
		struct estimate e;
		cr_assert_eq(est_batch_means(secs, NSEC, EST_PROPORTION, 100, &e), 0);
		cr_assert(e.ok && e.lo <= e.est && e.est <= e.hi);
		covered += e.lo <= truth * 100 && truth * 100 <= e.hi;
		naive += naive_covers(secs, NSEC, truth);
		neff += e.n_eff;
		n += e.n;
	}
	double cov = (double)covered / RUNS, ncov = (double)naive / RUNS;
	cr_log_info("markov: batch means cover %.1f%%, binomial %.1f%%, mean n %.0f n_eff %.0f", 100 * cov,
		    100 * ncov, n / RUNS, neff / RUNS);
	cr_expect(cov >= 0.91 && cov <= 0.98, "batch-means coverage %.3f outside 0.91..0.98", cov);
	/* the same stream defeats the independent-samples interval: this test can fail */
	cr_expect(ncov < 0.80, "binomial coverage %.3f: the stream is not autocorrelated enough", ncov);
	/* ~80 samples of correlation time: n_eff must be far below n */
	cr_expect(neff / n < 0.1, "n_eff/n = %.3f", neff / n);
}

Test(estimate, ar1_rate_coverage, .timeout = 60)
{
	enum { NSEC = 300 };   /* 120 correlation times: see docs/check.md for shorter runs */
	struct est_sec secs[NSEC];
	int covered = 0, naive = 0;
	rng = (struct cs_rng){ 29 };
	for (int r = 0; r < RUNS; r++) {
		cs_ar1(&rng, secs, NSEC, 5000, 0.6, 400);
		struct estimate e;
		cr_assert_eq(est_batch_means(secs, NSEC, EST_RATE, 1, &e), 0);
		covered += e.lo <= 5000 && 5000 <= e.hi;
		/* naive: t interval of the 120 seconds as if independent */
		double half = est_t975(e.n - 1) * e.se * sqrt(e.n_eff / e.n);
		naive += fabs(e.est - 5000) <= half;
	}
	double cov = (double)covered / RUNS, ncov = (double)naive / RUNS;
	cr_log_info("ar1: batch means cover %.1f%%, per-second iid %.1f%%", 100 * cov, 100 * ncov);
	cr_expect(cov >= 0.91 && cov <= 0.98, "batch-means coverage %.3f outside 0.91..0.98", cov);
	cr_expect(ncov < 0.85, "iid coverage %.3f", ncov);
}

Test(estimate, difference_coverage, .timeout = 60)
{
	enum { NSEC = 60 };
	struct est_sec x[NSEC], y[NSEC];
	int covered = 0;
	rng = (struct cs_rng){ 41 };
	for (int r = 0; r < RUNS; r++) {
		cs_markov(&rng, x, NSEC, 0.01, 0.015);    /* 60% */
		cs_markov(&rng, y, NSEC, 0.01, 0.01);     /* 50% */
		struct estimate ex, ey, d;
		cr_assert_eq(est_batch_means(x, NSEC, EST_PROPORTION, 100, &ex), 0);
		cr_assert_eq(est_batch_means(y, NSEC, EST_PROPORTION, 100, &ey), 0);
		cr_assert_eq(est_diff(&ex, &ey, 1, &d), 0);
		cr_assert(d.se > ex.se && d.se > ey.se);
		covered += d.lo <= 10 && 10 <= d.hi;
	}
	double cov = (double)covered / RUNS;
	cr_log_info("difference: covers %.1f%%", 100 * cov);
	cr_expect(cov >= 0.91 && cov <= 0.98, "difference coverage %.3f", cov);
}

/* Runs whose whole mean moves from run to run (a run-level offset of sd
 * TAU, as two runs of one program in different CPU weather): each run's
 * batch means cannot see it, so Welch on their intervals alone
 * under-covers the true change; with the offset's variance as the run
 * term it covers again. */
Test(estimate, run_spread_in_a_difference, .timeout = 60)
{
	enum { NSEC = 120 };   /* 40 correlation times: batch means alone cover (docs/check.md) */
	const double TAU = 50;   /* the run mean's own sd is ~35 */
	struct est_sec x[NSEC], y[NSEC];
	int welch = 0, runs = 0;
	rng = (struct cs_rng){ 53 };
	for (int r = 0; r < RUNS; r++) {
		cs_ar1(&rng, x, NSEC, 5000, 0.5, 200);
		cs_ar1(&rng, y, NSEC, 4900, 0.5, 200);
		double ox = TAU * cs_gauss(&rng), oy = TAU * cs_gauss(&rng);
		for (int s = 0; s < NSEC; s++) {
			x[s].num += ox;
			y[s].num += oy;
		}
		struct estimate ex, ey, d, dr;
		cr_assert_eq(est_batch_means(x, NSEC, EST_RATE, 1, &ex), 0);
		cr_assert_eq(est_batch_means(y, NSEC, EST_RATE, 1, &ey), 0);
		cr_assert_eq(est_diff(&ex, &ey, 1, &d), 0);
		cr_assert_eq(est_diff_runs(&ex, &ey, 1, TAU * TAU, &dr), 0);
		/* the same change, a wider interval: the run term in the se, known (no df lost) */
		cr_assert(dr.est == d.est && dr.se > d.se && dr.df >= d.df);
		cr_assert(fabs(dr.se * dr.se - d.se * d.se - 2 * TAU * TAU) < 1e-6 * dr.se * dr.se);
		welch += d.lo <= 100 && 100 <= d.hi;
		runs += dr.lo <= 100 && 100 <= dr.hi;
	}
	double cw = (double)welch / RUNS, cr = (double)runs / RUNS;
	cr_log_info("run offsets of sd %.0f: Welch alone covers %.1f%%, with the run term %.1f%%", TAU, 100 * cw, 100 * cr);
	cr_expect(cw < 0.88, "Welch alone covers %.3f: the offsets should defeat it", cw);
	cr_expect(cr >= 0.93 && cr <= 0.98, "with the run term: coverage %.3f outside 0.93..0.98", cr);
	/* two maxima are observed facts: no run term */
	struct est_sec m[2] = { { 3, 1 }, { 7, 1 } };
	struct estimate ma, mb, md;
	cr_assert_eq(est_batch_means(m, 2, EST_MAX, 1, &ma), 0);
	cr_assert_eq(est_batch_means(m, 1, EST_MAX, 1, &mb), 0);
	cr_assert_eq(est_diff_runs(&ma, &mb, 1, 4, &md), 0);
	cr_expect(md.est == 4 && md.lo == 4 && md.hi == 4);
	cr_expect_eq(est_diff_runs(&ma, &mb, 1, -1, &md), -EINVAL, "a negative variance");
}

Test(estimate, t_quantiles, .timeout = 5)
{
	cr_expect(fabs(est_t975(1) - 12.706) < 1e-3);
	cr_expect(fabs(est_t975(10) - 2.228) < 1e-3);
	cr_expect(fabs(est_t975(29) - 2.045) < 1e-3);
	cr_expect(fabs(est_t975(40) - 2.021) < 1e-3);
	cr_expect(fabs(est_t975(100) - 1.984) < 1e-3);
	cr_expect(fabs(est_t975(INFINITY) - 1.960) < 1e-3);
	double t = est_t975(10.5);   /* Welch's fractional df: between its neighbours */
	cr_expect(t < est_t975(10) && t > est_t975(11));
}

Test(estimate, empty_and_gaps, .timeout = 5)
{
	struct estimate e;
	cr_assert_eq(est_batch_means(NULL, 0, EST_PROPORTION, 100, &e), 0);
	cr_expect_eq(e.ok, 0, "no seconds: nothing to measure");
	struct est_sec none[3] = { { 0, 0 }, { 0, 0 }, { 0, 0 } };
	cr_assert_eq(est_batch_means(none, 3, EST_RATE, 1, &e), 0);
	cr_expect_eq(e.ok, 0, "seconds without samples are no data");
	struct est_sec one[2] = { { 0, 0 }, { 50, 100 } };
	cr_assert_eq(est_batch_means(one, 2, EST_PROPORTION, 100, &e), 0);
	cr_expect(e.ok && e.est == 50 && isinf(e.lo) && isinf(e.hi), "one second: no spread, undecidable");
}

Test(estimate, bad_input, .timeout = 5)
{
	struct estimate e;
	struct est_sec over[1] = { { 5, 4 } }, neg[1] = { { -1, 4 } }, nan_[1] = { { NAN, 1 } };
	cr_expect_eq(est_batch_means(over, 1, EST_PROPORTION, 100, &e), -EINVAL);
	cr_expect_eq(est_batch_means(neg, 1, EST_RATE, 1, &e), -EINVAL);
	cr_expect_eq(est_batch_means(nan_, 1, EST_MAX, 1, &e), -EINVAL);
	cr_expect_eq(est_batch_means(over, 1, EST_PROPORTION, 0, &e), -EINVAL);
	cr_expect_eq(est_batch_means(NULL, 1, EST_PROPORTION, 100, &e), -EINVAL);
}

Test(estimate, constant_stream_keeps_binomial_floor, .timeout = 5)
{
	/* every sample in the poll: batch variance is 0, yet 100% is not proven */
	struct est_sec s[20];
	for (int i = 0; i < 20; i++)
		s[i] = (struct est_sec){ 200, 200 };
	struct estimate e;
	cr_assert_eq(est_batch_means(s, 20, EST_PROPORTION, 100, &e), 0);
	cr_expect(e.est == 100 && e.hi == 100 && e.lo < 100 && e.lo > 99, "lo %.4f hi %.4f", e.lo, e.hi);
	cr_expect(e.n == 4000 && e.n_eff == 4000);
}

Test(estimate, trend_is_flagged_correlated, .timeout = 5)
{
	/* idle drifting from 90% to 10%: batch means stay dependent at any k */
	struct est_sec s[60];
	for (int i = 0; i < 60; i++)
		s[i] = (struct est_sec){ 180 - i * 160 / 59.0, 200 };
	struct estimate e;
	cr_assert_eq(est_batch_means(s, 60, EST_PROPORTION, 100, &e), 0);
	cr_expect_eq(e.batches, EST_BATCHES_MIN);
	cr_expect(e.correlated && e.lag1 > EST_LAG1_MAX_MIN, "lag1 %.3f", e.lag1);
}

Test(estimate, maxima_are_observed_facts, .timeout = 5)
{
	struct est_sec s[4] = { { 3, 1 }, { 120, 1 }, { 999, 0 }, { 7, 1 } };
	struct estimate e, base, d;
	cr_assert_eq(est_batch_means(s, 4, EST_MAX, 1, &e), 0);
	cr_expect(e.est == 120 && e.lo == 120 && e.hi == 120 && e.n == 3, "the invalid second's 999 is ignored");
	cr_assert_eq(est_batch_means(s, 1, EST_MAX, 1, &base), 0);
	cr_assert_eq(est_diff(&e, &base, 1, &d), 0);
	cr_expect(d.est == 117 && d.lo == 117 && d.hi == 117);
}
