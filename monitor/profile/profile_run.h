/*
 * profile_run.h — what `profile`, `record` and `report` share: checking
 * the target before sampling, one sampling run with the profile hook, and
 * writing a tree in a format to a file or stdout.
 */
#ifndef LOOPSTAT_PROFILE_RUN_H
#define LOOPSTAT_PROFILE_RUN_H

#include <stdio.h>
#include <sys/types.h>

#include "cli.h"
#include "profile/profile_live.h"
#include "profile/profile_out.h"
#include "profile/profile_acc.h"
#include "collect/targets.h"

#define PROFILE_DEFAULT_HZ 1000.0

struct feed;

struct profile_run_opts {
	const struct cli_common *common; /* borrowed: targets, rate (0: PROFILE_DEFAULT_HZ), duration */
	pid_t  pid, tid;                 /* the one target (0: every target; tid 0: every thread) */
	struct profile_acc *acc;         /* borrowed, may be NULL */
	struct rec_writer *rec;  /* borrowed, may be NULL */
	struct flight_ring *ring;        /* borrowed, may be NULL: every event also goes there */
	/* the flight recorder's: each completed second, and each reading
	 * (FEED_POLL_MS), with the feed; nonzero ends the run. May be NULL. */
	int  (*second)(void *arg, struct feed *f, int64_t sec);
	int  (*poll)(void *arg, struct feed *f);
	void  *arg;
};

struct profile_run_result {
	double elapsed_s;                /* wall time sampled */
	int    gone;                     /* the target exited before the end */
	int    signal;                   /* SIGINT or SIGTERM ended the run early, else 0 */
	struct profile_live_stats st;
};

/* Says on stderr why pid (and tid) cannot be profiled and returns the exit
 * code: EXIT_NOTHING (no such process or thread), EXIT_ACCESS (with the fix);
 * -1 when it can. */
int profile_check_target(pid_t pid, pid_t tid);

/* Samples for duration_s (<= 0: until a signal or the target's exit; less when the one target exits, or SIGINT or
 * SIGTERM arrives: the run then ends within a tick and what was measured
 * is kept). 0, or -errno after a message on stderr. */
int profile_run(const struct profile_run_opts *o, struct profile_run_result *res);

/* The exit code after a run: EXIT_ACCESS when every sample was refused,
 * EXIT_NOTHING when there were none or the target exited, 128 + the signal
 * when one interrupted it, as a shell reports it (all said on stderr), else
 * EXIT_OK. */
int profile_run_verdict(const struct profile_run_opts *o, const struct profile_run_result *res);

/* Writes t as fmt to path (NULL or "-": stdout), and for text acc's stall
 * lint (acc may be NULL). Returns an exit code: EXIT_OK, or EXIT_FAIL
 * after a message naming the call and the path. */
int profile_emit(const char *path, enum profile_format fmt, struct profile_tree *t, const struct profile_meta *meta,
		 const struct profile_acc *acc);

/* The same to f, which profile_open_out(path) gave (closed here). */
int profile_emit_to(FILE *f, const char *path, enum profile_format fmt, struct profile_tree *t,
		    const struct profile_meta *meta, const struct profile_acc *acc);

/* -1 when fmt may go to path; EXIT_USAGE after the message when it is a
 * binary format (pprof) and path is stdout on a terminal, as gzip refuses. */
int profile_check_output(const char *cmd, enum profile_format fmt, const char *path);

/* fopen(path, "w") or stdout for NULL/"-", with the message on failure. */
FILE *profile_open_out(const char *path);
/* Closes what profile_open_out gave; EXIT_OK or EXIT_FAIL after a message. */
int profile_close_out(FILE *f, const char *path, int write_err);

/* The option context of profile, record and report, and its setters. */
struct profile_cli {
	struct cli_common common;
	pid_t  pid, tid;
	enum profile_format fmt;
	const char *out, *record, *file;
	int    threads;                  /* --threads */
};
int profile_cli_pid(void *ctx, const char *arg, char *msg, size_t len);      /* one pid */
int profile_cli_tid(void *ctx, const char *arg, char *msg, size_t len);
int profile_cli_duration(void *ctx, const char *arg, char *msg, size_t len);
int profile_cli_format(void *ctx, const char *arg, char *msg, size_t len);
int profile_cli_output(void *ctx, const char *arg, char *msg, size_t len);
int profile_cli_record(void *ctx, const char *arg, char *msg, size_t len);
int profile_cli_threads(void *ctx, const char *arg, char *msg, size_t len);

/* The --threads row of profile's and report's option tables. */
#define PROFILE_CLI_THREADS \
	{ 0, "threads", NULL, "text and svg: show every thread, not identical ones once", profile_cli_threads }

#endif /* LOOPSTAT_PROFILE_RUN_H */
