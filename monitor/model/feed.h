/*
 * feed.h — the one way every view gets its figures, whichever source
 * measures them (collect/source.h: the live /proc sampler, a recording):
 *
 *   figures now          feed_now: the model over the last window, or the run
 *   figures over [lo,hi] feed_range: the model over whole seconds
 *   each completed second feed_follow: a callback per second, in order
 *
 * A command builds its feed from its options in one place (cli.h's
 * cli_feed_open) and never drives a source, a sampler or a clock itself.
 * A recording replays at its recorded pace for the dashboard, and at once
 * for the one-shot commands (list, check): their "seconds" are the
 * recording's.
 */
#ifndef LOOPSTAT_FEED_H
#define LOOPSTAT_FEED_H

#include <stdint.h>

#include "model/model.h"
#include "model/track.h"

/* the sampler's rate when no source says otherwise (a drawing test) */
#define MODEL_FEED_DEFAULT_HZ 100.0

struct source;
struct sampler;
struct sampler_event;
struct sampler_stall_event;
struct targets;

/* What a feed measures, from the command's common options (cli_feed_open). */
struct feed_opts {
	const struct targets *targets;   /* borrowed; outlives the feed */
	double rate_hz;                  /* 0: the sampler's default */
	double precision_pts;            /* 0: the default; < 0 every thread at the rate */
	int    all_threads;              /* also threads never seen polling */
	size_t max_workers;              /* 0: the sampler's default */
	double stall_ms;                 /* 0: the default */
	const char *replay;              /* a recording (loopstat record) instead of sampling; NULL: live */
	int    paced;                    /* replay at the recorded pace (the dashboard), else at once */
	int    keep_seconds;             /* keep every worker's seconds for the whole run (feed_tracks) */
	/* profile and record keep their own record of each sample and stall */
	void (*on_sample)(void *arg, const struct sampler_event *ev);
	void  *on_sample_arg;
	void (*on_stall)(void *arg, const struct sampler_stall_event *ev);
};

struct feed;

/* Opens the source and starts measuring. 0, or -errno: a recording's
 * replay_open errors (-EPROTO, -E2BIG with *line), fopen's, the sampler's. */
int  feed_open(const struct feed_opts *o, struct feed **out, long *line);
/* Stops measuring; the figures stay readable. */
void feed_stop(struct feed *f);
void feed_close(struct feed *f);

/* Figures now: over the last window_s seconds (<= 0: the whole run), the
 * per-second history too when with_history. A recording not paced is read
 * to where feed_follow left it (its end once followed there). With
 * keep_seconds, the run's intervals are over its whole seconds (the run's
 * first whole second to the last complete one): the interval check would
 * judge those seconds with. 0 or -errno. */
int  feed_now(struct feed *f, double window_s, int with_history, struct model *m);

/* Figures over whole seconds [lo, hi] of the feed's clock, from its last
 * reading (feed_follow's seconds: at most the last 60). 0 or -errno. */
int  feed_range(struct feed *f, int64_t lo, int64_t hi, struct model *m);

/* How feed_follow goes on. */
struct feed_follow {
	/* each completed second once, in order; nonzero stops (returned) */
	int  (*second)(void *arg, int64_t sec);
	/* after each reading, before the seconds; nonzero stops (returned) */
	int  (*poll)(void *arg);
	void  *arg;
	double until_s;    /* stop once the run is this long (feed seconds since its start); <= 0: never */
	double expect_s;   /* the progress line's total on a terminal; 0: no progress line */
};

#define FEED_ENDED 1000   /* feed_follow: the recording ended */

/*
 * Reads the source every FEED_POLL_MS (a recording not paced: a second at
 * a time, at once) and calls ff's callbacks. Returns what a callback
 * returned, 0 at until_s, FEED_ENDED at a recording's end, or -errno.
 */
int  feed_follow(struct feed *f, const struct feed_follow *ff);

#define FEED_POLL_MS 100   /* the stall's resolution, as the shm reads' (10 Hz) */

/* The seconds kept (keep_seconds), updated by feed_follow: tracks->now_sec
 * is the feed's current second, those before it are complete. */
const struct tracks *feed_tracks(const struct feed *f);

/* The first whole second that starts after t_s (a reading's time):
 * where a run's judged seconds begin. */
int64_t feed_whole_after(double t_s);

/* Seconds since the feed started, on its clock. */
double feed_elapsed_s(const struct feed *f);
/* The feed's clock at its last reading, in seconds: the numbering of its
 * seconds (feed_follow's, feed_range's, the tracks'). */
double feed_time_s(const struct feed *f);
/* The unix time of the start of feed second sec. */
double feed_unix_at(const struct feed *f, int64_t sec);
/* The feed's clock at its start, in seconds (live: the sampler's 1 s). */
double feed_start_s(const struct feed *f);
/* 1 when the figures come from a recording: its threads are there from
 * its start, not found while it runs. */
int    feed_recorded(const struct feed *f);
/* 1 when the recording replayed was cut short (no end record). */
int    feed_truncated(const struct feed *f);
/* "proc", "replay", ...: what measured the figures. */
const char *feed_source_name(const struct feed *f);

/* The controls, for the dashboard and check. */
double feed_rate(const struct feed *f);
/* -ENOTSUP when the source's rate is fixed (a recording). */
int    feed_set_rate(struct feed *f, double hz);
void   feed_set_paused(struct feed *f, int paused);
/* The wall clock the figures are at: now, or a replay's recording clock
 * (stopped at its end). Returns 1 once a replay has reached its end. */
int    feed_clock(const struct feed *f, double *unix_s);
/* -ENOTSUP when the source cannot show threads never seen polling. */
int    feed_set_all_threads(struct feed *f, int on);

/* A snapshot and model_build() in one call, for tests and benches that
 * hold a source or sampler themselves: figures over the last window_s
 * seconds (<= 0: since sampling started), with the per-second history. */
int model_of_source(const struct source *src, double window_s, struct model *m);
int model_of_sampler(struct sampler *s, double window_s, struct model *m);

#endif /* LOOPSTAT_FEED_H */
