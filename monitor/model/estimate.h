/*
 * estimate.h — the 95% interval of a metric estimated from an
 * autocorrelated per-second stream, for every view (the evaluator, model/eval.h) and so for `loopstat check`.
 *
 * Samples taken milliseconds apart are not independent (a worker stays
 * busy or idle for many samples in a row), so the binomial interval of the
 * TUI would be far too narrow for a CI gate. Here the stream is cut into
 * k batches of consecutive seconds (Schmeiser: 10..30 batches), k lowered
 * from 30 while the batch means' lag-1 autocorrelation shows the batches
 * are still dependent, and the interval is Student-t on the batch means
 * (ratio form, so seconds with more samples weigh more), widened by
 * (1+r)/(1−r) for what lag-1 correlation r remains. On synthetic streams
 * (bench/check_coverage, docs/check.md) it covers 0.93–0.97 once the run
 * is ~30 correlation times long or more, 0.89–0.92 at 7–15.
 *
 * Input: one struct est_sec per second, in time order.
 *   EST_PROPORTION  num = samples in the class (e.g. in the loop's poll),
 *                     den = samples taken that second; the estimate is
 *                     Σnum/Σden × scale (scale 100 for a *_pct metric).
 *   EST_RATE        num = the quantity in the second (e.g. ops done),
 *                     den = its weight (seconds of wall time it covers);
 *                     the estimate is Σnum/Σden × scale.
 *   EST_MAX         num = the second's maximum (stall_ms, runqueue_max),
 *                     den > 0 marks the second valid; the estimate is the
 *                     largest, an observed fact with a zero-width interval.
 * A second with den <= 0 carries no data and is skipped.
 */
#ifndef LOOPSTAT_ESTIMATE_H
#define LOOPSTAT_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

#define EST_BATCHES_MAX 30    /* Schmeiser's range of batch counts */
#define EST_BATCHES_MIN 10
#define EST_LAG1_MAX    0.1   /* batch means more correlated (bias-corrected lag 1) are dependent */
#define EST_LAG1_MAX_MIN 0.3  /* still this correlated at the fewest batches: flagged */

enum est_kind { EST_PROPORTION, EST_RATE, EST_MAX };

struct est_sec {
	double num, den;
	/* PROPORTION only: the sum of the squared weights of den's samples
	 * when they were weighted (precision-targeted sampling counts a sample
	 * taken at 1 tick in k as k); 0: den counts samples of weight 1. What
	 * the binomial floor counts is then Kish's size, Σden²/Σw2. */
	double w2;
};

struct estimate {
	enum est_kind kind;
	int      ok;        /* 0: no data at all (nothing to measure); the rest is NaN/0 */
	double   est;       /* point estimate, in the caller's units (× scale) */
	double   lo, hi;    /* 95% interval; ±inf when too few seconds to tell */
	double   se;        /* standard error of est (batch means), same units */
	double   df;        /* degrees of freedom of the t interval (batches − 1; inf for EST_MAX) */
	double   n;         /* samples (PROPORTION: Kish's size of Σden) or seconds with data (RATE, MAX) */
	double   n_eff;     /* independent units giving the same variance; <= n */
	unsigned batches;   /* k used; 0 for EST_MAX */
	double   batch_s;   /* mean seconds per batch */
	double   lag1;      /* lag-1 autocorrelation of the batch residuals (NaN if k < 3) */
	int      correlated; /* batches still dependent at the fewest batches: run longer */
	int      unresolved; /* ok, but the samples cannot resolve it (a lag from spans shorter than
	                      * the sampling period): est is NaN, a check on it inconclusive */
};

/*
 * Estimates the metric from nsec seconds. Returns 0, or -EINVAL for a NULL
 * pointer, a negative or non-finite value, or num > den for a proportion.
 * An empty stream is not an error: out->ok = 0.
 */
int est_batch_means(const struct est_sec *secs, size_t nsec, enum est_kind kind, double scale,
		   struct estimate *out);

/* The same estimate without its interval (lo = hi = est, se 0): what a
 * view that shows only the figure needs, at the cost of one pass. */
int est_point(const struct est_sec *secs, size_t nsec, enum est_kind kind, double scale, struct estimate *out);

/*
 * The interval of a − coef·b for two independent estimates (a run and its
 * baseline): se by the sum of variances, df by Welch–Satterthwaite. n and
 * n_eff are a's. A relative threshold `x >= baseline*F+C` is decided on
 * a − F·b against C. Returns 0 or -EINVAL.
 */
int est_diff(const struct estimate *a, const struct estimate *b, double coef,
	       struct estimate *out);

/*
 * est_diff for two runs whose figure also moves from run to run by more
 * than either run's own interval shows (its environment: placement, CPU
 * contention, the run's start), with variance run_var per run (units²): a
 * type B term (GUM) added to each run's, known, so of infinite df. Two
 * maxima (observed facts) take none.
 */
int est_diff_runs(const struct estimate *a, const struct estimate *b, double coef, double run_var,
		  struct estimate *out);

/*
 * The change of a share between two runs of independent samples: kb of nb
 * against ka of na, × scale (100: points). est = pb − pa; the 95% interval
 * is Newcombe's hybrid score interval (his method 10: each run's Wilson
 * interval, combined), honest at shares of 0 and for few samples, as a
 * profile frame's own share is (profile_node_share). n is nb. Returns 0 or
 * -EINVAL (counts above their totals, negative or non-finite ones); either
 * total 0: out->ok = 0.
 */
int est_share_diff(double ka, double na, double kb, double nb, double scale, struct estimate *out);

/* The 0.975 quantile of Student's t with df degrees of freedom (df >= 1; inf → normal). */
double est_t975(double df);

#endif /* LOOPSTAT_ESTIMATE_H */
