/*
 * metric_table.h — the metric table itself: one X-macro row per figure
 * (Varnish's VSC_F, htop's Process_fields[]), with its rule and where it
 * is shown. metric.h turns the rows into struct metric entries that every
 * view walks; model.h turns them into the figure fields of struct
 * worker_view and struct fleet_view. Adding a figure is one row here (and
 * its docs rows, which tests hold to it). A row's Prometheus name, type and
 * base unit follow from its name, unit and rule (metric.h's metric_prom_*):
 * a "%" row idle_pct is worker_idle_ratio (0..1), a RATE of slot counter
 * ops is the counter worker_ops_total, a "ms" row ends in _seconds.
 */
#ifndef LOOPSTAT_METRIC_TABLE_H
#define LOOPSTAT_METRIC_TABLE_H

#include <stdint.h>

#include "collect/series.h"
#include "probe_shm.h"

enum metric_unit {
	METRIC_PCT,      /* "%", 0..100 of wall time (or of a CPU) */
	METRIC_POINTS,   /* "points": a half-width of an interval of a percentage */
	METRIC_PER_S,    /* "1/s" */
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

/* The dashboard's detail view: which line shows the figure. */
enum metric_line {
	METRIC_LINE_NONE,     /* shown elsewhere (a table column, another's interval) */
	METRIC_LINE_IDENTITY, /* the line under the worker's identity */
	METRIC_LINE_BAR,      /* "Where the time goes", as a bar */
	METRIC_LINE_CPU,      /* the cpu line under the bars */
	METRIC_LINE_RATES,    /* runtime: ops/s, switches/s ... */
	METRIC_LINE_QUEUES,   /* runtime: runqueue, pending ops, fibers */
	METRIC_LINE_SELF,     /* runtime: self-measured idle, headroom */
	METRIC_LINE_BLOCKERS, /* under the "Blocked in" list, when not 0 */
	METRIC_LINE_LISTEN,   /* under the cpu line: the listen backlog, for a worker that listens */
	METRIC_LINE_POOL,     /* under that: the busiest helper pool, for a process that has one */
	METRIC_LINE_LIMIT,    /* under those: the limit that holds (1), with its reason */
	METRIC_LINE_LAG,      /* "Busy spans", above their histogram */
};

/* Which worker tables show the figure as a column, in the table's row order. */
enum metric_cols {
	METRIC_COL_NONE,
	METRIC_COL_LIST,      /* list's text table only */
	METRIC_COL_ALL,       /* list's text table and the dashboard's */
};

/* How a fleet row rolls a worker row up (FLEET_METRICS' "reduce"). */
enum metric_reduce { METRIC_R_COUNT, METRIC_R_MEAN, METRIC_R_SUM, METRIC_R_MIN };

/*
 * X(name, unit, kind, arg, source, type, json_decimals, sort_desc, line, detail, interval,
 *   cols, title, width, drop, description)
 *   arg       the rule's argument (see enum metric_kind)
 *   detail    the detail view's text for the value ("%s" is the formatted value), NULL if none;
 *             on a line, parts are joined by two spaces, a part starting with one is glued on
 *   interval  the metric holding this one's 95% half-width, NULL if none
 *   sort_desc busiest first: 1 when a larger value means a busier worker
 *   cols      the tables that show it as a column, titled title, width cells wide; drop: the
 *             dashboard's drop order on a narrow terminal (1 goes first, 0 never)
 */
#define WORKER_METRICS(X) \
	X(samples,            COUNT,  TALLY,    METRIC_ARG_SAMPLES, SAMPLED, U64, 0, 0, IDENTITY, "%s samples", NULL, \
	  NONE, NULL, 0, 0, \
	  "syscall samples taken") \
	X(idle_pct,           PCT,    SHARE,    SERIES_POLL, SAMPLED,  DOUBLE, 2, 0, BAR,    "idle", "idle_ci95", \
	  ALL, "IDLE%", 5, 0, \
	  "share of wall time in the loop's own poll: spare capacity") \
	X(idle_ci95,          POINTS, INTERVAL, SERIES_POLL, SAMPLED,  DOUBLE, 2, 0, NONE,   NULL, NULL, \
	  LIST, "±", 5, 0, \
	  "half-width of the 95% interval of idle_pct") \
	X(idle_lo,            PCT,    LOWER,    SERIES_POLL, SAMPLED,  DOUBLE, 2, 0, NONE,   NULL, NULL, \
	  NONE, NULL, 0, 0, \
	  "lower bound of the 95% interval of idle_pct: the one check judges with") \
	X(idle_hi,            PCT,    UPPER,    SERIES_POLL, SAMPLED,  DOUBLE, 2, 0, NONE,   NULL, NULL, \
	  NONE, NULL, 0, 0, \
	  "upper bound of the 95% interval of idle_pct: the one check judges with") \
	X(cpu_pct,            PCT,    RATIO,    METRIC_ARG_RUN, SCHED, DOUBLE, 2, 1, CPU,    "cpu %s%%", NULL, \
	  ALL, "CPU%", 5, 6, \
	  "CPU time over wall time") \
	X(cpu_wait_pct,       PCT,    RATIO,    METRIC_ARG_WAIT, SCHED, DOUBLE, 2, 1, CPU,   "waiting for a cpu %s%%", NULL, \
	  NONE, NULL, 0, 0, \
	  "time runnable but waiting for a CPU over wall time") \
	X(running_pct,        PCT,    SHARE,    SERIES_RUNNING, SAMPLED, DOUBLE, 2, 1, BAR,  "running", NULL, \
	  NONE, NULL, 0, 0, \
	  "share of wall time runnable: on a CPU or waiting for one") \
	X(blocked_pct,        PCT,    SHARE,    SERIES_BLOCKED, SAMPLED, DOUBLE, 2, 1, BAR,  "blocked", NULL, \
	  ALL, "BLOCKED%", 8, 7, \
	  "share of wall time in any other syscall") \
	X(other_pct,          PCT,    SHARE,    SERIES_OTHER, SAMPLED, DOUBLE, 2, 1, BAR,    "other", NULL, \
	  NONE, NULL, 0, 0, \
	  "share of wall time neither in a syscall nor runnable") \
	X(blocked_unkeyed_pct, PCT,   SHARE,    METRIC_ARG_UNKEYED, SAMPLED, DOUBLE, 2, 1, BLOCKERS, \
	  "%s%% in syscalls and fds beyond the table's room", NULL, \
	  NONE, NULL, 0, 0, \
	  "share of wall time blocked in (syscall, fd) pairs the sampler had no room to tell apart") \
	X(ops_per_s,          PER_S,  RATE,     PROBE_SHM_ops, COUNTERS, DOUBLE, 2, 1, RATES, "ops/s %s", NULL, \
	  ALL, "OPS/s", 7, 8, \
	  "operations per second") \
	X(switches_per_s,     PER_S,  RATE,     PROBE_SHM_switches, COUNTERS, DOUBLE, 2, 1, RATES, "switches/s %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "fiber switches per second") \
	X(polls_per_s,        PER_S,  RATE,     PROBE_SHM_polls, COUNTERS, DOUBLE, 2, 1, RATES, "polls/s %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "backend polls per second") \
	X(completions_per_s,  PER_S,  RATE,     PROBE_SHM_completions, COUNTERS, DOUBLE, 2, 1, RATES, "completions/s %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "completions reaped per second") \
	X(runqueue_len,       COUNT,  LEVEL,    PROBE_SHM_runqueue_len, COUNTERS, DOUBLE, 0, 1, QUEUES, "runqueue %s", NULL, \
	  ALL, "RUNQ", 4, 3, \
	  "fibers ready to run, as last read") \
	X(runqueue_max,       COUNT,  PEAK,     METRIC_ARG_RUNQ, COUNTERS, DOUBLE, 0, 1, QUEUES, " (max %s)", NULL, \
	  NONE, NULL, 0, 0, \
	  "the most fibers ready to run seen in the window") \
	X(pending_ops,        COUNT,  LEVEL,    PROBE_SHM_pending_ops, COUNTERS, DOUBLE, 0, 1, QUEUES, "pending ops %s", NULL, \
	  ALL, "PEND", 4, 2, \
	  "operations in flight, as last read") \
	X(fibers,             COUNT,  LEVEL,    PROBE_SHM_fibers_live, COUNTERS, DOUBLE, 0, 1, QUEUES, "fibers %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "live fibers, as last read") \
	X(self_idle_pct,      PCT,    RATIO,    METRIC_ARG_POLL_NS, COUNTERS, DOUBLE, 2, 0, SELF, "self-measured idle %s%%", NULL, \
	  NONE, NULL, 0, 0, \
	  "the runtime's own idle measure: time blocked in its poll over wall time") \
	X(self_report_disagreements, COUNT, TALLY, METRIC_ARG_DISAGREE, COUNTERS, U64, 0, 1, SELF, \
	  "self-report disagreements %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "cross-checks where /proc contradicted the worker's own claim to be in its poll (a finding in itself)") \
	X(stall_ms,           MS,     PEAK,     METRIC_ARG_STALL, COUNTERS, DOUBLE, 2, 1, NONE, NULL, NULL, \
	  ALL, "STALL", 6, 9, \
	  "the longest time in the window the loop ran without switching fibers (from 250 ms on), 0 when none") \
	X(lag_p50_ms,         MS,     LAG,      50, SAMPLED, DOUBLE, 2, 1, LAG, "p50 %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "the median busy span (leaving the poll to re-entering it): exact from the runtime's histogram, else sampled") \
	X(lag_p99_ms,         MS,     LAG,      99, SAMPLED, DOUBLE, 2, 1, LAG, "p99 %s", NULL, \
	  ALL, "LAG99", 6, 1, \
	  "the 99th percentile of the busy spans: the delay 1 % of them exceed") \
	X(lag_max_ms,         MS,     LAG,      100, SAMPLED, DOUBLE, 2, 1, LAG, "max %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "the longest busy span, one still in progress included") \
	X(stalls_captured,    COUNT,  TALLY,    METRIC_ARG_STALLS, SAMPLED, U64, 0, 1, LAG, "stalls %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "stalls captured: times the worker was found out of its poll longer than --stall-ms (default 100 ms)") \
	X(headroom_ops_per_s, PER_S,  HEADROOM, PROBE_SHM_ops, COUNTERS, DOUBLE, 2, 0, SELF, "headroom %s ops/s", NULL, \
	  NONE, NULL, 0, 0, \
	  "sustainable rate: ops/s over (1 - idle), unknown when idle >= 99%") \
	X(quota_cpus,         CPUS,   LEVEL,    METRIC_ARG_QUOTA, SCHED, DOUBLE, 2, 0, CPU,  "quota %s cpus", NULL, \
	  NONE, NULL, 0, 0, \
	  "the CPU quota of the worker's cgroup in CPUs (quota over period), as last read; unknown without one") \
	X(throttled_pct,      PCT,    RATIO,    METRIC_ARG_THROTTLED, SCHED, DOUBLE, 2, 1, CPU, "throttled %s%%", NULL, \
	  NONE, NULL, 0, 0, \
	  "time the worker's cgroup was held back by its CPU quota, over wall time") \
	X(accept_queue,       COUNT,  LEVEL,    METRIC_ARG_ACCEPTQ, SCHED, DOUBLE, 0, 1, LISTEN, "accept queue %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "connections waiting in the fullest listening socket's accept queue, as last read; unknown without one") \
	X(accept_queue_max,   COUNT,  PEAK,     METRIC_ARG_ACCEPTQ, SCHED, DOUBLE, 0, 1, LISTEN, " (max %s)", NULL, \
	  NONE, NULL, 0, 0, \
	  "the longest accept queue read in the window (once a second)") \
	X(accept_queue_limit, COUNT,  LEVEL,    METRIC_ARG_BACKLOG, SCHED, DOUBLE, 0, 1, LISTEN, " of %s", NULL, \
	  NONE, NULL, 0, 0, \
	  "that socket's listen backlog: the queue's limit") \
	X(pool_threads,       COUNT,  LEVEL,    METRIC_ARG_POOL_THREADS, SCHED, DOUBLE, 0, 1, POOL, "pool of %s threads", NULL, \
	  NONE, NULL, 0, 0, \
	  "threads of the busiest helper pool of the worker's process (list --json's pools), as last read") \
	X(pool_busy_pct,      PCT,    POOLED,   METRIC_ARG_POOL_BUSY, SCHED, DOUBLE, 2, 1, POOL, " busy %s%%", NULL, \
	  NONE, NULL, 0, 0, \
	  "share of that pool's threads' samples out of the pool's wait: 100 is a saturated pool") \
	X(limit_loop,         COUNT,  LIMIT,    METRIC_LIMIT_LOOP, SAMPLED, DOUBLE, 0, 1, LIMIT, "limited by the loop", NULL, \
	  NONE, NULL, 0, 0, \
	  "1 when the loop itself limits the worker (busy or blocked: docs/usage.md's rules), else 0") \
	X(limit_quota,        COUNT,  LIMIT,    METRIC_LIMIT_QUOTA, SAMPLED, DOUBLE, 0, 1, LIMIT, "limited by its CPU quota", NULL, \
	  NONE, NULL, 0, 0, \
	  "1 when the cgroup's CPU quota limits the worker, else 0") \
	X(limit_cpu,          COUNT,  LIMIT,    METRIC_LIMIT_CPU, SAMPLED, DOUBLE, 0, 1, LIMIT, "limited by waiting for a CPU", NULL, \
	  NONE, NULL, 0, 0, \
	  "1 when waiting for a CPU (contention) limits the worker, else 0") \
	X(limit_backlog,      COUNT,  LIMIT,    METRIC_LIMIT_BACKLOG, SAMPLED, DOUBLE, 0, 1, LIMIT, "limited by its listen backlog", NULL, \
	  NONE, NULL, 0, 0, \
	  "1 when connections wait in the accept queue of a loop that is not busy, else 0") \
	X(limit_pool,         COUNT,  LIMIT,    METRIC_LIMIT_POOL, SAMPLED, DOUBLE, 0, 1, LIMIT, "limited by its helper pool", NULL, \
	  NONE, NULL, 0, 0, \
	  "1 when a saturated helper pool of the worker's process limits it while its loop waits, else 0")

/*
 * X(name, unit, reduce, of, type, json_decimals, sort_desc, detail, description): a
 * roll-up of worker row `of` over the workers that have it; detail is its
 * part of the dashboard's fleet line ("%s" the formatted value).
 */
#define FLEET_METRICS(X) \
	X(workers,            COUNT,  COUNT, samples,            UNSIGNED, 0, 1, "workers %s", \
	  "workers listed") \
	X(mean_idle_pct,      PCT,    MEAN,  idle_pct,           DOUBLE,   2, 0, "mean idle %s%%", \
	  "mean idle_pct over the workers that have one") \
	X(ops_per_s,          PER_S,  SUM,   ops_per_s,          DOUBLE,   2, 1, "ops/s %s", \
	  "sum of ops_per_s over the instrumented workers") \
	X(headroom_ops_per_s, PER_S,  SUM,   headroom_ops_per_s, DOUBLE,   2, 0, "headroom %s ops/s", \
	  "sum of headroom_ops_per_s over the workers where it is known") \
	X(idle_pct_min,       PCT,    MIN,   idle_pct,           DOUBLE,   2, 0, "min idle %s%%", \
	  "the lowest idle_pct of the workers: the busiest worker's spare capacity")

/* The C type of a row's field. */
#define METRIC_CTYPE_DOUBLE   double
#define METRIC_CTYPE_U64      uint64_t
#define METRIC_CTYPE_UNSIGNED unsigned

#endif /* LOOPSTAT_METRIC_TABLE_H */
