/*
 * feed.h — where a view's models come from: a source (the live sampler or
 * a replayed recording, collect/source.h), a sampler, or a session, which
 * a command's cmd_*.c opens and hands to its view. The view sees only the
 * handle and the model built from its snapshots (model_build.h), never a
 * snapshot or a sample.
 */
#ifndef LOOPSTAT_FEED_H
#define LOOPSTAT_FEED_H

#include "model/model.h"

/* the sampler's rate when no source says otherwise (a drawing test) */
#define MODEL_FEED_DEFAULT_HZ 100.0

struct source;
struct sampler;
struct session;

/* A snapshot and model_build() in one call: figures over the last window_s
 * seconds (<= 0: since sampling started) into m (free with model_done),
 * with the per-second history. Thread-safe. 0 or -errno. */
int model_of_source(const struct source *src, double window_s, struct model *m);
int model_of_sampler(struct sampler *s, double window_s, struct model *m);
/* The same without the history (one-shot commands). */
int model_of_session(struct session *se, double window_s, struct model *m);

/* The source's controls, for the dashboard. */
double model_feed_rate(const struct source *src);
/* -ENOTSUP when the source's rate is fixed (a recording). */
int    model_feed_set_rate(const struct source *src, double hz);
void   model_feed_set_paused(const struct source *src, int paused);
/* The wall clock the figures are at: now, or a replay's recording clock
 * (stopped at its end). Returns 1 once a replay has reached its end. */
int    model_feed_clock(const struct source *src, double *unix_s);
/* -ENOTSUP when the source cannot show threads never seen polling. */
int    model_feed_set_all_threads(const struct source *src, int on);

#endif /* LOOPSTAT_FEED_H */
