/*
 * flight.c — the flight recorder (flight.h): the triggers judged each
 * second per worker, the recordings they start, and record's run of it.
 */
#include "profile/flight.h"
#include "profile/flight_dir.h"
#include "profile/flight_int.h"
#include "profile/flight_ring.h"
#include "profile/profile_live.h"
#include "cli.h"
#include "model/feed.h"
#include "model/limit.h"
#include "model/metric.h"
#include "util/idmap.h"
#include "util/safefile.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NS 1000000000ull
#define FLIGHT_JUDGE_S 2.0

struct flight {
	const struct flight_opts *o;
	struct check_set set;
	struct flight_ring *ring;
	struct profile_live *live;       /* flight_hook's, NULL: the command's own hook feeds the ring */
	int    dirfd;
	const char *dir;
	double rate_hz;
	FILE  *say;                      /* where the bound and each recording written are said */
	struct sigaction old_usr2;
	double after_s, cooldown_s;
	struct idmap last;               /* (pid, tid) → 1 + the feed second of its last recording */
	/* the recording being written: one at a time; a trigger meanwhile joins it */
	int    open;
	struct flight_file file;
	uint64_t seq, base_ns, end_ns, lost;
	int    err;
	unsigned written, failed, triggers;
};

static volatile sig_atomic_t dump_asked;

static void on_usr2(int sig)
{
	(void)sig;
	dump_asked = 1;
}

/* A trigger: a new recording, or a "t" record in the one being written. */
static void trigger(struct flight *fl, struct feed *f, uint64_t t_ns, int pid, int tid, const char *text)
{
	fl->triggers++;
	if (!fl->open) {
		uint64_t oldest, newest;
		flight_ring_times(fl->ring, &oldest, &newest);
		if (!newest)
			oldest = newest = t_ns;
		fl->base_ns = oldest < t_ns ? oldest : t_ns;
		double unix0 = feed_unix_at(f, 0);
		struct rec_meta rm = { .rate_hz = fl->rate_hz, .start_unix = unix0 + (double)fl->base_ns / 1e9 };
		gethostname(rm.host, sizeof(rm.host) - 1);
		snprintf(rm.title, sizeof(rm.title), "flight recorder: %s", text);
		char name[NAME_MAX + 1], err[512];
		flight_file_name(fl->dirfd, unix0 + (double)t_ns / 1e9, text, pid, name, sizeof(name));
		if (flight_file_open(&fl->file, fl->dirfd, name, &rm, err, sizeof(err)) < 0) {
			cli_error("a recording for '%s' is lost: %s", text, err);
			fl->failed++;
			return;
		}
		fl->open = 1;
		fl->seq = fl->lost = 0;
		fl->err = rec_write_meta(fl->file.w, "ring_s", (double)(t_ns - fl->base_ns) / 1e9);
		/* --after from the moment it fired: a second's trigger is judged after it */
		fl->end_ns = (uint64_t)(feed_time_s(f) * 1e9) + (uint64_t)(fl->after_s * 1e9);
	}
	struct rec_trigger k = { .t_ns = t_ns - fl->base_ns, .pid = pid, .tid = tid };
	snprintf(k.text, sizeof(k.text), "%s", text);
	if (!fl->err)
		fl->err = rec_write_trigger(fl->file.w, &k);
}

/* The ring's new events into the recording being written; closes it once
 * its --after has passed (or at the end: now_ns 0). */
static void service(struct flight *fl, uint64_t now_ns)
{
	if (!fl->open)
		return;
	if (!fl->err) {
		long n = flight_ring_write(fl->ring, fl->file.w, &fl->seq, fl->base_ns, &fl->lost);
		if (n < 0)
			fl->err = (int)n;
	}
	if (now_ns && now_ns < fl->end_ns)
		return;
	uint64_t oldest, newest;
	flight_ring_times(fl->ring, &oldest, &newest);
	char err[512];
	int64_t bytes = 0;
	fl->open = 0;
	double dur = newest > fl->base_ns ? (double)(newest - fl->base_ns) / 1e9 : 0;
	if (flight_file_close(&fl->file, fl->dirfd, fl->err, round(dur * 1000) / 1000, &bytes, err, sizeof(err)) < 0) {
		cli_error("a recording is lost, the older ones are kept: %s", err);
		fl->failed++;
		return;
	}
	fl->written++;
	fprintf(fl->say, "wrote %s/%s: %lld bytes, %.1f s%s\n", fl->dir, fl->file.name, (long long)bytes, dur,
		fl->lost ? " (events lost: the ring turned over while writing)" : "");
	fflush(fl->say);
	if (fl->o->max_bytes)
		flight_dir_trim(fl->dirfd, fl->o->max_bytes, stderr);
}

