/*
 * stall.h — a worker's captured stalls (collect/sampler_stall.c) as views
 * show them.
 */
#ifndef LOOPSTAT_STALL_H
#define LOOPSTAT_STALL_H

#include "collect/series.h"
#include "model/model.h"

/* The stalls series a keeps into w->stall_log, newest first. */
void model_stalls(const struct series *a, struct worker_view *w);

#endif /* LOOPSTAT_STALL_H */
