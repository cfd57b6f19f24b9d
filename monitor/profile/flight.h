/*
 * flight.h — the flight recorder: `loopstat record --ring 120s --trigger
 * EXPR -o DIR`. Every event record would write goes to a bounded ring
 * (flight_ring.h) instead; each completed second each worker's figures are
 * judged against the triggers (check's grammar: any one met fires), and a
 * trigger writes the ring plus the next --after seconds as a normal
 * recording into DIR, named by time and trigger, with its trigger records
 * ("t"). At most one per worker per --cooldown; SIGUSR2 dumps on demand.
 * DIR is written as export's spool is (util/safefile.h: no link followed,
 * temp file + rename, a full disk loses the new recording, never the old
 * ones) and capped by --max-bytes, oldest recordings removed first.
 * `serve --flight-recorder DIR` drives the same recorder from its feed.
 */
#ifndef LOOPSTAT_FLIGHT_H
#define LOOPSTAT_FLIGHT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "profile/profile_run.h"

#define FLIGHT_MAX_TRIGGERS 16
#define FLIGHT_DEFAULT_RING_S     120.0  /* serve's, when --ring is not given */
#define FLIGHT_DEFAULT_AFTER_S    10.0
#define FLIGHT_DEFAULT_COOLDOWN_S 300.0
#define FLIGHT_DEFAULT_RING_BYTES ((int64_t)256 << 20)
#define FLIGHT_PREFIX "flight-"   /* the recordings' names: flight-TIME-TRIGGER.rec */

struct flight_opts {
	double  ring_s;                  /* > 0: a flight recorder */
	double  after_s, cooldown_s;     /* < 0: not given (the defaults) */
	int64_t max_bytes;               /* the directory's cap; 0: none */
	int64_t ring_bytes;              /* the ring's bound; 0: the default */
	const char *trigger[FLIGHT_MAX_TRIGGERS]; /* borrowed from argv */
	int     ntrigger;
};
#define FLIGHT_OPTS_INIT { .after_s = -1, .cooldown_s = -1 }

/* The options' setters, on the flight_opts itself. */
int flight_opt_ring(struct flight_opts *o, const char *arg, char *msg, size_t len);
int flight_opt_trigger(struct flight_opts *o, const char *arg, char *msg, size_t len);
int flight_opt_after(struct flight_opts *o, const char *arg, char *msg, size_t len);
int flight_opt_cooldown(struct flight_opts *o, const char *arg, char *msg, size_t len);
int flight_opt_max_bytes(struct flight_opts *o, const char *arg, char *msg, size_t len);
int flight_opt_ring_bytes(struct flight_opts *o, const char *arg, char *msg, size_t len);

/* The option rows' setters of a command whose option context is TYPE,
 * its flight_opts at FIELD (record and serve: one set of rows, two
 * contexts). Defines static flight_set_* in the command's file. */
#define FLIGHT_CLI_SETTER(NAME, TYPE, FIELD) \
	static int flight_set_##NAME(void *ctx, const char *arg, char *msg, size_t len) \
	{ return flight_opt_##NAME(&((TYPE *)ctx)->FIELD, arg, msg, len); }
#define FLIGHT_CLI_SETTERS(TYPE, FIELD) \
	FLIGHT_CLI_SETTER(ring, TYPE, FIELD) FLIGHT_CLI_SETTER(trigger, TYPE, FIELD) \
	FLIGHT_CLI_SETTER(after, TYPE, FIELD) FLIGHT_CLI_SETTER(cooldown, TYPE, FIELD) \
	FLIGHT_CLI_SETTER(max_bytes, TYPE, FIELD) FLIGHT_CLI_SETTER(ring_bytes, TYPE, FIELD)

/* The rows, in the command's option table (after FLIGHT_CLI_SETTERS);
 * RING_HELP: what --ring says there. */
#define FLIGHT_CLI_OPTIONS(RING_HELP) \
	{ 0, "ring", "DURATION", RING_HELP, flight_set_ring }, \
	{ 0, "trigger", "EXPR", "write a recording when a worker's second meets EXPR (check's grammar: " \
	  "lag_max_ms>200, limit==quota); repeatable, any one fires", flight_set_trigger }, \
	{ 0, "after", "DURATION", "flight recorder: go on recording this long after a trigger (default 10s)", \
	  flight_set_after }, \
	{ 0, "cooldown", "DURATION", "flight recorder: at most one recording per worker this often (default 5m)", \
	  flight_set_cooldown }, \
	{ 0, "max-bytes", "SIZE", "flight recorder: keep the directory's recordings under SIZE (64M, 1G), " \
	  "oldest removed first (default: no cap)", flight_set_max_bytes }, \
	{ 0, "ring-bytes", "SIZE", "flight recorder: the ring's memory bound (default 256M; when it fills " \
	  "first it holds less than --ring)", flight_set_ring_bytes }

/* Usage checks of a command line: -1 to go on, or EXIT_USAGE after the
 * message. on_opt turns the recorder on ("--ring"); the other options
 * without it, a recorder without dir (named dir_opt: "-o DIR") and a bad
 * trigger are refused. */
int flight_check_usage(const char *cmd, const struct flight_opts *o, const char *dir, const char *on_opt,
		       const char *dir_opt);

/* record's option context. */
struct record_cli {
	struct profile_cli p;            /* first: profile's setters take it */
	struct flight_opts fo;
};

/* Runs record's flight recorder until --duration (if given), a signal or
 * the one target's exit. Returns the exit code. */
int flight_run(struct record_cli *c, pid_t one);

/* ---- the recorder itself, driven by its command's feed ---- */

struct flight;
struct feed;
struct feed_opts;

/* Opens dir, makes the ring, parses the triggers and says the ring's
 * bound on say (and each recording written, later); SIGUSR2 asks for a dump from then on. NULL after a
 * message (*rc: the exit code). rate_hz: the sampling rate, for the
 * bound's thread-seconds. */
struct flight *flight_new(const char *cmd, const struct flight_opts *o, const char *dir, double rate_hz, FILE *say,
			  int *rc);
/* Ends the recording under way, says what was written on stderr, and
 * frees fl (SIGUSR2 as before). Returns 0, or -EIO when a recording was
 * lost. */
int flight_delete(struct flight *fl);

/* The ring every event goes to (profile_run's ring). */
struct flight_ring *flight_ring_of(struct flight *fl);
/* For a feed with no profile hook of its own (serve): every sample and
 * stall it takes goes to the ring, through profile's hook (how's on_*).
 * 0, or -errno. */
int flight_hook(struct flight *fl, struct feed_opts *how);

/* Each completed second of the feed: the triggers, per worker. */
int flight_second(struct flight *fl, struct feed *f, int64_t sec);
/* Each reading: a SIGUSR2 dump, the recording under way written on. */
int flight_poll(struct flight *fl, struct feed *f);

struct flight_stats {
	unsigned triggers, written, failed;
	size_t   ring_bound;             /* bytes */
};
void flight_stats(const struct flight *fl, struct flight_stats *st);

#endif /* LOOPSTAT_FLIGHT_H */
