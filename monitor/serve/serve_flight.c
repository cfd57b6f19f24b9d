/*
 * serve_flight.c — serve's flight recorder (serve_flight.h): record's
 * recorder, fed by serve's feed and driven by its loop.
 */
#include "serve/serve_flight.h"
#include "cli.h"
#include "model/feed.h"
#include "util/clock.h"

#include <errno.h>
#include <string.h>
#include <time.h>

int serve_flight_usage(struct flight_opts *o, const char *dir)
{
	if (dir && o->ring_s <= 0)
		o->ring_s = FLIGHT_DEFAULT_RING_S;
	if (!dir && o->ring_s > 0)
		return cli_usage_error("serve", "--ring needs --flight-recorder DIR: the directory its recordings go to");
	return flight_check_usage("serve", o, dir, "--flight-recorder DIR", "--flight-recorder DIR");
}

struct flight *serve_flight_open(const struct flight_opts *o, const char *dir, double rate_hz,
				 struct feed_opts *how, int *rc)
{
	struct flight *fl = flight_new("serve", o, dir, rate_hz, stderr, rc);
	int err;
	if (fl && (err = flight_hook(fl, how)) < 0) {
		cli_error("starting the unwinder: %s", strerror(-err));
		flight_delete(fl);
		*rc = EXIT_FAIL;
		return NULL;
	}
	return fl;
}

struct follow {
	const struct serve_flight_loop *l;
	double next;                     /* the next publication, CLOCK_MONOTONIC */
	int sig;
};

/* Each reading: a stop signal taken (never waited for), the figures
 * published when due, the recorder's reading. */
static int on_poll(void *arg)
{
	struct follow *w = arg;
	static const struct timespec none = { 0, 0 };
	int sig = sigtimedwait(w->l->stop, NULL, &none);
	if (sig > 0) {
		w->sig = sig;
		return 1;
	}
	double now = mono_s();
	if (now >= w->next) {
		w->next = serve_next_at(w->next, w->l->interval_s, now);
		w->l->publish(w->l->arg);
	}
	return flight_poll(w->l->fl, w->l->f);
}

static int on_second(void *arg, int64_t sec)
{
	struct follow *w = arg;
	return flight_second(w->l->fl, w->l->f, sec);
}

int serve_flight_follow(const struct serve_flight_loop *l)
{
	struct follow w = { .l = l, .next = mono_s() + l->interval_s };
	struct feed_follow ff = { .second = on_second, .poll = on_poll, .arg = &w };
	int rc = feed_follow(l->f, &ff);
	if (!w.sig)
		cli_error("following the feed: %s", rc < 0 ? strerror(-rc) : "it ended");
	return w.sig ? w.sig : SIGTERM;
}

size_t serve_flight_gauges(const struct flight *fl, struct serve_gauge *g)
{
	struct flight_stats st;
	flight_stats(fl, &st);
	g[0] = (struct serve_gauge){ "flight_recordings_written", "flight recorder: recordings written into its "
				     "directory since serve started", st.written };
	g[1] = (struct serve_gauge){ "flight_recordings_lost", "flight recorder: recordings that could not be "
				     "written (a full disk, an error: said on stderr)", st.failed };
	g[2] = (struct serve_gauge){ "flight_triggers", "flight recorder: triggers met and SIGUSR2 dumps asked for, "
				     "a trigger during a recording joining it", st.triggers };
	g[3] = (struct serve_gauge){ "flight_ring_bytes", "flight recorder: the ring's memory bound (records and "
				     "tables), printed at start", (double)st.ring_bound };
	return SERVE_FLIGHT_GAUGES;
}
