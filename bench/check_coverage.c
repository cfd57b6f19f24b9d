/*
 * check_coverage: how often model/estimate' 95% interval covers the truth on
 * synthetic autocorrelated streams, by correlation time and run length,
 * against the binomial (independent-samples) interval in the same runs.
 * Not a speed benchmark: it measures the honesty docs/check.md quotes.
 *
 *   make benches && build/bench/check_coverage [runs]
 */
#include "collect/precision.h"
#include "model/estimate.h"
#include "model/model.h"
#include "util/stats.h"
#include "support/check_streams.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int wilson_covers(const struct est_sec *s, int nsec, double truth_pct)
{
	double hits = 0, n = 0;
	for (int i = 0; i < nsec; i++) {
		hits += s[i].num;
		n += s[i].den;
	}
	double p = hits / n, z2n = STATS_Z975 * STATS_Z975 / n;
	double centre = (p + z2n / 2) / (1 + z2n) * 100, half = model_ci95_pts(p, (uint64_t)n);
	return fabs(truth_pct - centre) <= half;
}

/*
 * The same chains sampled as the sampler samples them (collect/precision.c):
 * ~200 ticks a second, each taken with probability 1/k, k chosen each
 * second from the chain's recent samples; a sample counts k times and the
 * second's w2 holds the squared weights. precision_pts 0: every tick.
 */
static void markov_sampled(struct cs_rng *r, struct est_sec *secs, int nsec, double a, double b, double pts,
			   unsigned *seed, double *taken)
{
	struct prec p;
	struct prec_conf c = prec_conf(200, pts);
	prec_init(&p);
	int state = cs_unif(r) < b / (a + b);
	for (int s = 0; s < nsec; s++) {
		int n = 180 + (int)(cs_next(r) % 41);
		double num = 0, den = 0, w2 = 0;
		for (int i = 0; i < n; i++) {
			uint32_t w = prec_take(&p, &c, s, seed);
			if (w) {
				prec_note(&p, state ? SERIES_POLL : SERIES_RUNNING, w);
				num += state ? w : 0;
				den += w;
				w2 += (double)w * w;
				*taken += 1;
			}
			double u = cs_unif(r);
			state = state ? !(u < a) : (u < b);
		}
		secs[s] = (struct est_sec){ num, den, w2 };
	}
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 1000;
	static const int lens[] = { 60, 120, 300 };
	static struct est_sec s[300];
	struct estimate e;

	/* proportion: a Markov poll/busy chain, mean run 1/a samples in poll */
	static const double ab[][2] = { { 0.3, 0.45 }, { 0.01, 0.015 }, { 0.002, 0.003 } };
	printf("%-24s %6s %9s %9s %8s %8s\n", "stream", "secs", "cover", "binomial", "n_eff/n", "width");
	double worst = 1, worst_naive = 0;
	for (int k = 0; k < 3; k++)
		for (int l = 0; l < 3; l++) {
			struct cs_rng rng = { 13 };
			double truth = ab[k][1] / (ab[k][0] + ab[k][1]) * 100, width = 0, ratio = 0;
			int c = 0, nc = 0;
			for (int r = 0; r < runs; r++) {
				cs_markov(&rng, s, lens[l], ab[k][0], ab[k][1]);
				est_batch_means(s, (size_t)lens[l], EST_PROPORTION, 100, &e);
				c += e.lo <= truth && truth <= e.hi;
				nc += wilson_covers(s, lens[l], truth);
				width += e.hi - e.lo;
				ratio += e.n_eff / e.n;
			}
			char name[64];
			snprintf(name, sizeof(name), "markov poll run %.0f smp", 1 / ab[k][0]);
			printf("%-24s %6d %9.3f %9.3f %8.4f %8.2f\n", name, lens[l], (double)c / runs,
			       (double)nc / runs, ratio / runs, width / runs);
			if (k == 1 && l == 0) {
				worst = (double)c / runs;
				worst_naive = (double)nc / runs;
			}
		}

	/* rate: AR(1) per second around 5000/s */
	static const double rhos[] = { 0, 0.3, 0.6, 0.8 };
	for (int k = 0; k < 4; k++)
		for (int l = 0; l < 3; l++) {
			struct cs_rng rng = { 29 };
			int c = 0;
			double width = 0, ratio = 0;
			for (int r = 0; r < runs; r++) {
				cs_ar1(&rng, s, lens[l], 5000, rhos[k], 400);
				est_batch_means(s, (size_t)lens[l], EST_RATE, 1, &e);
				c += e.lo <= 5000 && 5000 <= e.hi;
				width += e.hi - e.lo;
				ratio += e.n_eff / e.n;
			}
			char name[64];
			snprintf(name, sizeof(name), "ar1 rho %.1f (tau %.1fs)", rhos[k], (1 + rhos[k]) / (1 - rhos[k]));
			printf("%-24s %6d %9.3f %9s %8.4f %8.0f\n", name, lens[l], (double)c / runs, "-", ratio / runs,
			       width / runs);
		}
	/* with precision-targeted sampling (the default 1 point), against every
	 * tick, on the chains above and on two that are parked most of the time */
	static const double abp[][2] = { { 0.3, 0.45 }, { 0.01, 0.015 }, { 0.002, 0.003 }, { 0.0005, 0.05 },
					 { 0.0002, 0.02 } };
	double adaptive_60s = 0, worst_drop = -1;
	printf("%-24s %6s %9s %9s %8s %8s %9s\n", "stream (adaptive)", "secs", "cover", "every tk", "width",
	       "width tk", "samples");
	for (int k = 0; k < 5; k++)
		for (int l = 0; l < 3; l++) {
			double truth = abp[k][1] / (abp[k][0] + abp[k][1]) * 100, width[2] = { 0, 0 }, taken[2] = { 0, 0 };
			int c[2] = { 0, 0 };
			for (int mode = 0; mode < 2; mode++) {
				struct cs_rng rng = { 41 };
				unsigned seed = 43;
				for (int r = 0; r < runs; r++) {
					markov_sampled(&rng, s, lens[l], abp[k][0], abp[k][1], mode ? 0 : PREC_DEFAULT_PTS,
						       &seed, &taken[mode]);
					est_batch_means(s, (size_t)lens[l], EST_PROPORTION, 100, &e);
					c[mode] += e.lo <= truth && truth <= e.hi;
					width[mode] += e.hi - e.lo;
				}
			}
			char name[64];
			snprintf(name, sizeof(name), "markov %.0f/%.0f smp", 1 / abp[k][0], 1 / abp[k][1]);
			printf("%-24s %6d %9.3f %9.3f %8.2f %8.2f %8.2fx\n", name, lens[l], (double)c[0] / runs,
			       (double)c[1] / runs, width[0] / runs, width[1] / runs, taken[0] / taken[1]);
			if (k == 1 && l == 0)
				adaptive_60s = (double)c[0] / runs;
			if ((double)(c[1] - c[0]) / runs > worst_drop)
				worst_drop = (double)(c[1] - c[0]) / runs;
		}
	printf("figure check_coverage_markov_60s %.3f\n", worst);
	printf("figure check_coverage_markov_60s_adaptive %.3f\n", adaptive_60s);
	printf("figure check_coverage_adaptive_drop %.3f (the most coverage any stream above lost to adaptive rates)\n",
	       worst_drop);
	printf("figure check_coverage_binomial_markov_60s %.3f\n", worst_naive);
	printf("figure check_coverage_vs_binomial %.2f x\n", worst / worst_naive);
	return 0;
}
