/*
 * expo_prom.h — points in Prometheus' exposition formats (text 0.0.4 and
 * OpenMetrics): what serve's /metrics answers and what export's textfile
 * holds, written by one renderer.
 */
#ifndef LOOPSTAT_EXPO_PROM_H
#define LOOPSTAT_EXPO_PROM_H

#include <stddef.h>
#include <stdio.h>

#include "expo/expo_name.h"

enum expo_prom_fmt {
	EXPO_PROM_TEXT,        /* text/plain; version=0.0.4 */
	EXPO_PROM_OPENMETRICS, /* application/openmetrics-text; version=1.0.0: ends in # EOF */
};

/* Writes every finite point to f: one family per name (<prefix>_<prom>,
 * the metric table's name in base units, or for a point without one
 * <prefix>_<metric> with "_per_s" and "_ms" spelled out; counters end in
 * _total) with # HELP and # TYPE, labels host, name (the process), service,
 * pid, tid, tag and the extra tags, values escaped. No timestamps: the
 * textfile collector refuses them. Returns the number of samples written;
 * *skipped (may be NULL) counts non-finite values. */
size_t expo_prom_render(FILE *f, const struct expo_point *pts, size_t n, enum expo_prom_fmt fmt,
                        size_t *skipped);

/* Series an exposition holds at most, by default: about 400 threads'
 * worth (an uninstrumented thread has 23 series, an instrumented one
 * about twice that), beside the fleet's and the services'. */
#define EXPO_PROM_SERIES_BUDGET 10000

/* The budget: LOOPSTAT_SERIES_BUDGET when set to a positive number, else
 * EXPO_PROM_SERIES_BUDGET. Past it, expo_prom_render drops threads'
 * series first (whole threads, one of each service in turn), then the
 * rest's, and says so: a comment line (text format) and the gauge
 * <prefix>_series_dropped, written always. */
size_t expo_prom_budget(void);

/* expo_prom_render in the text format 0.0.4. */
size_t expo_prom_format(FILE *f, const struct expo_point *pts, size_t n, size_t *skipped);

#endif /* LOOPSTAT_EXPO_PROM_H */
