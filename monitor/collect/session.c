/*
 * session.c — one sampling run for the one-shot commands.
 */
#include "collect/session.h"
#include "util/clock.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int session_start(struct session *se, const struct session_opts *o)
{
	struct sampler_opts so = { .rate_hz = o->rate_hz, .precision_pts = o->precision_pts, .targets = o->targets, .all_threads = o->all_threads,
				  .max_workers = o->max_workers, .on_sample = o->on_sample, .on_sample_arg = o->on_sample_arg,
				  .stall_ms = o->stall_ms, .on_stall = o->on_stall, .source = (enum sampler_source)o->source };
	memset(se, 0, sizeof(*se));
	int err = sampler_new(&so, &se->sampler);
	if (err == 0 && (err = sampler_start(se->sampler)) < 0) {
		sampler_delete(se->sampler);
		se->sampler = NULL;
	}
	se->started_s = (double)mono_ns() / 1e9;
	return err;
}

void session_wait_until(struct session *se, double seconds)
{
	session_wait_unless(se, seconds, NULL, NULL);
}

int session_wait_unless(struct session *se, double seconds, int (*gone)(void *arg), void *arg)
{
	int tty = isatty(STDERR_FILENO), early = 0;
	const double tick = 0.1;
	for (;;) {
		double t = (double)mono_ns() / 1e9 - se->started_s;
		if (t >= seconds)
			break;
		if (gone && gone(arg)) {
			early = 1;
			break;
		}
		if (tty)
			fprintf(stderr, "\rloopstat: sampling %.1f / %.1f s", t, seconds);
		double step = seconds - t < tick ? seconds - t : tick;
		struct timespec ts = { (time_t)step, (long)((step - (time_t)step) * 1e9) };
		nanosleep(&ts, NULL);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	return early;
}

void session_stop(struct session *se)
{
	if (se->sampler)
		sampler_stop(se->sampler);
}

void session_end(struct session *se)
{
	sampler_delete(se->sampler);
	se->sampler = NULL;
}
