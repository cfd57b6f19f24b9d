/*
 * metric.h — the metric table (rows in metric_table.c, vocabulary in
 * metric_table.h) as struct metric entries: name, unit, rule, where the
 * figure lives in the view struct, JSON decimals, natural sort direction
 * and description. The JSON writer, the text table, the dashboard's
 * columns, detail and fleet lines, the docs tests, export's names, check's
 * thresholds and the evaluator walk these tables; adding a metric is one
 * id in metric_table.h, one row in metric_table.c, plus its docs rows.
 */
#ifndef LOOPSTAT_METRIC_H
#define LOOPSTAT_METRIC_H

#include <stddef.h>

#include "model/metric_table.h"
#include "model/model.h"

struct metric {
	const char *name;        /* the JSON key, check's threshold name, the view struct's field */
	enum metric_unit unit;
	const char *counts;      /* what a PER_S row counts ("ops": ops/s, check's unit), else NULL */
	enum metric_kind kind;   /* the rule (fleet rows: 0, their .reduce of row .of is the rule) */
	int arg;                 /* the rule's argument */
	enum metric_source source;
	enum metric_type type;   /* of the field */
	size_t offset;           /* in struct worker_view, or struct fleet_view for FLEET */
	int decimals;            /* in JSON */
	int sort_desc;           /* busiest first: 1 when a larger value means a busier worker */
	const struct metric *interval; /* the row holding this one's 95% half-width, NULL if none */
	enum metric_reduce reduce; /* FLEET rows: how the workers' figures combine */
	int of;                  /* FLEET rows: the worker row (enum worker_metric) */
	const char *desc;
};

enum worker_metric {
#define METRIC_X_ENUM(name, type) METRIC_W_##name,
	METRIC_WORKER_IDS(METRIC_X_ENUM)
#undef METRIC_X_ENUM
	METRIC_NWORKER
};
enum fleet_metric {
#define METRIC_X_ENUM(name, type) METRIC_F_##name,
	METRIC_FLEET_IDS(METRIC_X_ENUM)
#undef METRIC_X_ENUM
	METRIC_NFLEET
};

extern const struct metric metric_worker[METRIC_NWORKER];
extern const struct metric metric_fleet[METRIC_NFLEET];

/* "%", "points", "1/s", "ms", "count". Static. */
const char *metric_unit_name(enum metric_unit u);

/* A worker metric by name, NULL if there is none. */
const struct metric *metric_find(const char *name);

/* A worker or fleet metric by name, NULL if there is none. */
const struct metric *metric_find_any(const char *name);

/* 1 for a row of metric_fleet[]. */
int metric_is_fleet(const struct metric *m);

/* The figure of m in view (a struct worker_view, or a struct fleet_view for
 * FLEET metrics); NaN when unknown — COUNTERS figures of an uninstrumented
 * worker are unknown. */
double metric_value(const struct metric *m, const void *view);

/* The field of m in view as it is, whether the figure applies or not. */
double metric_field(const struct metric *m, const void *view);

/* 1 when the worker has the figure at all (COUNTERS need a slot). */
int metric_applies(const struct metric *m, const struct worker_view *w);

/* A figure as a table cell: percentages with one decimal, rates with three
 * significant digits (k, M, G), ms as "120ms"/"1.5s" (0: "-"), counts whole
 * (compact: k/M past 9999); NaN and figures that do not apply read "-". */
void metric_format(char *buf, size_t n, enum metric_unit unit, double v, int compact);

/*
 * Prometheus: a row's name in base units, derived from its name, unit and
 * rule, so a new row has its Prometheus name without a second list:
 *   worker rows are "worker_<name>", fleet rows "fleet_<name>";
 *   a RATE of a slot counter is that counter itself, a Prometheus counter:
 *     what the row counts, then "_total" (ops_per_s: worker_ops_total);
 *   the rest is metric_prom_spell's rule (idle_pct: worker_idle_ratio,
 *     idle_pct_min: fleet_idle_min_ratio, stall_ms: worker_stall_seconds).
 * The prefix (export's --prefix, "loopstat") goes in front.
 */
#define METRIC_PROM_NAME_MAX 256

/*
 * The one Prometheus naming rule, for the table's rows and any other name
 * (points made by hand, expo/): names carry base units, spelled out
 * (promtool's lint refuses "_s" and "_ms"). "_per_s" as whole parts is
 * "_per_second"; a name in % or points (base: a 0..1 ratio) or in ms
 * (base: seconds) loses its unit's last whole part, "_pct" or "_ms", and
 * ends in "_ratio" or "_seconds". Other units keep the name. Writes at
 * most cap bytes to out.
 */
void metric_prom_spell(char *out, size_t cap, const char *name, enum metric_unit unit);

/* What takes a value in unit to the base unit metric_prom_spell names:
 * 0.01 for % and points, 0.001 for ms, else 1. */
double metric_prom_scale(enum metric_unit unit);

/* The name without the prefix ("worker_idle_ratio"). Static. */
const char *metric_prom_name(const struct metric *m);

/* Its # HELP line: the description, or for a counter what it counts. Static. */
const char *metric_prom_help(const struct metric *m);

/* 1 when the row is exposed as a counter (the slot's raw counter). */
int metric_prom_counter(const struct metric *m);

/* The figure in the name's base unit: a counter's raw value, else
 * metric_value() scaled (% to 0..1, ms to s); NaN when unknown. */
double metric_prom_value(const struct metric *m, const void *view);

#endif /* LOOPSTAT_METRIC_H */
