/*
 * eval.h — the one evaluator: any row of the metric table (metric.h) over
 * any range of a worker's periods, or of several workers' at once, with
 * its value and, when asked, its 95% interval (batch means, estimate.h:
 * honest for autocorrelated samples).
 *
 * A period is one second of a worker's series, or a whole run folded into
 * one (the totals: list's and export's default window). Every view's
 * figure comes from here: the model's windows (model_window.c), export's
 * per-second points, check's thresholds, so over the same periods they
 * cannot differ.
 *
 * How each rule becomes per-period sums (so that over a range they are the
 * window's figure, whatever the batching):
 *   shares   schedstat's runnable share R splits the time: the off-CPU
 *            samples divide the rest, share = 100 (1 − R) · n/off, the
 *            delta method's variance (1−R)² var p + p² var R; without
 *            schedstat every sample counts. RUNNING is R itself.
 *   ratios   Δclock over Δt between the periods' last readings.
 *   rates    Δcounter over Δt between the periods' last readings.
 *   levels   the last reading in the range.
 *   peaks    the largest of the periods' maxima.
 *   headroom the rate over (1 − idle/100), unbounded (+inf) at idle >= 99%.
 * Periods are chained on their last readings from the baseline reading
 * before the range, so the sums telescope to the range's deltas; rates and
 * ratios over less than 50 ms of readings are unknown.
 */
#ifndef LOOPSTAT_EVAL_H
#define LOOPSTAT_EVAL_H

#include <stddef.h>
#include <stdint.h>

#include "collect/series.h"
#include "model/estimate.h"
#include "model/metric.h"

/* One period: the bucket's counts, last readings, runqueue and stall
 * maxima, and its (syscall, fd) keys (the bucket's, or the run's). */
struct eval_period {
	const struct series_bucket *b;       /* borrowed; NULL: no data in the period */
	const struct series_block *blocks;   /* nblocks keys */
	int      nblocks;
	uint32_t blocks_overflow;
	const uint32_t *lag_total;           /* a run's period: the run's busy-span bins (else b's own) */
	const uint64_t *lag_sum_total;       /* and their lengths summed, us */
	uint64_t lag_max_ns;                 /* and its longest span */
	const uint64_t *n2_total;            /* a run's period: the run's squared-weight sums (else b's n2) */
	uint64_t taken_total;                /* and its samples taken (else b's taken) */
};

/* A worker's consecutive periods, and the readings before the first. */
struct eval_track {
	const struct eval_period *p;         /* borrowed; n of them, in time order */
	size_t   n;
	struct series_reading shm_base;      /* valid 0: none (rates start at the first period's reading) */
	struct series_sched sched_base;
	struct series_cgroup cg_base;
	struct series_exact exact_base;      /* the kernel's counts before the first period (bpf), valid 0: none */
	uint64_t disagreements;              /* run total of /proc contradicting the slot (a TALLY) */
	int      exact;                      /* the class counts are exact: a share's interval is its value */
	int      pooled;                     /* a scheduler's pool: its spans are runs of whole-pool ticks */
};

/* blocked_pct's filter: blocked samples of this syscall and fd only (-1: any). */
struct eval_filter {
	long nr;
	int  fd;
};

#define EVAL_INTERVAL 1u   /* also the 95% interval; else the value only (est), cheaply */

/*
 * Evaluates worker row m over tracks ts[0..nt) (all of the same length):
 * one worker, or several pooled (shares), summed (rates, levels) or the
 * largest (peaks), period by period. filter may be NULL. out->ok is 0 when
 * no period has data for the rule; out->est is then NaN. Returns 0, or
 * -EINVAL (a fleet row, no tracks, unequal lengths), -ENOMEM.
 */
int model_eval(const struct metric *m, const struct eval_track *const *ts, size_t nt,
	       const struct eval_filter *filter, unsigned flags, struct estimate *out);

/* The first and the last exact reading (the bpf source) of track t:
 * 0 when they are half a second apart at least, else -ENOENT. */
int model_eval_exact_ends(const struct eval_track *t, const struct series_exact **first,
			  const struct series_exact **last);

/*
 * Evaluates fleet row m from the per-worker estimates of the row it rolls
 * up (ests[i] for worker i; those not ok are skipped): COUNT counts them
 * all, MEAN averages, SUM adds (standard errors in quadrature), MIN takes
 * the least (its interval: the least of the bounds).
 */
void model_eval_fleet(const struct metric *m, const struct estimate *ests, size_t n, struct estimate *out);

/* A track over seconds [lo, hi] of series a (its detail ring: at most
 * SERIES_DETAIL_S - 1 seconds; p has room for hi - lo + 1). The baseline is
 * the reading in second lo − 1, else the worker's first reading when it
 * was taken in the range. */
void eval_track_seconds(struct eval_track *t, struct eval_period *p, const struct series *a, int64_t lo, int64_t hi);

/* A track of one period, the whole run (a's totals; b is the folded
 * bucket's storage), its baseline the worker's first readings. */
void eval_track_run(struct eval_track *t, struct eval_period *p, struct series_bucket *b, const struct series *a);

/*
 * The one split of wall time by a period's samples (the "shares" above):
 * with schedstat's runnable share known (NaN: not) and samples taken off
 * the CPU, the runnable share is the running share and the off-CPU samples
 * divide the rest; else every sample counts. Sets *running and *scale (the
 * share of time the basis covers), both 0..1; returns the basis's samples
 * (0: none, and both NaN).
 */
double eval_split(double runnable, double n_running, double n_off, double *running, double *scale);

/* The period of a bucket (NULL or not that second's: no data). */
void eval_period_of(struct eval_period *p, const struct series_bucket *b, int64_t sec);

#endif /* LOOPSTAT_EVAL_H */
