/*
 * export_points.h — the model as export points: one point per row of the
 * metric table per worker (the rows that apply to it) and one per fleet
 * row, all at one timestamp. The names come from the table (metric.h):
 * a worker's figure is `<metric>`, a fleet total `fleet.<metric>`.
 */
#ifndef LOOPSTAT_EXPORT_POINTS_H
#define LOOPSTAT_EXPORT_POINTS_H

#include <stddef.h>
#include <stdint.h>

#include "export/export_name.h"
#include "model/metric.h"
#include "model/model.h"

struct export_points {
	struct export_point *pts;   /* owned; n used */
	size_t n, cap;
	char **strs;                /* owned copies of the names the points borrow */
	size_t nstrs, capstrs;
};

void export_points_init(struct export_points *b);
void export_points_done(struct export_points *b);

/* Appends m's points at ts (unix seconds). prefix and host are borrowed and
 * must outlive b. Workers /proc refused us have no figures and are left
 * out. Returns 0 or -ENOMEM. */
int export_points_add_model(struct export_points *b, const struct model *m, const char *prefix, const char *host,
                            int64_t ts);

/* What measured the figures, as one point outside the metric table:
 * source.bpf or source.proc = 1, in Prometheus source_info{source="bpf"}
 * (with reason="..." when auto fell back to proc). serve's /metrics.
 * Returns 0 or -ENOMEM. */
int export_points_add_source(struct export_points *b, const struct model *m, const char *prefix, const char *host,
			     int64_t ts);

/* Why threads were left out (model_ignored): ignored_threads.<reason> in
 * Graphite, ignored_threads{reason="cap"|"role"|"access"} in Prometheus.
 * Returns 0 or -ENOMEM. */
int export_points_add_ignored(struct export_points *b, const struct model *m, const char *prefix, const char *host,
			      int64_t ts);

/* One gauge outside the metric table and the model (serve's flight
 * recorder's): metric is its name in base units, in Graphite and
 * Prometheus alike ("flight_recordings_written"); metric and help are
 * borrowed and must outlive b. Returns 0 or -ENOMEM. */
int export_points_add_gauge(struct export_points *b, const char *prefix, const char *host, int64_t ts,
			    const char *metric, const char *help, double value);

struct snapshot;

/* The same over second sec (the sampler's clock) of snap: model_build_range
 * over that one second, then as below. */
int export_points_add_second(struct export_points *b, const struct snapshot *snap, int64_t sec, int64_t ts,
			     const char *prefix, const char *host, int *sampled);

/* --resolution 1s: appends the points of one second's model m (the feed's
 * feed_range over it), stamped ts. A second no worker has samples of adds
 * nothing and sets *sampled to 0 (else 1). Returns 0 or -ENOMEM. */
int export_points_add_model_sampled(struct export_points *b, const struct model *m, int64_t ts, const char *prefix,
				    const char *host, int *sampled);

/* The worker's service label: its systemd unit, container or process
 * name (probe_service.h). Borrowed from w. */
const char *export_points_service(const struct worker_view *w);

/* The metric level(s) of a table row: "idle_pct", or "fleet.workers" for a
 * row of metric_fleet[]. Static. */
const char *export_points_metric(const struct metric *m);

#endif /* LOOPSTAT_EXPORT_POINTS_H */