static int met(const struct check_threshold *t, double v)
{
	switch (t->op) {
	case CHECK_LT: return v < t->value;
	case CHECK_LE: return v <= t->value;
	case CHECK_GT: return v > t->value;
	case CHECK_GE: return v >= t->value;
	}
	return 0;
}

int flight_second(struct flight *fl, struct feed *f, int64_t sec)
{
	struct model m;
	if (sec >= 1 && feed_range(f, sec, sec, &m) == 0) {
		for (size_t i = 0; i < m.n; i++) {
			/* the second's limit verdict and its reading, kept with the events */
			const struct worker_view *w = &m.workers[i];
			int v = model_limit_of(w, NULL, 0);
			if (v >= 0) {
				struct rec_limit l = { .t_ns = (uint64_t)sec * NS, .pid = w->pid, .tid = w->tid,
						       .reading = model_limit_reading(w, v) };
				snprintf(l.limit, sizeof(l.limit), "%s", model_limit_name((enum metric_limit)v));
				flight_ring_add_limit(fl->ring, &l);
			}
		}
		for (size_t i = 0; i < m.n && fl->set.n; i++) {
			const struct worker_view *w = &m.workers[i];
			size_t last;
			uint64_t key = idmap_pair(w->pid, w->tid);
			if (idmap_get(&fl->last, key, &last) && (double)(sec - ((int64_t)last - 1)) < fl->cooldown_s)
				continue;
			for (size_t k = 0; k < fl->set.n; k++) {
				const struct check_threshold *t = &fl->set.v[k];
				double v = metric_value(metric_find(t->metric->name), w);
				if (isnan(v) || !met(t, v))
					continue;
				char text[REC_TRIGGER_LEN];
				snprintf(text, sizeof(text), "%s", t->text);
				trigger(fl, f, (uint64_t)sec * NS, w->pid, w->tid, text);
				cli_error("trigger %s met by %s %d/%d (%g) in second %lld", t->text, w->name, (int)w->pid,
					  (int)w->tid, v, (long long)sec);
				idmap_put(&fl->last, key, (size_t)sec + 1);
				break;
			}
		}
		model_done(&m);
	}
	service(fl, (uint64_t)(feed_time_s(f) * 1e9));
	return 0;
}

int flight_poll(struct flight *fl, struct feed *f)
{
	uint64_t now = (uint64_t)(feed_time_s(f) * 1e9);
	if (dump_asked) {
		dump_asked = 0;
		cli_error("SIGUSR2: writing the ring");
		trigger(fl, f, now, 0, 0, "SIGUSR2");
	}
	service(fl, now);
	return 0;
}

