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
 */
#ifndef LOOPSTAT_FLIGHT_H
#define LOOPSTAT_FLIGHT_H

#include <stddef.h>
#include <stdint.h>

#include "profile/profile_run.h"

#define FLIGHT_MAX_TRIGGERS 16
#define FLIGHT_DEFAULT_AFTER_S    10.0
#define FLIGHT_DEFAULT_COOLDOWN_S 300.0
#define FLIGHT_DEFAULT_RING_BYTES ((int64_t)256 << 20)
#define FLIGHT_PREFIX "flight-"   /* the recordings' names: flight-TIME-TRIGGER.rec */

struct flight_opts {
	double  ring_s;                  /* > 0: record is a flight recorder */
	double  after_s, cooldown_s;     /* < 0: not given (the defaults) */
	int64_t max_bytes;               /* the directory's cap; 0: none */
	int64_t ring_bytes;              /* the ring's bound; 0: the default */
	const char *trigger[FLIGHT_MAX_TRIGGERS]; /* borrowed from argv */
	int     ntrigger;
};

/* The option setters of record's flight rows (ctx: a struct record_cli). */
struct record_cli {
	struct profile_cli p;            /* first: profile's setters take it */
	struct flight_opts fo;
};
int flight_cli_ring(void *ctx, const char *arg, char *msg, size_t len);
int flight_cli_trigger(void *ctx, const char *arg, char *msg, size_t len);
int flight_cli_after(void *ctx, const char *arg, char *msg, size_t len);
int flight_cli_cooldown(void *ctx, const char *arg, char *msg, size_t len);
int flight_cli_max_bytes(void *ctx, const char *arg, char *msg, size_t len);
int flight_cli_ring_bytes(void *ctx, const char *arg, char *msg, size_t len);

/* The rows, in record's option table. */
#define FLIGHT_CLI_OPTIONS \
	{ 0, "ring", "DURATION", "flight recorder: keep the last DURATION (120s, 2m) in memory; -o names a directory", \
	  flight_cli_ring }, \
	{ 0, "trigger", "EXPR", "with --ring: write a recording when a worker's second meets EXPR (check's grammar: " \
	  "lag_max_ms>200); repeatable, any one fires", flight_cli_trigger }, \
	{ 0, "after", "DURATION", "with --ring: go on recording this long after a trigger (default 10s)", \
	  flight_cli_after }, \
	{ 0, "cooldown", "DURATION", "with --ring: at most one recording per worker this often (default 5m)", \
	  flight_cli_cooldown }, \
	{ 0, "max-bytes", "SIZE", "with --ring: keep the directory's recordings under SIZE (64M, 1G), oldest " \
	  "removed first (default: no cap)", flight_cli_max_bytes }, \
	{ 0, "ring-bytes", "SIZE", "with --ring: the ring's memory bound (default 256M; when it fills first it " \
	  "holds less than --ring)", flight_cli_ring_bytes }

/* Usage checks of a record command line: -1 to go on, or EXIT_USAGE
 * after the message (flight options without --ring, a bad trigger). */
int flight_check_usage(const struct record_cli *c);

/* Runs the flight recorder until --duration (if given), a signal or the
 * one target's exit. Returns the exit code. */
int flight_run(struct record_cli *c, pid_t one);

#endif /* LOOPSTAT_FLIGHT_H */
