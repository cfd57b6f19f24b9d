/*
 * export_prom.h — the same points in the Prometheus text exposition format,
 * for node_exporter's textfile collector: written to a new temp file in the
 * same directory, fsync'd, then renamed over PATH, so the collector never
 * reads half a file.
 */
#ifndef LOOPSTAT_EXPORT_PROM_H
#define LOOPSTAT_EXPORT_PROM_H

#include <stddef.h>
#include <stdio.h>

#include "export/export_name.h"

enum export_prom_fmt {
	EXPORT_PROM_TEXT,        /* text/plain; version=0.0.4 */
	EXPORT_PROM_OPENMETRICS, /* application/openmetrics-text; version=1.0.0: ends in # EOF */
};

/* Writes every finite point to f: one family per name (<prefix>_<prom>,
 * the metric table's name in base units, or for a point without one
 * <prefix>_<metric> with "_per_s" and "_ms" spelled out; counters end in
 * _total) with # HELP and # TYPE, labels host, name (the process), service,
 * pid, tid, tag and the extra tags, values escaped. No timestamps: the
 * textfile collector refuses them. Returns the number of samples written;
 * *skipped (may be NULL) counts non-finite values. */
size_t export_prom_render(FILE *f, const struct export_point *pts, size_t n, enum export_prom_fmt fmt,
                          size_t *skipped);

/* Series an exposition holds at most, by default: about 400 threads'
 * worth (an uninstrumented thread has 23 series, an instrumented one
 * about twice that), beside the fleet's and the services'. */
#define EXPORT_PROM_SERIES_BUDGET 10000

/* The budget: LOOPSTAT_SERIES_BUDGET when set to a positive number, else
 * EXPORT_PROM_SERIES_BUDGET. Past it, export_prom_render drops threads'
 * series first (whole threads, one of each service in turn), then the
 * rest's, and says so: a comment line (text format) and the gauge
 * <prefix>_series_dropped, written always. */
size_t export_prom_budget(void);

/* export_prom_render in the text format 0.0.4. *//* export_prom_render in the text format 0.0.4. */
size_t export_prom_format(FILE *f, const struct export_point *pts, size_t n, size_t *skipped);

/* What export_prom_write would refuse of PATH before anything is written:
 * its directory (missing, unsafe). 0 or -errno, with the reason in err. */
int export_prom_check(const char *path, char *err, size_t errlen);

/* export_prom_format into PATH atomically, relative to its directory
 * (util/safefile.h: the directory must not let another user replace what
 * is in it; the temp file is new, never opened through a link). Only a
 * regular file of ours is replaced. Returns 0, or -errno with a reason in
 * err: -EPERM for the directory refused, -EEXIST for PATH that is not a
 * regular file of ours (a device, a FIFO, a link, a directory, another
 * user's file), else the failing call's. */
int export_prom_write(const char *path, const struct export_point *pts, size_t n, char *err, size_t errlen);

#endif /* LOOPSTAT_EXPORT_PROM_H */
