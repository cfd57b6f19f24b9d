/*
 * check_series.h — what `loopstat check` measures: every worker's seconds,
 * kept for the whole check (the sampler's detail ring holds only the last
 * SERIES_DETAIL_S), and the estimate of a threshold's metric over a range
 * of them, through the batch-means interval of estimate.h.
 *
 * The feed (model/feed.h) reads the source every FEED_POLL_MS and appends
 * each worker's new complete seconds (a copy of the sampler's bucket, plus
 * the largest stall seen during that second), so a check may run far
 * longer than the ring. The threshold names are the metric table's rows
 * (metric.h) that have a per-second form here; see docs/check.md for how
 * each becomes per-second inputs and how that matches the model's figure.
 */
#ifndef LOOPSTAT_CHECK_SERIES_H
#define LOOPSTAT_CHECK_SERIES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "check/check_expr.h"
#include "model/estimate.h"
#include "model/metric.h"
#include "model/track.h"

#define CHECK_UNIT_LEN  24

/* The threshold names: one row per metric-table row that has a per-second
 * form (units spelled for check_expr: "%", "ms", "ops/s", "" for a count;
 * blocked_pct takes syscall= and fd= filters). Static storage, built once. */
const struct check_metric *check_series_metrics(size_t *n);

/* check_parse_ctx.filter_ok: syscall names of this architecture (probe_syscall_nr), fds >= 0. */
int check_series_filter_ok(void *arg, const struct check_metric *m, const char *key, const char *value, char *why,
			   size_t whylen);

/*
 * The estimate of t's metric over seconds [lo, hi] of the tracks: one
 * worker (ntr 1), or the fleet: percentages pooled over the workers
 * (sample- and time-weighted means), rates and levels summed, maxima the
 * largest. 0 or -errno (-EINVAL: a metric without a per-second form).
 */
int check_series_estimate(const struct track *const *trs, size_t ntr, int64_t lo, int64_t hi,
			  const struct check_threshold *t, struct estimate *out);

#endif /* LOOPSTAT_CHECK_SERIES_H */
