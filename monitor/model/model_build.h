/*
 * model_build.h — the model from a snapshot: every shown worker's window,
 * the top blockers' fd targets, fleet totals. Runs on the view's thread,
 * outside the sampler's lock.
 */
#ifndef LOOPSTAT_MODEL_BUILD_H
#define LOOPSTAT_MODEL_BUILD_H

#include "model/model.h"
#include "collect/snapshot.h"

/*
 * Fills m (free with model_done) with figures over the last window_s
 * seconds of snap; window_s <= 0 means since sampling started.
 * Returns 0 or -ENOMEM.
 */
int model_build(const struct snapshot *snap, double window_s, struct model *m);

/* The same over seconds [lo, hi] of snap (the sampler's clock; at most the
 * detail ring's SERIES_DETAIL_S seconds, which the snapshot must have been
 * taken with): export's per-second points. 0, -EINVAL or -ENOMEM. */
int model_build_range(const struct snapshot *snap, int64_t lo, int64_t hi, struct model *m);

/* Fleet totals of m's workers into m->fleet. */
void model_fleet(struct model *m);

#endif /* LOOPSTAT_MODEL_BUILD_H */
