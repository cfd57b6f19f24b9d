/*
 * source.c — the live sampler as a snapshot source.
 */
#include "collect/source.h"

static int s_snapshot(void *impl, double window_s, int with_history, struct snapshot *snap)
{
	return sampler_snapshot(impl, window_s, with_history, snap);
}

static double s_rate(void *impl) { return sampler_rate(impl); }
static void s_set_rate(void *impl, double hz) { sampler_set_rate(impl, hz); }
static void s_set_paused(void *impl, int paused) { sampler_set_paused(impl, paused); }
static void s_set_all_threads(void *impl, int on) { sampler_set_all_threads(impl, on); }

static const struct source_ops sampler_ops = {
	s_snapshot, s_rate, s_set_rate, s_set_paused, s_set_all_threads,
};

void source_sampler(struct source *src, struct sampler *s)
{
	src->ops = &sampler_ops;
	src->impl = s;
}
