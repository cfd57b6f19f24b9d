/*
 * feed.c — a source read the same way for every view (feed.h).
 */
#include "model/feed.h"
#include "collect/replay.h"
#include "collect/sampler.h"
#include "collect/source.h"
#include "model/model_build.h"
#include "util/clock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Static_assert((long)MODEL_FEED_DEFAULT_HZ == (long)SAMPLER_DEFAULT_HZ, "one default rate");  /* whole Hz: clang takes no double here */

#define NS 1000000000ull
/* a reading's window covers the time since the one before, plus this:
 * a late reading still carries the seconds it missed and their baselines */
#define FEED_WINDOW_MIN_S 8.0

struct feed {
	struct source src;           /* owned */
	unsigned caps;               /* src's SOURCE_* */
	int      paced;
	int      keep;               /* keep_seconds */
	struct tracks tracks;
	struct snapshot snap;        /* the last reading */
	int      have_snap;
	uint64_t started_mono_ns;    /* live: when measuring began */
	uint64_t last_mono_ns;       /* live: the last reading */
	uint64_t start_ns;           /* the feed's clock at its start (a recording's first reading; live 0) */
	uint64_t rp_ns;              /* a recording not paced: where it has been read to */
	int      rp_read, rp_ended;
	int64_t  next_sec;           /* the first second feed_follow has not reported */
	int64_t  first_sec;          /* the run's first whole second */
	double   unix_off_s;         /* unix time of the feed clock's 0 */
};

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int feed_open(const struct feed_opts *o, struct feed **out, long *line)
{
	struct feed *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	tracks_init(&f->tracks);
	f->paced = o->paced;
	f->keep = o->keep_seconds;
	int err;
	if (o->replay) {
		err = replay_source_open(o->replay, &f->src, line);
	} else {
		struct source_conf c = { .targets = o->targets, .rate_hz = o->rate_hz, .precision_pts = o->precision_pts,
					 .all_threads = o->all_threads, .max_workers = o->max_workers, .stall_ms = o->stall_ms,
					 .on_sample = o->on_sample, .on_sample_arg = o->on_sample_arg, .on_stall = o->on_stall };
		err = source_proc_open(&c, &f->src);
	}
	if (err < 0) {
		free(f);
		return err;
	}
	f->caps = f->src.ops->caps;
	if (f->caps & SOURCE_RECORDED) {
		double u = 0;
		f->start_ns = f->rp_ns = f->src.ops->start_ns(f->src.impl);
		f->src.ops->clock(f->src.impl, &u);   /* at its start: the recording's unix time there */
		f->unix_off_s = u - (double)f->start_ns / 1e9;
		f->next_sec = (int64_t)(f->start_ns / NS);
		f->first_sec = feed_whole_after((double)f->start_ns / 1e9);
		if (!f->paced)
			f->src.ops->advance(f->src.impl, f->rp_ns);
	} else {
		f->next_sec = f->first_sec = 1;   /* the sampler's clock starts at 1 s, a whole second */
		f->unix_off_s = NAN;
	}
	f->started_mono_ns = f->last_mono_ns = mono_ns();
	*out = f;
	return 0;
}

void feed_stop(struct feed *f)
{
	if (f->src.ops->stop)
		f->src.ops->stop(f->src.impl);
}

void feed_close(struct feed *f)
{
	if (!f)
		return;
	source_close(&f->src);
	snapshot_done(&f->snap);
	tracks_done(&f->tracks);
	free(f);
}

static int replay_at_once(const struct feed *f)
{
	return (f->caps & SOURCE_RECORDED) && !f->paced;
}

/* A reading of the source into f->snap, and the kept seconds from it. */
static int reading(struct feed *f, double window_s)
{
	int err = f->src.ops->snapshot(f->src.impl, window_s, 0, &f->snap);
	if (err == 0 && isnan(f->unix_off_s))   /* live: the sampler's clock against the wall's */
		f->unix_off_s = wall_now() - (double)f->snap.now_ns / 1e9;
	if (err == 0)
		f->have_snap = 1;
	if (err == 0 && f->keep)
		err = tracks_update(&f->tracks, &f->snap);
	return err;
}

int64_t feed_whole_after(double t_s)
{
	int64_t sec = (int64_t)ceil(t_s);
	return (double)sec <= t_s ? sec + 1 : sec;
}

int feed_now(struct feed *f, double window_s, int with_history, struct model *m)
{
	struct snapshot snap = { 0 };
	int err = f->src.ops->snapshot(f->src.impl, window_s, with_history, &snap);
	if (err == 0)
		err = model_build(&snap, window_s, m);
	snapshot_done(&snap);
	/* the run's intervals over its whole seconds, however long it was */
	if (err == 0 && f->keep && window_s <= 0 && (err = reading(f, FEED_WINDOW_MIN_S)) == 0)
		err = track_intervals(m, &f->tracks, f->first_sec, f->tracks.now_sec - 1);
	return err;
}

int feed_range(struct feed *f, int64_t lo, int64_t hi, struct model *m)
{
	if (!f->have_snap)
		return -EAGAIN;
	return model_build_range(&f->snap, lo, hi, m);
}

/* The feed's clock at the last reading, and its elapsed run, in seconds. */
static double clock_s(const struct feed *f)
{
	if (f->caps & SOURCE_RECORDED)
		return f->have_snap ? (double)f->snap.now_ns / 1e9 : (double)f->start_ns / 1e9;
	return (double)(mono_ns() - f->started_mono_ns) / 1e9;
}

