/*
 * eval_int.h — what the evaluator's two halves share: the per-period
 * streams a rule becomes (eval_stream.c) and their estimate (eval.c).
 */
#ifndef LOOPSTAT_EVAL_INT_H
#define LOOPSTAT_EVAL_INT_H

#include "model/eval.h"

#define NS 1000000000ull
/* Rates and ratios over less than this much time are noise. */
#define RATE_MIN_NS (50ull * 1000000)

/* ---- per-period streams ---- */

enum stream {
	S_CLASS,     /* samples of a class over the off-CPU samples, or over all (basis_all) */
	S_BUSY,      /* runnable ns (run + wait) over elapsed ns */
	S_SCHED,     /* run (arg RUN) or wait (arg WAIT) ns over elapsed ns */
	S_THROTTLE,  /* the cgroup's throttled ns over elapsed ns */
	S_COUNTER,   /* counter arg's growth over elapsed seconds */
	S_POLLNS,    /* poll time over elapsed ns, a poll in progress included */
	S_RUNQMAX,   /* the runqueue's largest reading in the period */
	S_STALL,     /* the longest stall seen in the period, ms */
	S_ACCEPTQ,   /* the longest accept queue read in the period */
	S_POOL,      /* the busiest pool's busy samples over its samples */
	S_SAMPLES,   /* samples taken (a tally) */
	S_STALLS,    /* stalls captured (a tally) */
};

/* How several workers' periods combine. */
enum combine { C_POOL, C_SUM, C_MAX };

struct stream_spec {
	enum stream st;
	int  arg;
	int  basis_all;
	const struct eval_filter *filter;   /* blocked samples matching it only */
};

/* The estimate of stream sp over the tracks' periods, combined as how:
 * batch means with EVAL_INTERVAL in flags, else a point; 0 or -ENOMEM. */
int stream_estimate(const struct eval_track *const *ts, size_t nt, const struct stream_spec *sp, enum combine how,
		    enum est_kind kind, double scale, unsigned flags, struct estimate *out);

#endif
