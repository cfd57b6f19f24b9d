/*
 * metric_table.h — the metric table's vocabulary: a figure's unit, its rule
 * (the evaluator's kind and argument), where it comes from, and the figures
 * themselves by id. The rows are designated initializers keyed by those ids
 * in metric_table.c (htop's Process_fields[]), each naming its unit, rule
 * and description; metric.h turns the ids into enum worker_metric and
 * enum fleet_metric, model.h into the figure fields of struct worker_view
 * and struct fleet_view. How a view lays a figure out (a column's title and
 * width, the dashboard's detail line) is the view's own table, keyed by
 * the same ids (top/tui_metrics.c, list.c's columns), as varnishstat keeps
 * its layout apart from the .vsc rows. Adding a figure is one id here, one
 * row in metric_table.c and its docs rows, which tests hold to it. A row's
 * Prometheus name, type and base unit follow from its name, unit and rule
 * (metric.h's metric_prom_*).
 */
#ifndef LOOPSTAT_METRIC_TABLE_H
#define LOOPSTAT_METRIC_TABLE_H

#include <stdint.h>

#include "collect/series.h"
#include "probe_shm.h"

enum metric_unit {
	METRIC_PCT,      /* "%", 0..100 of wall time (or of a CPU) */
	METRIC_POINTS,   /* "points": a half-width of an interval of a percentage */
	METRIC_PER_S,    /* "1/s"; the row's .counts says of what ("ops": check's "ops/s") */
	METRIC_MS,       /* "ms" */
	METRIC_COUNT,    /* "count": a number of things */
	METRIC_CPUS,     /* "cpus": CPU time per second of wall time, e.g. a quota */
};

/*
 * How a figure is computed: the rule the evaluator (model/eval.h) applies
 * to a worker's periods, with the row's arg.
 */
enum metric_kind {
	METRIC_SHARE,    /* a share of wall time: the samples of class arg (SERIES_*, or METRIC_ARG_UNKEYED)
	                  * among the off-CPU samples, scaled by schedstat's off-CPU share; RUNNING is
	                  * schedstat's runnable share itself (all samples when schedstat is unknown) */
	METRIC_INTERVAL, /* the half-width of the 95% interval of the share of class arg: the evaluator's (batch
	                  * means over the periods' whole seconds, as check judges with; 0 when measured exactly) */
	METRIC_LOWER,    /* that interval's lower bound */
	METRIC_UPPER,    /* and its upper bound */
	METRIC_RATE,     /* counter arg's (PROBE_SHM_*) growth per second */
	METRIC_RATIO,    /* a clock's growth over wall time: METRIC_ARG_RUN, _WAIT (schedstat), _POLL_NS (the slot) */
	METRIC_LEVEL,    /* counter arg as last read */
	METRIC_PEAK,     /* the largest value seen: METRIC_ARG_RUNQ, METRIC_ARG_STALL */
	METRIC_HEADROOM, /* counter arg's rate over the loop's busy share (1 − idle): the sustainable rate */
	METRIC_TALLY,    /* how many of something: METRIC_ARG_SAMPLES or _STALLS in the periods, else a run total */
	METRIC_LIMIT,    /* 1 when the limit verdict (model/limit.h) over the periods is arg (enum metric_limit), else 0 */
	METRIC_LAG,      /* the arg-th percentile of the busy spans (100: the longest, one in progress included),
	                  * from the slot's histogram where it has one, else from the samples (model/lag.h) */
	METRIC_POOLED,   /* the busiest helper pool's busy samples over its samples (arg METRIC_ARG_POOL_BUSY) */
};

/* What limits a worker (model/limit.h decides). */
enum metric_limit {
	METRIC_LIMIT_NONE, METRIC_LIMIT_LOOP, METRIC_LIMIT_QUOTA, METRIC_LIMIT_CPU, METRIC_LIMIT_BACKLOG, METRIC_LIMIT_POOL,
	METRIC_NLIMITS
};

