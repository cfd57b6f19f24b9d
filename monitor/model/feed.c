/*
 * feed.c — models from the collect layer's sources, and their controls.
 */
#include "model/feed.h"
#include "collect/sampler.h"
#include "collect/session.h"
#include "collect/source.h"
#include "model/model_build.h"

#include <errno.h>
#include <time.h>

_Static_assert((long)MODEL_FEED_DEFAULT_HZ == (long)SAMPLER_DEFAULT_HZ, "one default rate");  /* whole Hz: clang takes no double here */

static int from_snapshot(int err, struct snapshot *snap, double window_s, struct model *m)
{
	if (err == 0)
		err = model_build(snap, window_s, m);
	snapshot_done(snap);
	return err;
}

int model_of_source(const struct source *src, double window_s, struct model *m)
{
	struct snapshot snap = { 0 };
	return from_snapshot(src->ops->snapshot(src->impl, window_s, 1, &snap), &snap, window_s, m);
}

int model_of_sampler(struct sampler *s, double window_s, struct model *m)
{
	struct snapshot snap = { 0 };
	return from_snapshot(sampler_snapshot(s, window_s, 1, &snap), &snap, window_s, m);
}

int model_of_session(struct session *se, double window_s, struct model *m)
{
	struct snapshot snap = { 0 };
	return from_snapshot(sampler_snapshot(se->sampler, window_s, 0, &snap), &snap, window_s, m);
}

double model_feed_rate(const struct source *src) { return src->ops->rate(src->impl); }

int model_feed_set_rate(const struct source *src, double hz)
{
	if (!src->ops->set_rate)
		return -ENOTSUP;
	src->ops->set_rate(src->impl, hz);
	return 0;
}

void model_feed_set_paused(const struct source *src, int paused) { src->ops->set_paused(src->impl, paused); }

int model_feed_clock(const struct source *src, double *unix_s)
{
	if (src->ops->clock)
		return src->ops->clock(src->impl, unix_s);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	*unix_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	return 0;
}

int model_feed_set_all_threads(const struct source *src, int on)
{
	if (!src->ops->set_all_threads)
		return -ENOTSUP;
	src->ops->set_all_threads(src->impl, on);
	return 0;
}
