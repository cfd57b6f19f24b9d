/*
 * track.h — every worker's seconds, kept for a whole run: the sampler's
 * detail ring holds only the last SERIES_DETAIL_S, so a view that judges a
 * longer run (check) appends each worker's new complete seconds (a copy of
 * its bucket) from snapshots taken often enough, and evaluates any range
 * of them (eval.h).
 */
#ifndef LOOPSTAT_TRACK_H
#define LOOPSTAT_TRACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "collect/snapshot.h"
#include "model/eval.h"

/* One second of one worker. */
struct track_sec {
	struct series_bucket b;   /* as the sampler kept it (its stall maximum too); b.sec == -1: no data */
};

struct track {
	pid_t    pid, tid;
	char     name[PROBE_COMM_LEN];
	char     service[PROBE_SERVICE_LEN];
	char     tag[LOOPSTAT_TAG_LEN];
	int      instrumented;
	int      gone;            /* exited (or dropped by the sampler) since it was first seen */
	int      no_access;       /* /proc refused us */
	int      present;         /* in the latest snapshot */
	int64_t  first_sec;       /* second of sec[0] */
	struct track_sec *sec; /* owned: consecutive seconds from first_sec */
	size_t   n, cap;
	struct series_reading shm_first;   /* the worker's first readings: the baseline of its first second */
	struct series_sched sched_first;
	struct series_cgroup cg_first;
	uint64_t disagreements;   /* run total, as the series counts it */
	int      exact;           /* its class counts are exact (series.exact) */
	int      pooled;          /* a scheduler's pool (series.pooled) */
};

struct tracks {
	struct track *v;    /* owned */
	size_t   n, cap;
	int64_t  now_sec;         /* the snapshot's current second: seconds before it are complete */
};

void tracks_init(struct tracks *ts);
void tracks_done(struct tracks *ts);

/* Appends every worker's complete seconds from a snapshot taken with a
 * window of at least the time since the previous one (+2 s), and marks
 * workers that left it as gone. 0 or -ENOMEM. */
int tracks_update(struct tracks *ts, const struct snapshot *snap);

/* The record of second sec, NULL when it has none. */
const struct track_sec *track_at(const struct track *tr, int64_t sec);

/*
 * Evaluates row m (a worker row, or a fleet row: a roll-up of each
 * worker's own estimate) over seconds [lo, hi] of the tracks: one worker
 * (ntr 1), or several pooled as model_eval pools them. filter may be NULL.
 * 0 or -errno.
 */
int track_eval(const struct metric *m, const struct eval_filter *filter, const struct track *const *trs, size_t ntr,
	       int64_t lo, int64_t hi, unsigned flags, struct estimate *out);

/*
 * Sets the interval rows (model_row_is_interval) of m's workers that have
 * a track to the evaluator's interval over seconds [lo, hi] of it: what
 * check judges with over the same seconds; and the shares to their
 * figures over the same seconds, the ones check judges. No seconds: the
 * intervals unknown, the shares left as they are. 0 or -errno.
 */
int track_intervals(struct model *m, const struct tracks *ts, int64_t lo, int64_t hi);

#endif /* LOOPSTAT_TRACK_H */
