/*
 * source.h — where a view's snapshots come from: the live sampler or a
 * replayed recording (replay.h). The dashboard takes one of these instead
 * of a sampler, so `top --replay` is the same dashboard; the model is
 * built from the snapshot outside either (model_build.h).
 */
#ifndef LOOPSTAT_SOURCE_H
#define LOOPSTAT_SOURCE_H

#include "collect/sampler.h"
#include "collect/snapshot.h"

struct source_ops {
	/* as sampler_snapshot() */
	int    (*snapshot)(void *impl, double window_s, int with_history, struct snapshot *snap);
	double (*rate)(void *impl);
	void   (*set_rate)(void *impl, double hz);         /* NULL: the rate is fixed (a recording) */
	void   (*set_paused)(void *impl, int paused);
	void   (*set_all_threads)(void *impl, int on);     /* NULL: not supported */
	/* NULL: live, the wall clock. A recording: its clock in *unix_s, which
	 * stops at its end; returns 1 once the replay has reached it. */
	int    (*clock)(void *impl, double *unix_s);
};

struct source {
	const struct source_ops *ops;
	void *impl;                      /* borrowed */
};

/* A source reading the live sampler s (borrowed). */
void source_sampler(struct source *src, struct sampler *s);

#endif /* LOOPSTAT_SOURCE_H */