double feed_elapsed_s(const struct feed *f)
{
	return (f->caps & SOURCE_RECORDED) ? clock_s(f) - (double)f->start_ns / 1e9 : clock_s(f);
}

double feed_time_s(const struct feed *f)
{
	return f->have_snap ? (double)f->snap.now_ns / 1e9 : (double)f->start_ns / 1e9;
}

/* One step of a recording read at once: its first reading where it
 * starts, then just past each second's end. 1 once past its end. */
static int replay_step(struct feed *f)
{
	if (f->rp_read)
		f->rp_ns = (f->rp_ns / NS + 1) * NS + 1;
	f->rp_read = 1;
	return f->src.ops->advance(f->src.impl, f->rp_ns);
}

static void progress(const struct feed *f, const struct feed_follow *ff, int tty)
{
	if (tty && ff->expect_s > 0 && !replay_at_once(f))
		fprintf(stderr, "\rloopstat: sampling %.1f / %.1f s", feed_elapsed_s(f), ff->expect_s);
}

/* Waits for the next reading (live: a poll period, cut at until_s). */
static void wait_poll(const struct feed *f, const struct feed_follow *ff)
{
	double step = FEED_POLL_MS / 1000.0;
	if (ff->until_s > 0 && ff->until_s - feed_elapsed_s(f) < step)
		step = fmax(ff->until_s - feed_elapsed_s(f), 0);
	struct timespec ts = { (time_t)step, (long)((step - floor(step)) * 1e9) };
	nanosleep(&ts, NULL);
}

/* The readings' callbacks: poll, then each newly complete second. */
static int report(struct feed *f, const struct feed_follow *ff)
{
	int rc = ff->poll ? ff->poll(ff->arg) : 0;
	int64_t now_sec = f->have_snap ? (int64_t)(f->snap.now_ns / NS) : f->next_sec;
	for (; rc == 0 && ff->second && f->next_sec < now_sec; f->next_sec++)
		rc = ff->second(ff->arg, f->next_sec);
	if (!ff->second && f->have_snap)
		f->next_sec = now_sec;
	return rc;
}

int feed_follow(struct feed *f, const struct feed_follow *ff)
{
	int tty = ff->expect_s > 0 && isatty(STDERR_FILENO), rc = 0;
	int need = f->keep || ff->second;   /* else only poll's own questions, and time */
	for (;;) {
		if (replay_at_once(f)) {
			if (f->rp_ended) {
				rc = FEED_ENDED;
				break;
			}
			f->rp_ended = replay_step(f);
		} else {
			if (ff->until_s > 0 && feed_elapsed_s(f) >= ff->until_s)
				break;
			wait_poll(f, ff);
		}
		if (need) {
			uint64_t now = mono_ns();
			double gap = (double)(now - f->last_mono_ns) / 1e9;
			f->last_mono_ns = now;
			rc = reading(f, fmax(FEED_WINDOW_MIN_S, replay_at_once(f) ? 3 : gap + 3));
			if (rc < 0)
				break;
		}
		if ((rc = report(f, ff)) != 0)
			break;
		if (replay_at_once(f) && ff->until_s > 0 && feed_elapsed_s(f) >= ff->until_s)
			break;
		progress(f, ff, tty);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	return rc;
}

const struct tracks *feed_tracks(const struct feed *f) { return &f->tracks; }

double feed_unix_at(const struct feed *f, int64_t sec) { return f->unix_off_s + (double)sec; }

double feed_start_s(const struct feed *f)
{
	return (f->caps & SOURCE_RECORDED) ? (double)f->start_ns / 1e9 : 1;
}

int feed_recorded(const struct feed *f) { return (f->caps & SOURCE_RECORDED) != 0; }

int feed_truncated(const struct feed *f)
{
	return f->src.ops->truncated ? f->src.ops->truncated(f->src.impl) : 0;
}

const char *feed_source_name(const struct feed *f) { return f->src.ops->name; }

/* ---- the controls ---- */

double feed_rate(const struct feed *f) { return f->src.ops->rate(f->src.impl); }

int feed_set_rate(struct feed *f, double hz)
{
	if (!f->src.ops->set_rate)
		return -ENOTSUP;
	f->src.ops->set_rate(f->src.impl, hz);
	return 0;
}

void feed_set_paused(struct feed *f, int paused) { f->src.ops->set_paused(f->src.impl, paused); }

int feed_clock(const struct feed *f, double *unix_s)
{
	if (f->src.ops->clock)
		return f->src.ops->clock(f->src.impl, unix_s);
	*unix_s = wall_now();
	return 0;
}

int feed_set_all_threads(struct feed *f, int on)
{
	if (!f->src.ops->set_all_threads)
		return -ENOTSUP;
	f->src.ops->set_all_threads(f->src.impl, on);
	return 0;
}

/* ---- for tests and benches holding a source ---- */

static int from_snapshot(int err, struct snapshot *snap, double window_s, struct model *m)
{
	if (err == 0)
		err = model_build(snap, window_s, m);
	snapshot_done(snap);
	return err;
}

int model_of_source(const struct source *src, double window_s, struct model *m)
{
	struct snapshot snap = { 0 };
	return from_snapshot(src->ops->snapshot(src->impl, window_s, 1, &snap), &snap, window_s, m);
}

int model_of_sampler(struct sampler *s, double window_s, struct model *m)
{
	struct snapshot snap = { 0 };
	return from_snapshot(sampler_snapshot(s, window_s, 1, &snap), &snap, window_s, m);
}
