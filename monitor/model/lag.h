/*
 * lag.h — a worker's busy spans (leaving the loop's poll to re-entering
 * it) over a range of periods: their histogram, exact from the runtime's
 * slot (shm ABI minor 2) where every worker of the range publishes one,
 * else estimated from the samples (series.h says how, and what it cannot
 * resolve); its percentiles and the longest span. METRIC_LAG's rule.
 */
#ifndef LOOPSTAT_LAG_H
#define LOOPSTAT_LAG_H

#include <stddef.h>

#include "model/eval.h"

#define LAG_BINS SERIES_LAG_BINS   /* >= LOOPSTAT_SPAN_BUCKETS */

struct lag_hist {
	int    exact;                /* bins are the runtime's log2 buckets, else the sampled quarter octaves */
	int    nbins;
	double n[LAG_BINS];          /* spans per bin */
	double sum[LAG_BINS];        /* their lengths summed, ns (0: unknown, the runtime's buckets) */
	double lo[LAG_BINS], hi[LAG_BINS]; /* bin edges, ns */
	double total;                /* spans */
	double max_ns;               /* the longest span seen (sampled, one in progress included); 0: none */
	int    samples;              /* the periods had samples at all */
	/* what the resolution rule (lag_resolved) weighs sampled spans by */
	int    spans_exact;          /* every track's spans are the kernel's (bpf), in the sampled bins */
	int    pooled;               /* a scheduler's pool: spans are runs of whole-pool ticks */
	double taken;                /* samples taken, each once */
	double busy_w, all_w;        /* weighted samples out of the loop's poll, and all */
	double wakes, wakes_ns;      /* sleeps of its own accord over wakes_ns (0: unknown) */
};

/* The spans of tracks ts[0..nt) pooled. */
void lag_collect(const struct eval_track *const *ts, size_t nt, struct lag_hist *h);

/* The p-th percentile (0 < p < 100) of h's spans in ns, interpolated in its
 * bin (around the bin's mean where its sum is known); p >= 100: the
 * longest. 0 with no span; NaN without samples. */
double lag_quantile(const struct lag_hist *h, double p);

/* h by octave into out[0..n): octave i holds the bins starting in
 * [2^(shift + i), 2^(shift + i + 1)) ns, the first also those below, the
 * last those above. */
void lag_octaves(const struct lag_hist *h, int shift, double *out, int n);

/*
 * Whether samples resolve a span figure of v_ns (a percentile or the
 * longest) read from h: exact spans always do; sampled ones only where
 * the spans and the idle gaps between them are LAG_RES_PERIODS sampling
 * periods long or more (the period the worker's samples actually reached)
 * and the busy samples do not fall as if at random (spans far shorter
 * than the period, merged: the nginx-under-ab case). When not, why (len
 * bytes, may be NULL) says which, and returns 0.
 */
#define LAG_RES_PERIODS 3
int lag_resolved(const struct lag_hist *h, double v_ns, char *why, size_t len);

/* METRIC_LAG: percentile pct of the spans over ts, in ms, as an observed
 * fact; unresolved by the samples (lag_resolved): ok, est NaN, unresolved. */
void lag_eval(const struct eval_track *const *ts, size_t nt, int pct, struct estimate *out);

/* Percentile pct of the spans over ts resolved: 1; else 0 with why. */
int lag_why(const struct eval_track *const *ts, size_t nt, int pct, char *why, size_t len);

#endif /* LOOPSTAT_LAG_H */