struct flight *flight_new(const char *cmd, const struct flight_opts *o, const char *dir, double rate_hz, FILE *say,
			  int *rc)
{
	struct flight *fl = calloc(1, sizeof(*fl));
	if (!fl) {
		cli_error("out of memory");
		*rc = EXIT_FAIL;
		return NULL;
	}
	*fl = (struct flight){ .o = o, .dir = dir, .dirfd = -1, .rate_hz = rate_hz, .say = say };
	fl->after_s = o->after_s >= 0 ? o->after_s : FLIGHT_DEFAULT_AFTER_S;
	fl->cooldown_s = o->cooldown_s >= 0 ? o->cooldown_s : FLIGHT_DEFAULT_COOLDOWN_S;
	check_set_init(&fl->set);
	idmap_init(&fl->last);
	sigaction(SIGUSR2, NULL, &fl->old_usr2);
	if ((*rc = flight_parse_triggers(cmd, o, &fl->set)) >= 0)
		goto fail;
	*rc = EXIT_FAIL;
	char err[512];
	if ((fl->dirfd = safefile_dir_open(dir, 1, err, sizeof(err))) < 0) {
		cli_error("%s", err);
		goto fail;
	}
	int64_t bytes = o->ring_bytes ? o->ring_bytes : FLIGHT_DEFAULT_RING_BYTES;
	/* the ring's span and the seconds a trigger takes to be judged: a
	 * recording holds the whole --ring before the second that met it */
	if (!(fl->ring = flight_ring_new((uint64_t)((o->ring_s + FLIGHT_JUDGE_S) * 1e9), (size_t)bytes))) {
		cli_error("making the ring of %lld bytes: %s", (long long)bytes, strerror(errno));
		goto fail;
	}
	size_t bound = flight_ring_bound(fl->ring);
	double per_s = rate_hz * (double)flight_ring_event_bytes();
	fprintf(say, "flight recorder: the last %.1f s in memory, bound %zu bytes (%.1f MiB: %.0f thread-seconds at %g Hz); "
		"recordings in %s\n", o->ring_s, bound, (double)bound / (1 << 20), (double)bound / per_s, rate_hz, dir);
	fflush(say);
	struct sigaction sa = { .sa_handler = on_usr2 };
	sigemptyset(&sa.sa_mask);
	dump_asked = 0;
	sigaction(SIGUSR2, &sa, NULL);
	return fl;
fail:
	flight_delete(fl);
	return NULL;
}

int flight_delete(struct flight *fl)
{
	if (!fl)
		return 0;
	sigaction(SIGUSR2, &fl->old_usr2, NULL);
	int lost = 0;
	if (fl->ring) {
		service(fl, 0);   /* the recording under way ends with the run */
		uint64_t early = flight_ring_evicted_early(fl->ring);
		if (early)
			cli_error("the ring filled before it held %.1f s (%llu events left early): raise --ring-bytes",
				  fl->o->ring_s, (unsigned long long)early);
		cli_error("%u trigger%s, %u recording%s written, %u lost", fl->triggers, fl->triggers == 1 ? "" : "s",
			  fl->written, fl->written == 1 ? "" : "s", fl->failed);
		lost = fl->failed ? -EIO : 0;
	}
	if (fl->dirfd >= 0)
		close(fl->dirfd);
	profile_live_delete(fl->live);
	flight_ring_delete(fl->ring);
	idmap_done(&fl->last);
	check_set_done(&fl->set);
	free(fl);
	return lost;
}

struct flight_ring *flight_ring_of(struct flight *fl) { return fl->ring; }

int flight_hook(struct flight *fl, struct feed_opts *how)
{
	struct profile_live_opts lo = { .ring = fl->ring, .rate_hz = fl->rate_hz };
	if (!(fl->live = profile_live_new(&lo)))
		return -errno;
	how->on_sample = profile_live_on_sample;
	how->on_sample_arg = fl->live;
	how->on_stall = profile_live_on_stall;
	return 0;
}

void flight_stats(const struct flight *fl, struct flight_stats *st)
{
	*st = (struct flight_stats){ .triggers = fl->triggers, .written = fl->written, .failed = fl->failed,
				     .ring_bound = flight_ring_bound(fl->ring) };
}

/* ---- record's run ---- */

static int on_second(void *arg, struct feed *f, int64_t sec) { return flight_second(arg, f, sec); }
static int on_poll(void *arg, struct feed *f) { return flight_poll(arg, f); }

int flight_run(struct record_cli *c, pid_t one)
{
	double rate_hz = c->p.common.rate_hz ? c->p.common.rate_hz : PROFILE_DEFAULT_HZ;
	int rc;
	struct flight *fl = flight_new("record", &c->fo, c->p.out, rate_hz, stdout, &rc);
	if (!fl)
		return rc;
	struct profile_run_opts ro = { .common = &c->p.common, .pid = one, .ring = fl->ring, .second = on_second,
				       .poll = on_poll, .arg = fl };
	struct profile_run_result res;
	int err_run = profile_run(&ro, &res);
	int lost = flight_delete(fl) < 0;
	if (err_run < 0)
		return EXIT_FAIL;
	if (res.signal)
		return lost ? EXIT_FAIL : EXIT_OK;   /* a signal is how a flight recorder is stopped */
	return lost ? EXIT_FAIL : profile_run_verdict(&ro, &res);
}
