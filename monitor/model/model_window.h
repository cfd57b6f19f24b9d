/*
 * model_window.h — a worker's figures over a window of its series.
 */
#ifndef LOOPSTAT_MODEL_WINDOW_H
#define LOOPSTAT_MODEL_WINDOW_H

#include <stdint.h>

#include "model/model.h"
#include "collect/series.h"
#include "model/metric.h"

/*
 * Fills the sampled and counter figures of w (pid, names, tags and
 * blocker targets are the caller's) over the window_s seconds ending at
 * now_ns; window_s <= 0: since the worker was first seen.
 */
void model_window(const struct series *a, uint64_t now_ns, double window_s, int instrumented, struct worker_view *w);

/* The same over seconds [lo, hi] of the series' detail ring (at most its
 * last SERIES_DETAIL_S seconds): export's per-second points. */
void model_window_range(const struct series *a, int64_t lo, int64_t hi, int instrumented, struct worker_view *w);

/* 1 for a row that is a share's interval (its half-width or a bound). */
int  model_row_is_interval(const struct metric *m);

/* Stores v as w's field of row m (a count rounded; NaN: unknown). */
void model_set_row(struct worker_view *w, const struct metric *m, double v);

#endif /* LOOPSTAT_MODEL_WINDOW_H */
