/*
 * session.h — "sample for a while, then take the model": what list, check,
 * export and profile share. Starts the sampler on the command's targets,
 * waits with a progress line on a terminal, and hands out snapshots and
 * models, live or after the stop.
 */
#ifndef LOOPSTAT_SESSION_H
#define LOOPSTAT_SESSION_H

#include "collect/sampler.h"
#include "collect/snapshot.h"
#include "collect/targets.h"

struct session_opts {
	const struct targets *targets;   /* borrowed */
	double rate_hz;                  /* 0: the sampler's default */
	double precision_pts;            /* sampler_opts.precision_pts */
	int    all_threads;              /* also threads never seen polling */
	size_t max_workers;              /* 0: the sampler's default */
	double stall_ms;                 /* sampler_opts.stall_ms */
	/* sampler_opts.on_sample: profile and record keep their own record */
	void (*on_sample)(void *arg, const struct sampler_event *ev);
	void  *on_sample_arg;
	void (*on_stall)(void *arg, const struct sampler_stall_event *ev);   /* sampler_opts.on_stall */
	int    source;                   /* sampler_opts.source */
};

struct session {
	struct sampler *sampler;         /* owned */
	double started_s;                /* CLOCK_MONOTONIC, seconds */
};

/* Starts sampling. Returns 0 or -errno (reported on stderr by the caller). */
int  session_start(struct session *se, const struct session_opts *o);

/* Sleeps until `seconds` after the start, with a progress line on stderr
 * when it is a terminal. */
void session_wait_until(struct session *se, double seconds);

/* The same, and every 0.1 s asks gone(arg): stops early when it says 1.
 * Returns 1 when stopped early, else 0. */
int  session_wait_unless(struct session *se, double seconds, int (*gone)(void *arg), void *arg);

/* Stops sampling (the model stays readable) and frees everything. */
void session_stop(struct session *se);
void session_end(struct session *se);

#endif /* LOOPSTAT_SESSION_H */
