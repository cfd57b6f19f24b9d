/*
 * metric.h — every figure a view shows, defined once (as Varnish's VSC_F and
 * htop's Process_fields[]): name, unit, kind, where it lives in the view
 * struct, JSON decimals, natural sort direction, labels and description.
 * The JSON writer, the text table, the dashboard's columns and detail
 * lines, the docs test — and export's names and check's thresholds — walk
 * these tables; adding a metric is one line here plus its docs row.
 */
#ifndef LOOPSTAT_METRIC_H
#define LOOPSTAT_METRIC_H

#include <stddef.h>

#include "model/model.h"

enum metric_unit {
	METRIC_PCT,      /* "%", 0..100 of wall time (or of a CPU) */
	METRIC_POINTS,   /* "points": a half-width of an interval of a percentage */
	METRIC_PER_S,    /* "1/s" */
	METRIC_MS,       /* "ms" */
	METRIC_COUNT,    /* "count": a number of things */
};

enum metric_kind {
	METRIC_SHARE,    /* a share of the window's syscall samples */
	METRIC_INTERVAL, /* the 95% half-width of a share */
	METRIC_RATE,     /* a counter's growth over the window */
	METRIC_RATIO,    /* a ratio of two counters' growth (cpu%, self-measured idle) */
	METRIC_LEVEL,    /* a gauge as last read */
	METRIC_PEAK,     /* the largest value seen in the window */
	METRIC_TALLY,    /* how many of something the window holds */
};

/* Where a worker's figure comes from; JSON nests COUNTERS under
 * "counters", present for instrumented workers only. */
enum metric_source {
	METRIC_SAMPLED,  /* /proc/PID/task/TID/syscall samples */
	METRIC_SCHED,    /* /proc/PID/task/TID/schedstat */
	METRIC_COUNTERS, /* the worker's shared-memory slot */
	METRIC_FLEET,    /* totals over the workers */
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
};

/*
 * X(name, unit, kind, source, type, json_decimals, sort_desc, line, detail, interval, description)
 *   detail    the detail view's text for the value ("%s" is the formatted value), NULL if none;
 *             on a line, parts are joined by two spaces, a part starting with one is glued on
 *   interval  the metric holding this one's 95% half-width, NULL if none
 *   sort_desc busiest first: 1 when a larger value means a busier worker
 */
#define WORKER_METRICS(X) \
	X(samples,            COUNT,  TALLY,    SAMPLED,  U64,    0, 0, IDENTITY, "%s samples", NULL, \
	  "syscall samples taken") \
	X(idle_pct,           PCT,    SHARE,    SAMPLED,  DOUBLE, 2, 0, BAR,    "idle", "idle_ci95", \
	  "share of wall time in the loop's own poll: spare capacity") \
	X(idle_ci95,          POINTS, INTERVAL, SAMPLED,  DOUBLE, 2, 0, NONE,   NULL, NULL, \
	  "half-width of the 95% interval of idle_pct") \
	X(running_pct,        PCT,    SHARE,    SAMPLED,  DOUBLE, 2, 1, BAR,    "running", NULL, \
	  "share of wall time runnable: on a CPU or waiting for one") \
	X(blocked_pct,        PCT,    SHARE,    SAMPLED,  DOUBLE, 2, 1, BAR,    "blocked", NULL, \
	  "share of wall time in any other syscall") \
	X(other_pct,          PCT,    SHARE,    SAMPLED,  DOUBLE, 2, 1, BAR,    "other", NULL, \
	  "share of wall time neither in a syscall nor runnable") \
	X(blocked_unkeyed_pct, PCT,   SHARE,    SAMPLED,  DOUBLE, 2, 1, BLOCKERS, "%s%% in syscalls and fds beyond the table's room", NULL, \
	  "share of wall time blocked in (syscall, fd) pairs the sampler had no room to tell apart") \
	X(cpu_pct,            PCT,    RATIO,    SCHED,    DOUBLE, 2, 1, CPU,    "cpu %s%%", NULL, \
	  "CPU time over wall time") \
	X(cpu_wait_pct,       PCT,    RATIO,    SCHED,    DOUBLE, 2, 1, CPU,    "waiting for a cpu %s%%", NULL, \
	  "time runnable but waiting for a CPU over wall time") \
	X(ops_per_s,          PER_S,  RATE,     COUNTERS, DOUBLE, 2, 1, RATES,  "ops/s %s", NULL, \
	  "operations per second") \
	X(switches_per_s,     PER_S,  RATE,     COUNTERS, DOUBLE, 2, 1, RATES,  "switches/s %s", NULL, \
	  "fiber switches per second") \
	X(polls_per_s,        PER_S,  RATE,     COUNTERS, DOUBLE, 2, 1, RATES,  "polls/s %s", NULL, \
	  "backend polls per second") \
	X(completions_per_s,  PER_S,  RATE,     COUNTERS, DOUBLE, 2, 1, RATES,  "completions/s %s", NULL, \
	  "completions reaped per second") \
	X(runqueue_len,       COUNT,  LEVEL,    COUNTERS, U64,    0, 1, QUEUES, "runqueue %s", NULL, \
	  "fibers ready to run, as last read") \
	X(runqueue_max,       COUNT,  PEAK,     COUNTERS, U64,    0, 1, QUEUES, " (max %s)", NULL, \
	  "the most fibers ready to run seen in the window") \
	X(pending_ops,        COUNT,  LEVEL,    COUNTERS, U64,    0, 1, QUEUES, "pending ops %s", NULL, \
	  "operations in flight, as last read") \
	X(fibers,             COUNT,  LEVEL,    COUNTERS, U64,    0, 1, QUEUES, "fibers %s", NULL, \
	  "live fibers, as last read") \
	X(self_idle_pct,      PCT,    RATIO,    COUNTERS, DOUBLE, 2, 0, SELF,   "self-measured idle %s%%", NULL, \
	  "the runtime's own idle measure: time blocked in its poll over wall time") \
	X(self_report_disagreements, COUNT, TALLY, COUNTERS, U64, 0, 1, SELF, "self-report disagreements %s", NULL, \
	  "cross-checks where /proc contradicted the worker's own claim to be in its poll (a finding in itself)") \
	X(stall_ms,           MS,     PEAK,     COUNTERS, DOUBLE, 2, 1, NONE,   NULL, NULL, \
	  "how long the loop has run without switching fibers, 0 when not stalled") \
	X(headroom_ops_per_s, PER_S,  RATE,     COUNTERS, DOUBLE, 2, 0, SELF,   "headroom %s ops/s", NULL, \
	  "sustainable rate: ops/s over (1 - idle), unknown when idle >= 99%")

