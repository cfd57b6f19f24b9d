/*
 * serve_flight.h — `serve --flight-recorder DIR`: record's flight recorder
 * (profile/flight.h, the same ring, triggers and directory) driven from
 * serve's feed. Each reading writes on the recording under way and takes
 * a SIGUSR2; each completed second judges the triggers; the figures are
 * published on serve's schedule in between, with the recorder's gauges
 * (recordings written and lost, triggers, the ring's bound in bytes).
 */
#ifndef LOOPSTAT_SERVE_FLIGHT_H
#define LOOPSTAT_SERVE_FLIGHT_H

#include <signal.h>
#include <stddef.h>

#include "profile/flight.h"
#include "serve/serve.h"

struct feed;
struct feed_opts;

/* serve's default --ring span is FLIGHT_DEFAULT_RING_S. Usage checks of
 * serve's flight options (dir: --flight-recorder's, NULL when not
 * given): -1 to go on, or EXIT_USAGE after the message. */
int serve_flight_usage(struct flight_opts *o, const char *dir);

/* The recorder, its hook put in how (serve's feed has none of its own).
 * NULL after a message (*rc: the exit code). */
struct flight *serve_flight_open(const struct flight_opts *o, const char *dir, double rate_hz,
				 struct feed_opts *how, int *rc);

struct serve_flight_loop {
	struct feed *f;
	struct flight *fl;
	const sigset_t *stop;            /* the signals that end serve, blocked in every thread */
	double interval_s;               /* publish's schedule, from the start */
	void (*publish)(void *arg);
	void *arg;
};

/* Follows the feed until a signal of stop comes; returns it. */
int serve_flight_follow(const struct serve_flight_loop *l);

#define SERVE_FLIGHT_GAUGES 4
/* The recorder's gauges into g (SERVE_FLIGHT_GAUGES of room); their number. */
size_t serve_flight_gauges(const struct flight *fl, struct serve_gauge *g);

/* serve's schedule: the publication after the one due at next (now
 * past it); one missed altogether restarts from now. */
static inline double serve_next_at(double next, double interval_s, double now)
{
	next += interval_s;
	return next < now ? now + interval_s : next;
}

#endif /* LOOPSTAT_SERVE_FLIGHT_H */
