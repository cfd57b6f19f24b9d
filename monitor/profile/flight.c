/*
 * flight.c — the flight recorder (flight.h): its options, the triggers
 * judged each second per worker, and the recordings they start.
 */
#include "profile/flight.h"
#include "profile/flight_dir.h"
#include "profile/flight_ring.h"
#include "check/check_expr.h"
#include "check/check_series.h"
#include "cli.h"
#include "model/feed.h"
#include "model/metric.h"
#include "util/idmap.h"
#include "util/safefile.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NS 1000000000ull
#define FLIGHT_JUDGE_S 2.0

/* ---- options ---- */

int flight_cli_ring(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("ring", arg, 1, 86400, &((struct record_cli *)ctx)->fo.ring_s, msg, len);
}

int flight_cli_trigger(void *ctx, const char *arg, char *msg, size_t len)
{
	struct flight_opts *o = &((struct record_cli *)ctx)->fo;
	if (o->ntrigger == FLIGHT_MAX_TRIGGERS) {
		snprintf(msg, len, "at most %d triggers", FLIGHT_MAX_TRIGGERS);
		return -1;
	}
	o->trigger[o->ntrigger++] = arg;
	return 0;
}

int flight_cli_after(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("after", arg, 0, 3600, &((struct record_cli *)ctx)->fo.after_s, msg, len);
}

int flight_cli_cooldown(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("cooldown", arg, 0, 7 * 86400, &((struct record_cli *)ctx)->fo.cooldown_s, msg, len);
}

static int set_size(const char *what, const char *arg, int64_t lo, int64_t *out, char *msg, size_t len)
{
	int64_t v = cli_parse_size(arg);
	if (v >= lo)
		return *out = v, 0;
	snprintf(msg, len, "invalid %s '%s': expected a size of at least %lld bytes (4096, 512K, 64M, 1G)", what, arg,
		 (long long)lo);
	return -1;
}

int flight_cli_max_bytes(void *ctx, const char *arg, char *msg, size_t len)
{
	return set_size("max-bytes", arg, 1, &((struct record_cli *)ctx)->fo.max_bytes, msg, len);
}

int flight_cli_ring_bytes(void *ctx, const char *arg, char *msg, size_t len)
{
	return set_size("ring-bytes", arg, (int64_t)4 << 20, &((struct record_cli *)ctx)->fo.ring_bytes, msg, len);
}

/* Parses the triggers into s; -1, or EXIT_USAGE after the message. */
static int parse_triggers(const struct flight_opts *o, struct check_set *s)
{
	size_t nm;
	const struct check_metric *metrics = check_series_metrics(&nm);
	struct check_parse_ctx px = { metrics, nm, check_series_filter_ok, NULL, 0 };
	char err[CHECK_ERR_LEN];
	for (int i = 0; i < o->ntrigger; i++) {
		if (check_set_add(s, &px, o->trigger[i], err, sizeof(err)) < 0)
			return cli_usage_error("record", "--trigger %s", err);
		const struct check_threshold *t = &s->v[s->n - 1];
		/* judged on one worker's second: its own figure, as list shows it */
		if (t->relative || t->nfilter || !metric_find(t->metric->name))
			return cli_usage_error("record", "--trigger '%s': a trigger is a worker's metric against a number "
					       "(no baseline, no filter, no fleet roll-up)", o->trigger[i]);
	}
	return -1;
}

int flight_check_usage(const struct record_cli *c)
{
	const struct flight_opts *o = &c->fo;
	if (o->ring_s <= 0) {
		if (o->ntrigger || o->after_s >= 0 || o->cooldown_s >= 0 || o->max_bytes || o->ring_bytes)
			return cli_usage_error("record", "--trigger, --after, --cooldown, --max-bytes and --ring-bytes "
					       "need --ring");
		return -1;
	}
	if (!c->p.out || strcmp(c->p.out, "-") == 0)
		return cli_usage_error("record", "--ring needs -o DIR: the directory its recordings go to");
	struct check_set s;
	check_set_init(&s);
	int rc = parse_triggers(o, &s);
	check_set_done(&s);
	return rc;
}

/* ---- the run ---- */

