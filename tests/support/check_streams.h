/*
 * check_streams.h — synthetic autocorrelated per-second streams with a
 * known truth, for model/estimate' coverage test and bench/check_coverage.
 * Header-only (static inline): the bench is not linked with tests/support.
 */
#ifndef TESTS_CHECK_STREAMS_H
#define TESTS_CHECK_STREAMS_H

#include <math.h>
#include <stdint.h>

#include "model/estimate.h"

/* splitmix64: a fixed seed per run set, never tuned; runs are reproducible */
struct cs_rng {
	uint64_t s;
};

static inline uint64_t cs_next(struct cs_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline double cs_unif(struct cs_rng *r) { return (double)(cs_next(r) >> 11) / 9007199254740992.0; }

static inline double cs_gauss(struct cs_rng *r)
{
	double u = cs_unif(r), v = cs_unif(r);
	return sqrt(-2 * log(u > 0 ? u : 1e-300)) * cos(2 * M_PI * v);
}

/*
 * A worker sampled at ~200 Hz that stays in its poll (1) or busy (0) for
 * runs of samples: a two-state Markov chain, P(poll→busy) = a,
 * P(busy→poll) = b, started from its stationary law, so the true idle
 * share is b/(a+b). Each second gets 180..220 samples (the sampler's jitter).
 */
static inline void cs_markov(struct cs_rng *r, struct est_sec *secs, int nsec, double a, double b)
{
	int state = cs_unif(r) < b / (a + b);
	for (int s = 0; s < nsec; s++) {
		int n = 180 + (int)(cs_next(r) % 41), hits = 0;
		for (int i = 0; i < n; i++) {
			hits += state;
			double u = cs_unif(r);
			state = state ? !(u < a) : (u < b);
		}
		secs[s] = (struct est_sec){ hits, n };
	}
}

/* A rate per second following an AR(1) around mu (correlation time
 * (1+ρ)/(1−ρ) seconds), each bucket covering 0.9..1.1 s of wall time. */
static inline void cs_ar1(struct cs_rng *r, struct est_sec *secs, int nsec, double mu, double rho, double sigma)
{
	double x = mu + sigma / sqrt(1 - rho * rho) * cs_gauss(r);
	for (int s = 0; s < nsec; s++) {
		double w = 0.9 + 0.2 * cs_unif(r);
		secs[s] = (struct est_sec){ x * w, w };
		x = mu + rho * (x - mu) + sigma * cs_gauss(r);
	}
}

#endif /* TESTS_CHECK_STREAMS_H */