/* The rule's argument where it is not a SERIES_ class or a PROBE_SHM_ counter. */
enum metric_arg {
	METRIC_ARG_NONE = -1,
	METRIC_ARG_UNKEYED = SERIES_NCLASS, /* blocked samples beyond the (syscall, fd) key table */
	/* apart from every SERIES_ class and PROBE_SHM_ counter, which a LEVEL's
	 * or a RATE's arg may also be */
	METRIC_ARG_RUN = 64,                /* schedstat: on a CPU */
	METRIC_ARG_WAIT,                    /* schedstat: runnable, waiting for a CPU */
	METRIC_ARG_POLL_NS,                 /* the slot's poll_time_ns, a poll in progress included */
	METRIC_ARG_RUNQ,                    /* the runqueue's length */
	METRIC_ARG_STALL,                   /* the time the switch counter stood still, the loop busy */
	METRIC_ARG_SAMPLES,                 /* samples taken */
	METRIC_ARG_DISAGREE,                /* cross-checks where /proc contradicted the slot (run total) */
	METRIC_ARG_THROTTLED,               /* the cgroup's throttled time (a RATIO's clock) */
	METRIC_ARG_QUOTA,                   /* the cgroup's CPU quota (a LEVEL) */
	METRIC_ARG_ACCEPTQ,                 /* the fullest listening socket's accept queue (a LEVEL, a PEAK) */
	METRIC_ARG_BACKLOG,                 /* and its backlog (a LEVEL) */
	METRIC_ARG_STALLS,                  /* stalls captured (a TALLY over the periods) */
	METRIC_ARG_POOL_THREADS,            /* the busiest helper pool's threads (a LEVEL) */
	METRIC_ARG_POOL_BUSY,               /* its samples out of its wait (a POOLED) */
};
_Static_assert((int)PROBE_SHM_NVALUES < (int)METRIC_ARG_RUN && (int)SERIES_NCLASS < (int)METRIC_ARG_RUN,
	       "the arg spaces overlap");

/* Where a worker's figure comes from; JSON nests COUNTERS under
 * "counters", present for instrumented workers only. */
enum metric_source {
	METRIC_SAMPLED,  /* /proc/PID/task/TID/syscall samples */
	METRIC_SCHED,    /* /proc/PID/task/TID/schedstat */
	METRIC_COUNTERS, /* the worker's shared-memory slot */
	METRIC_FLEET,    /* a roll-up over the workers */
};

enum metric_type { METRIC_DOUBLE, METRIC_U64, METRIC_UNSIGNED };

/* How a fleet row rolls a worker row up (its .reduce). */
enum metric_reduce { METRIC_R_COUNT, METRIC_R_MEAN, METRIC_R_SUM, METRIC_R_MIN };

/*
 * The figures by id: X(name, C type). Each is a field of struct worker_view
 * (or struct fleet_view) of that type, an enumerator METRIC_W_name (or
 * METRIC_F_name) and the row of that id in metric_worker[] (metric_fleet[]).
 */
#define METRIC_WORKER_IDS(X) \
	X(samples, U64) \
	X(idle_pct, DOUBLE) \
	X(idle_ci95, DOUBLE) \
	X(idle_lo, DOUBLE) \
	X(idle_hi, DOUBLE) \
	X(cpu_pct, DOUBLE) \
	X(cpu_wait_pct, DOUBLE) \
	X(running_pct, DOUBLE) \
	X(blocked_pct, DOUBLE) \
	X(other_pct, DOUBLE) \
	X(blocked_unkeyed_pct, DOUBLE) \
	X(ops_per_s, DOUBLE) \
	X(switches_per_s, DOUBLE) \
	X(polls_per_s, DOUBLE) \
	X(completions_per_s, DOUBLE) \
	X(runqueue_len, DOUBLE) \
	X(runqueue_max, DOUBLE) \
	X(pending_ops, DOUBLE) \
	X(fibers, DOUBLE) \
	X(self_idle_pct, DOUBLE) \
	X(self_report_disagreements, U64) \
	X(stall_ms, DOUBLE) \
	X(lag_p50_ms, DOUBLE) \
	X(lag_p99_ms, DOUBLE) \
	X(lag_max_ms, DOUBLE) \
	X(stalls_captured, U64) \
	X(headroom_ops_per_s, DOUBLE) \
	X(quota_cpus, DOUBLE) \
	X(throttled_pct, DOUBLE) \
	X(accept_queue, DOUBLE) \
	X(accept_queue_max, DOUBLE) \
	X(accept_queue_limit, DOUBLE) \
	X(pool_threads, DOUBLE) \
	X(pool_busy_pct, DOUBLE) \
	X(limit_loop, DOUBLE) \
	X(limit_quota, DOUBLE) \
	X(limit_cpu, DOUBLE) \
	X(limit_backlog, DOUBLE) \
	X(limit_pool, DOUBLE)

#define METRIC_FLEET_IDS(X) \
	X(workers, UNSIGNED) \
	X(mean_idle_pct, DOUBLE) \
	X(ops_per_s, DOUBLE) \
	X(headroom_ops_per_s, DOUBLE) \
	X(idle_pct_min, DOUBLE)

/* The C type of a row's field. */
#define METRIC_CTYPE_DOUBLE   double
#define METRIC_CTYPE_U64      uint64_t
#define METRIC_CTYPE_UNSIGNED unsigned

#endif /* LOOPSTAT_METRIC_TABLE_H */