struct flight {
	const struct flight_opts *o;
	struct check_set set;
	struct flight_ring *ring;
	int    dirfd;
	const char *dir;
	double rate_hz;
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
	printf("wrote %s/%s: %lld bytes, %.1f s%s\n", fl->dir, fl->file.name, (long long)bytes, dur,
	       fl->lost ? " (events lost: the ring turned over while writing)" : "");
	fflush(stdout);
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

/* Each completed second: every worker's figures against the triggers. */
static int on_second(void *arg, struct feed *f, int64_t sec)
{
	struct flight *fl = arg;
	struct model m;
	if (fl->set.n && sec >= 1 && feed_range(f, sec, sec, &m) == 0) {
		for (size_t i = 0; i < m.n; i++) {
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

/* Each reading: a dump asked for by SIGUSR2, the recording's progress. */
static int on_poll(void *arg, struct feed *f)
{
	struct flight *fl = arg;
	uint64_t now = (uint64_t)(feed_time_s(f) * 1e9);
	if (dump_asked) {
		dump_asked = 0;
		cli_error("SIGUSR2: writing the ring");
		trigger(fl, f, now, 0, 0, "SIGUSR2");
	}
	service(fl, now);
	return 0;
}

int flight_run(struct record_cli *c, pid_t one)
{
	struct flight fl = { .o = &c->fo, .dir = c->p.out, .dirfd = -1 };
	fl.after_s = c->fo.after_s >= 0 ? c->fo.after_s : FLIGHT_DEFAULT_AFTER_S;
	fl.cooldown_s = c->fo.cooldown_s >= 0 ? c->fo.cooldown_s : FLIGHT_DEFAULT_COOLDOWN_S;
	fl.rate_hz = c->p.common.rate_hz ? c->p.common.rate_hz : PROFILE_DEFAULT_HZ;
	check_set_init(&fl.set);
	idmap_init(&fl.last);
	int rc = parse_triggers(&c->fo, &fl.set);
	if (rc >= 0)
		goto out;
	rc = EXIT_FAIL;
	char err[512];
	if ((fl.dirfd = safefile_dir_open(fl.dir, 1, err, sizeof(err))) < 0) {
		cli_error("%s", err);
		goto out;
	}
	int64_t bytes = c->fo.ring_bytes ? c->fo.ring_bytes : FLIGHT_DEFAULT_RING_BYTES;
	/* the ring's span and the seconds a trigger takes to be judged: a
	 * recording holds the whole --ring before the second that met it */
	if (!(fl.ring = flight_ring_new((uint64_t)((c->fo.ring_s + FLIGHT_JUDGE_S) * 1e9), (size_t)bytes))) {
		cli_error("making the ring of %lld bytes: %s", (long long)bytes, strerror(errno));
		goto out;
	}
	size_t bound = flight_ring_bound(fl.ring);
	double per_s = fl.rate_hz * (double)flight_ring_event_bytes();
	printf("flight recorder: the last %.1f s in memory, bound %zu bytes (%.1f MiB: %.0f thread-seconds at %g Hz); "
	       "recordings in %s\n", c->fo.ring_s, bound, (double)bound / (1 << 20), (double)bound / per_s, fl.rate_hz,
	       fl.dir);
	fflush(stdout);
	struct sigaction sa = { .sa_handler = on_usr2 }, old;
	sigemptyset(&sa.sa_mask);
	dump_asked = 0;
	sigaction(SIGUSR2, &sa, &old);
	struct profile_run_opts ro = { .common = &c->p.common, .pid = one, .ring = fl.ring, .second = on_second,
				       .poll = on_poll, .arg = &fl };
	struct profile_run_result res;
	int err_run = profile_run(&ro, &res);
	sigaction(SIGUSR2, &old, NULL);
	service(&fl, 0);   /* the recording under way ends with the run */
	uint64_t early = flight_ring_evicted_early(fl.ring);
	if (early)
		cli_error("the ring filled before it held %.1f s (%llu events left early): raise --ring-bytes",
			  c->fo.ring_s, (unsigned long long)early);
	cli_error("%u trigger%s, %u recording%s written, %u lost", fl.triggers, fl.triggers == 1 ? "" : "s",
		  fl.written, fl.written == 1 ? "" : "s", fl.failed);
	if (err_run < 0)
		rc = EXIT_FAIL;
	else if (res.signal)
		rc = fl.failed ? EXIT_FAIL : EXIT_OK;   /* a signal is how a flight recorder is stopped */
	else
		rc = fl.failed ? EXIT_FAIL : profile_run_verdict(&ro, &res);
out:
	if (fl.dirfd >= 0)
		close(fl.dirfd);
	flight_ring_delete(fl.ring);
	idmap_done(&fl.last);
	check_set_done(&fl.set);
	return rc;
}
