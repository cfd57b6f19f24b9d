/*
 * source.c — the live /proc sampler as a source.
 */
#include "collect/source.h"

#include <string.h>

static int s_snapshot(void *impl, double window_s, int with_history, struct snapshot *snap)
{
	return sampler_snapshot(impl, window_s, with_history, snap);
}

static double s_rate(void *impl) { return sampler_rate(impl); }
static void s_set_rate(void *impl, double hz) { sampler_set_rate(impl, hz); }
static void s_set_paused(void *impl, int paused) { sampler_set_paused(impl, paused); }
static void s_set_all_threads(void *impl, int on) { sampler_set_all_threads(impl, on); }
static void s_stop(void *impl) { sampler_stop(impl); }
static void s_destroy(void *impl) { sampler_delete(impl); }

/* the borrowed sampler: neither stopped nor freed here */
static const struct source_ops sampler_ops = {
	.name = "proc", .caps = SOURCE_SAMPLED, .snapshot = s_snapshot, .rate = s_rate, .set_rate = s_set_rate,
	.set_paused = s_set_paused, .set_all_threads = s_set_all_threads,
};

static const struct source_ops proc_ops = {
	.name = "proc", .caps = SOURCE_SAMPLED, .snapshot = s_snapshot, .rate = s_rate, .set_rate = s_set_rate,
	.set_paused = s_set_paused, .set_all_threads = s_set_all_threads, .stop = s_stop, .destroy = s_destroy,
};

void source_sampler(struct source *src, struct sampler *s)
{
	src->ops = &sampler_ops;
	src->impl = s;
}

int source_proc_open(const struct source_conf *c, struct source *src)
{
	struct sampler_opts so = { .rate_hz = c->rate_hz, .precision_pts = c->precision_pts, .targets = c->targets,
				   .all_threads = c->all_threads, .max_workers = c->max_workers, .on_sample = c->on_sample,
				   .on_sample_arg = c->on_sample_arg, .stall_ms = c->stall_ms, .on_stall = c->on_stall };
	struct sampler *s = NULL;
	memset(src, 0, sizeof(*src));
	int err = sampler_new(&so, &s);
	if (err == 0 && (err = sampler_start(s)) < 0)
		sampler_delete(s);
	if (err == 0) {
		src->ops = &proc_ops;
		src->impl = s;
	}
	return err;
}

void source_close(struct source *src)
{
	if (src->ops && src->ops->stop)
		src->ops->stop(src->impl);
	if (src->ops && src->ops->destroy)
		src->ops->destroy(src->impl);
	memset(src, 0, sizeof(*src));
}