#define FLEET_METRICS(X) \
	X(workers,            COUNT,  TALLY,    FLEET,    UNSIGNED, 0, 1, NONE, NULL, NULL, \
	  "workers listed") \
	X(mean_idle_pct,      PCT,    SHARE,    FLEET,    DOUBLE,   2, 0, NONE, NULL, NULL, \
	  "mean idle_pct over the workers that have one") \
	X(ops_per_s,          PER_S,  RATE,     FLEET,    DOUBLE,   2, 1, NONE, NULL, NULL, \
	  "sum of ops_per_s over the instrumented workers") \
	X(headroom_ops_per_s, PER_S,  RATE,     FLEET,    DOUBLE,   2, 0, NONE, NULL, NULL, \
	  "sum of headroom_ops_per_s over the workers where it is known")

struct metric {
	const char *name;
	enum metric_unit unit;
	enum metric_kind kind;
	enum metric_source source;
	enum metric_type type;
	size_t offset;           /* in struct worker_view, or struct fleet_view for FLEET */
	int decimals;            /* in JSON */
	int sort_desc;
	enum metric_line line;
	const char *detail;
	const char *interval;
	const char *desc;
};

enum worker_metric {
#define METRIC_X_ENUM(name, ...) METRIC_W_##name,
	WORKER_METRICS(METRIC_X_ENUM)
	METRIC_NWORKER
};
#undef METRIC_X_ENUM
enum fleet_metric {
#define METRIC_X_ENUM(name, ...) METRIC_F_##name,
	FLEET_METRICS(METRIC_X_ENUM)
#undef METRIC_X_ENUM
	METRIC_NFLEET
};

extern const struct metric metric_worker[METRIC_NWORKER];
extern const struct metric metric_fleet[METRIC_NFLEET];

/* "%", "points", "1/s", "ms", "count". Static. */
const char *metric_unit_name(enum metric_unit u);

/* A worker metric by name, NULL if there is none. */
const struct metric *metric_find(const char *name);

/* The figure of m in view (a struct worker_view, or a struct fleet_view for
 * FLEET metrics); NaN when unknown — COUNTERS figures of an uninstrumented
 * worker are unknown. */
double metric_value(const struct metric *m, const void *view);

/* 1 when the worker has the figure at all (COUNTERS need a slot). */
int metric_applies(const struct metric *m, const struct worker_view *w);

#endif /* LOOPSTAT_METRIC_H */
