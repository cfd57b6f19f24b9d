/*
 * limit.h — what limits a worker, as one verdict from its figures: the
 * rules of LIMIT_RULES, tried in order, the first that holds decides
 * (docs/usage.md lists them; a test holds the docs to this table).
 *
 * The order matters: a throttled thread is runnable, so the quota's time
 * also reads as waiting for a CPU; a loop that waits for a CPU reads busy;
 * a busy loop limits it whatever its pool does; a loop that waits for its
 * saturated pool is held back by the pool; and a busy loop (or pool) is
 * why connections wait, where an idle one that leaves them waiting is held
 * back by its accepting. The quota holds back only a worker whose process
 * spends it (a fifth of its group's CPU or more): one that only shares the
 * group keeps its headroom bound by the quota but gets no quota verdict,
 * nor a CPU one for the waits the group's throttling causes.
 */
#ifndef LOOPSTAT_LIMIT_H
#define LOOPSTAT_LIMIT_H

#include <stddef.h>

#include "model/metric_table.h"

/*
 * X(kind, metric, op, threshold, reason): the worker is limited by kind
 * when metric op threshold; reason is said with the figure ("%.0f").
 */
#define LIMIT_RULES(X) \
	X(QUOTA, throttled_pct, >=, 10, "its cgroup's CPU quota held it back %.0f%% of the time") \
	X(CPU,   cpu_wait_pct,  >=, 20, "it waited for a CPU %.0f%% of the time") \
	X(LOOP,  idle_pct,      <,  20, "its loop was idle only %.0f%% of the time") \
	X(POOL,  pool_busy_pct, >=, 80, "its helper pool was busy %.0f%% of the time while its loop waited") \
	X(BACKLOG, accept_queue_max, >=, 20, "%.0f connections waited in its accept queue, a second later too")

/* "none", "loop", "quota", "cpu", "backlog", "pool". Static. */
const char *model_limit_name(enum metric_limit l);

/* The verdict from fig[kind], each rule's figure (NaN: unknown, never
 * trips its rule), and why in why (may be NULL); -1 when the loop's own
 * figure (idle_pct) is unknown. */
int model_limit_verdict(const double fig[METRIC_NLIMITS], char *why, size_t len);

/* fig of a worker whose process only shares its group's quota, others
 * spending it: neither the quota's rule nor, while the group is throttled
 * past that rule, the CPU's (its waits for a CPU are the throttling). */
void model_limit_shared_quota(double fig[METRIC_NLIMITS]);

/* fig's backlog figure (the window's longest accept queue) no longer than
 * held, the queue at the last two readings (model_eval_acceptq_held): a
 * burst that filled the queue and drained, the loop idle, is no backlog. */
void model_limit_backlog_held(double fig[METRIC_NLIMITS], double held);

struct worker_view;
struct eval_track;

/* The accept queue at the last two readings in the periods (a second
 * apart), the lesser: a queue that did not drain in between; the one
 * reading when there is only one, NaN when none. The largest over ts. */
double model_eval_acceptq_held(const struct eval_track *const *ts, size_t nt);

/* 1 when, at the last reading in the periods that knows, each worker's
 * process spent almost none of its group's CPU: others spend the quota it
 * shares (collect/series.h's shared_only); 0 otherwise. */
int model_eval_quota_shared(const struct eval_track *const *ts, size_t nt);

/* The verdict of a worker's view, from the same figures. */
int model_limit_of(const struct worker_view *w, char *why, size_t len);

/* The figure of verdict's rule for w (throttled_pct for quota...; the
 * loop's idle_pct for none): what the verdict was read from. NaN when
 * unknown. */
double model_limit_reading(const struct worker_view *w, int verdict);

#endif /* LOOPSTAT_LIMIT_H */
