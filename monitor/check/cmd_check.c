/*
 * cmd_check.c — `loopstat check`: sample workers under load and judge
 * capacity thresholds (check_expr.h) with an interval honest for
 * autocorrelated samples (estimate.h), for CI.
 *
 * Everything a user wrote is validated before sampling starts (exit 2):
 * thresholds, the config file, the baseline, the report files. Then the
 * feed (model/feed.h) keeps every worker's seconds (model/track.h), so a
 * check may last longer than the sampler's 64-s ring, and calls back at
 * each completed second. The check covers the whole seconds from --warmup
 * on for --duration, and with --max-duration goes on a second at a time
 * while any threshold is undecided. With --replay the seconds are a
 * recording's, read at once; one that ends first is judged as far as it goes.
 */
#include "check/check_baseline.h"
#include "check/check_expr.h"
#include "check/check_report.h"
#include "check/check_series.h"
#include "check/check_verdict.h"
#include "cli.h"
#include "util/clock.h"
#include "util/textsafe.h"
#include "probe_syscall.h"
#include "model/feed.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ull
#define CHECK_DISCOVER_S 2.0   /* without --wait-for-workers: how long to wait for a first worker */
#define CHECK_FILES_MAX  8

struct check_cmd {
	struct cli_common c;         /* first: the shared setters take it */
	double warmup_s, max_duration_s, timeout_s;
	int    duration_given, fleet, per_worker, tap, tap_version, point_estimate, inconclusive_fail;
	double run_sd;               /* --run-sd: points per run, for relative thresholds on shares */
	unsigned wait_workers;
	const char *texts[64];       /* thresholds on the command line, borrowed from argv */
	size_t ntexts;
	const char *config[CHECK_FILES_MAX];
	size_t nconfig;
	const char *junit, *baseline;
};

static int set_duration(void *ctx, const char *arg, char *msg, size_t len)
{
	struct check_cmd *k = ctx;
	k->duration_given = 1;
	return cli_set_duration("duration", arg, 1, 86400, &k->c.duration_s, msg, len);
}

static int set_warmup(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("warmup", arg, 0, 86400, &((struct check_cmd *)ctx)->warmup_s, msg, len);
}

static int set_max_duration(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("max duration", arg, 1, 86400, &((struct check_cmd *)ctx)->max_duration_s, msg, len);
}

static int set_timeout(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("timeout", arg, 0.1, 86400, &((struct check_cmd *)ctx)->timeout_s, msg, len);
}

static int set_wait(void *ctx, const char *arg, char *msg, size_t len)
{
	double n;
	if (cli_parse_number(arg, 1, 100000, &n) == 0 && n == floor(n)) {
		((struct check_cmd *)ctx)->wait_workers = (unsigned)n;
		return 0;
	}
	snprintf(msg, len, "invalid worker count '%s': expected 1 to 100000", arg);
	return -1;
}

static int set_fleet(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct check_cmd *)ctx)->fleet = 1;
	return 0;
}

static int set_per_worker(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct check_cmd *)ctx)->per_worker = 1;
	return 0;
}

static int set_tap(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct check_cmd *)ctx)->tap = 1;
	return 0;
}

static int set_tap_version(void *ctx, const char *arg, char *msg, size_t len)
{
	struct check_cmd *k = ctx;
	if (strcmp(arg, "13") == 0 || strcmp(arg, "14") == 0) {
		k->tap_version = atoi(arg);
		return 0;
	}
	snprintf(msg, len, "invalid TAP version '%s': expected 13 or 14", arg);
	return -1;
}

static int set_point(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct check_cmd *)ctx)->point_estimate = 1;
	return 0;
}

static int set_run_sd(void *ctx, const char *arg, char *msg, size_t len)
{
	return check_set_run_sd(arg, &((struct check_cmd *)ctx)->run_sd, msg, len);
}

static int set_inconclusive(void *ctx, const char *arg, char *msg, size_t len)
{
	struct check_cmd *k = ctx;
	if (strcmp(arg, "fail") == 0 || strcmp(arg, "skip") == 0) {
		k->inconclusive_fail = arg[0] == 'f';
		return 0;
	}
	snprintf(msg, len, "invalid --inconclusive '%s': expected fail or skip", arg);
	return -1;
}

static int set_config(void *ctx, const char *arg, char *msg, size_t len)
{
	struct check_cmd *k = ctx;
	if (k->nconfig == CHECK_FILES_MAX) {
		snprintf(msg, len, "at most %d --config files", CHECK_FILES_MAX);
		return -1;
	}
	k->config[k->nconfig++] = arg;
	return 0;
}

static int set_junit(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	((struct check_cmd *)ctx)->junit = arg;
	return 0;
}

static int set_baseline(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	((struct check_cmd *)ctx)->baseline = arg;
	return 0;
}

static int add_text(void *ctx, const char *arg, char *msg, size_t len)
{
	struct check_cmd *k = ctx;
	if (k->ntexts == sizeof(k->texts) / sizeof(k->texts[0])) {
		snprintf(msg, len, "too many thresholds on the command line: use --config FILE");
		return -1;
	}
	k->texts[k->ntexts++] = arg;
	return 0;
}

static const struct cli_option options[] = {
	CLI_OPT_TARGETS,
	CLI_OPT_RATE,
	CLI_OPT_SOURCE,
	CLI_OPT_PRECISION,
	CLI_OPT_REPLAY,
	{ 'j', "json", NULL, "the results as JSON version 1 on stdout (what --baseline reads)", cli_set_json },
	{ 0, "duration", "DURATION", "time judged, after the warm-up: 10, 30s, 2m (default 10 s)", set_duration },
	{ 0, "warmup", "DURATION", "time sampled first and not judged (default 0)", set_warmup },
	{ 0, "max-duration", "DURATION", "keep sampling past --duration while a threshold is undecided, up to this", set_max_duration },
	{ 0, "per-worker", NULL, "judge each worker on its own (the default)", set_per_worker },
	{ 0, "fleet", NULL, "judge the workers together: shares pooled, rates summed, maxima the largest", set_fleet },
	{ 0, "config", "FILE", "thresholds, one a line ('#' comments), besides those given as arguments", set_config },
	{ 0, "junit", "FILE", "also write JUnit XML to FILE (one testcase per worker and threshold)", set_junit },
	{ 0, "tap", NULL, "TAP on stdout instead of the table", set_tap },
	{ 0, "tap-version", "N", "the TAP version line: 13 (default: every Test::Harness reads it) or 14", set_tap_version },
	{ 0, "wait-for-workers", "N", "wait for N workers before sampling starts (exit 4 after --timeout)", set_wait },
	{ 0, "timeout", "DURATION", "how long --wait-for-workers waits (default 30 s)", set_timeout },
	{ 0, "point-estimate", NULL, "compare the estimate alone, not its interval (weaker: noise flips it)", set_point },
	{ 0, "baseline", "FILE", "a previous --json result, for relative thresholds (idle_pct>=baseline-5)", set_baseline },
	{ 0, "run-sd", "PTS", "how far a share moves between runs of one program beyond their intervals, in points "
	  "per run, counted in a relative threshold's difference (0 to 50, default 1)", set_run_sd },
	{ 0, "inconclusive", "fail|skip", "fail: an undecided threshold fails (exit 1); skip (default): exit 3", set_inconclusive },
	{ 0 },
};

/* ---- before sampling ---- */

static int config_error(const char *what)
{
	cli_error("%s", what);
	return EXIT_USAGE;
}

/* Thresholds, the baseline and the report file: every mistake before sampling. */
static int prepare(struct check_cmd *k, struct check_set *set, struct check_baseline *base, FILE **junit)
{
	size_t nm;
	const struct check_metric *metrics = check_series_metrics(&nm);
	struct check_parse_ctx px = { metrics, nm, check_series_filter_ok, NULL };
	char err[CHECK_ERR_LEN];
	for (size_t i = 0; i < k->ntexts; i++)
		if (check_set_add(set, &px, k->texts[i], err, sizeof(err)) < 0)
			return config_error(err);
	for (size_t i = 0; i < k->nconfig; i++)
		if (check_set_add_file(set, &px, k->config[i], err, sizeof(err)) < 0)
			return config_error(err);
	if (set->n == 0)
		return cli_usage_error("check", "no threshold: give one (idle_pct>=30) or --config FILE");
	if (k->tap && k->c.json)
		return cli_usage_error("check", "--tap and --json both write stdout: choose one");
	if (k->fleet && k->per_worker)
		return cli_usage_error("check", "--fleet and --per-worker exclude each other");
	if (k->timeout_s > 0 && !k->wait_workers)
		return cli_usage_error("check", "--timeout goes with --wait-for-workers");
	if (k->max_duration_s > 0 && k->max_duration_s < k->c.duration_s)
		return cli_usage_error("check", "--max-duration %g is shorter than --duration %g", k->max_duration_s,
				       k->c.duration_s);
	int relative = 0;
	for (size_t i = 0; i < set->n; i++)
		relative |= set->v[i].relative;
	if (relative && !k->baseline)
		return cli_usage_error("check", "a relative threshold (baseline...) needs --baseline FILE");
	if (k->baseline && check_baseline_read(base, k->baseline, err, sizeof(err)) < 0)
		return config_error(err);
	if (k->junit && !(*junit = fopen(k->junit, "w"))) {
		snprintf(err, sizeof(err), "open(%s): %s", k->junit, strerror(errno));
		return config_error(err);
	}
	return cli_check_pids(&k->c.targets);
}

/* ---- sampling ---- */

static size_t live_workers(const struct tracks *tr)
{
	size_t n = 0;
	for (size_t i = 0; i < tr->n; i++)
		n += tr->v[i].present && !tr->v[i].gone;
	return n;
}

struct waiting {
	struct feed *f;
	unsigned want;
};

static int enough_workers(void *arg)
{
	struct waiting *w = arg;
	return live_workers(feed_tracks(w->f)) >= w->want;
}

/* Waits for workers to appear. EXIT_OK, or the exit code after a message. */
static int await_workers(struct check_cmd *k, struct feed *f)
{
	struct waiting w = { f, k->wait_workers ? k->wait_workers : 1 };
	double limit = k->wait_workers ? (k->timeout_s > 0 ? k->timeout_s : 30) : CHECK_DISCOVER_S;
	struct feed_follow ff = { .poll = enough_workers, .arg = &w, .until_s = feed_elapsed_s(f) + limit };
	int rc = feed_follow(f, &ff);
	if (rc < 0)
		return EXIT_FAIL;
	if (rc == 1)
		return EXIT_OK;
	/* is anything there that we may not read? */
	int refused = 0;
	struct model m;
	if (feed_set_all_threads(f, 1) == 0) {
		struct feed_follow settle = { .until_s = feed_elapsed_s(f) + 0.3 };
		feed_follow(f, &settle);
		if (feed_now(f, 1, 0, &m) == 0) {
			for (size_t i = 0; i < m.n; i++)
				refused |= m.workers[i].no_access;
			model_done(&m);
		}
		feed_set_all_threads(f, 0);
	}
	if (refused) {
		cli_error("%s", probe_no_access_text());
		return EXIT_ACCESS;
	}
	size_t found = live_workers(feed_tracks(f));
	char why[512] = "";
	if (!found)
		cli_no_worker_why(&k->c.targets, why, sizeof(why));
	cli_error("%zu worker%s found, %u wanted within %g s: nothing to measure%s%s", found, found == 1 ? "" : "s",
		  w.want, limit, found ? "" : ": ", why);
	return EXIT_NOTHING;
}

/* ---- judging ---- */

struct judged {
	struct check_result *r;      /* owned */
	size_t n;
	int gone;                    /* every worker exited during the check: nothing left to measure */
	unsigned ngone;              /* workers that exited (the others are judged to the end) */
	char gone_what[128];         /* the first of them */
};

static void fill_worker(struct check_result *r, const struct track *tr)
{
	r->pid = tr->pid;
	r->tid = tr->tid;
	snprintf(r->process, sizeof(r->process), "%s", tr->name);
	snprintf(r->tag, sizeof(r->tag), "%s", tr->tag);
}

static int judge_one(const struct check_cmd *k, const struct check_baseline *base, const struct track *const *trs,
		     size_t ntr, int64_t lo, int64_t hi, const struct check_threshold *t, struct check_result *r)
{
	struct estimate e;
	int err = check_series_estimate(trs, ntr, lo, hi, t, &e);
	if (err < 0)
		return err;
	const struct estimate *b = t->relative ? check_baseline_find(base, t, r->process, r->tag) : NULL;
	check_result_judge(r, t, &e, b, k->point_estimate, k->run_sd);
	r->time_s = (double)(hi - lo + 1);
	return 0;
}

/* Every worker (or the fleet) × threshold over seconds [lo, hi]. */
static int judge(const struct check_cmd *k, const struct check_set *set, const struct check_baseline *base,
		 const struct tracks *tr, int64_t lo, int64_t hi, struct judged *out)
{
	size_t nw = k->fleet ? 1 : tr->n;
	free(out->r);
	memset(out, 0, sizeof(*out));
	out->r = calloc(nw * set->n + 1, sizeof(*out->r));
	const struct track **all = calloc(tr->n ? tr->n : 1, sizeof(*all));
	if (!out->r || !all) {
		free(all);
		return -ENOMEM;
	}
	for (size_t i = 0; i < tr->n; i++) {
		all[i] = &tr->v[i];
		if (tr->v[i].gone && !out->ngone++) {
			snprintf(out->gone_what, sizeof(out->gone_what), "worker %s %d/%d exited during the check",
				 tr->v[i].name, (int)tr->v[i].pid, (int)tr->v[i].tid);
			textsafe(out->gone_what);   /* for stderr and TAP's Bail out! */
		}
	}
	out->gone = tr->n && out->ngone == tr->n;
	int err = 0;
	for (size_t w = 0; w < nw && !err; w++)
		for (size_t i = 0; i < set->n && !err; i++) {
			/* a fleet roll-up (idle_pct_min ...) is judged once, over every worker */
			int whole = k->fleet || metric_is_fleet(metric_find_any(set->v[i].metric->name));
			if (whole && w > 0)
				continue;
			struct check_result *r = &out->r[out->n++];
			if (whole)
				snprintf(r->process, sizeof(r->process), "fleet");
			else
				fill_worker(r, all[w]);
			err = whole ? judge_one(k, base, all, tr->n, lo, hi, &set->v[i], r)
				    : judge_one(k, base, &all[w], 1, lo, hi, &set->v[i], r);
			/* a worker that exited is not measured to the end: never a pass;
			 * with others still running it is inconclusive and they are judged */
			if (!err && !whole && all[w]->gone) {
				r->gone = 1;
				if (r->verdict != CHECK_FAIL)
					r->verdict = out->gone ? CHECK_NOTHING : CHECK_INCONCLUSIVE;
			}
		}
	free(all);
	return err;
}

static int decided(const struct judged *j)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->r[i].verdict == CHECK_INCONCLUSIVE)
			return 0;
	return 1;
}

/* The seconds judged, as the feed completes them. */
struct judging {
	const struct check_cmd *k;
	const struct check_set *set;
	const struct check_baseline *base;
	struct feed *f;
	struct judged *j;
	int64_t lo, hi, hi_max;
	int err;
};

/* Every worker exited: what was measured is all there will be. */
static int all_gone(const struct tracks *tr)
{
	for (size_t i = 0; i < tr->n; i++)
		if (!tr->v[i].gone)
			return 0;
	return tr->n > 0;
}

/* Judges [lo, end]: 1 when that is the verdict, 0 to go on a second. */
static int judge_to(struct judging *x, int64_t end, int last)
{
	if (judge(x->k, x->set, x->base, feed_tracks(x->f), x->lo, end, x->j) < 0) {
		x->err = 1;
		return 1;
	}
	if (last || decided(x->j) || end >= x->hi_max)
		return 1;
	x->hi = end + 1;   /* --max-duration: one more second */
	return 0;
}

static int on_second(void *arg, int64_t done)
{
	struct judging *x = arg;
	const struct tracks *tr = feed_tracks(x->f);
	int gone = all_gone(tr);
	if (gone)   /* what was measured */
		done = tr->now_sec - 1;
	if (done < x->hi && !gone)
		return 0;
	return judge_to(x, done < x->hi ? done : x->hi, gone);
}

/* Samples and judges; EXIT_OK with j filled, or an exit code after a message. */
static int sample_and_judge(struct check_cmd *k, const struct check_set *set, const struct check_baseline *base,
			    struct feed *f, struct judged *j)
{
	int rc = await_workers(k, f);
	if (rc != EXIT_OK)
		return rc;
	/* whole seconds, from the first one that starts after the warm-up: a
	 * recording's workers are there from its start, live ones from now */
	double now = feed_time_s(f);
	int64_t lo = feed_whole_after((feed_recorded(f) ? feed_start_s(f) : now) + k->warmup_s);
	struct judging x = { k, set, base, f, j, lo, lo + (int64_t)ceil(k->c.duration_s) - 1, 0, 0 };
	x.hi_max = k->max_duration_s > 0 ? lo + (int64_t)ceil(k->max_duration_s) - 1 : x.hi;
	struct feed_follow ff = { .second = on_second, .arg = &x,
				  .expect_s = feed_elapsed_s(f) + (double)(x.hi - lo + 1) + (lo - now) };
	rc = feed_follow(f, &ff);
	if (rc == FEED_ENDED) {   /* a recording ended first: its seconds are what was measured */
		int64_t end = feed_tracks(f)->now_sec - 1;
		if (end < lo) {
			cli_error("%s ends before the seconds to judge (from %.0f s in)", k->c.replay,
				  (double)lo - (now - feed_elapsed_s(f)));
			return EXIT_NOTHING;
		}
		judge_to(&x, end < x.hi ? end : x.hi, 1);
	}
	return rc < 0 || x.err ? EXIT_FAIL : EXIT_OK;
}

/* ---- reports ---- */

/* The exit code: the verdicts', or EXIT_FAIL when a report was lost (a
 * CI job must not read a pass, or a skip, from a report it cannot have). */
static int report(struct check_cmd *k, struct feed *f, const struct judged *j, double duration_s,
		  const char *timestamp, FILE **junit)
{
	struct utsname u;
	if (uname(&u) < 0)
		memset(&u, 0, sizeof(u));
	struct check_run_info info = {
		.host = u.nodename, .kernel = u.release, .timestamp = timestamp, .rate_hz = feed_rate(f),
		.duration_s = duration_s, .inconclusive_fail = k->inconclusive_fail, .point_estimate = k->point_estimate,
		.tap_version = k->tap_version,
	};
	FILE *people = k->tap || k->c.json ? stderr : stdout;
	/* stdout's write errors are found (with their cause) by cli_finish_output */
	if (k->tap) {
		check_report_tap(stdout, &info, j->r, j->n);
		if (j->gone)
			check_report_tap_bail(stdout, j->gone_what);
	} else if (k->c.json) {
		check_report_json(stdout, &info, j->r, j->n);
	}
	if (j->gone)
		cli_error("%s", j->gone_what);
	else if (j->ngone)
		cli_error("%s%s: %s inconclusive, the others judged to the end", j->gone_what,
			  j->ngone > 1 ? " (and others)" : "", j->ngone > 1 ? "theirs are" : "its thresholds are");
	check_report_table(people, j->r, j->n);
	check_report_summary(people, j->r, j->n);
	int lost = 0;
	if (*junit) {
		check_report_junit(*junit, &info, j->r, j->n);
		lost = cli_close_output(*junit, k->junit, 0) < 0;
		*junit = NULL;
	}
	struct check_tally t;
	check_tally_results(&t, j->r, j->n);
	int rc = check_exit_code(&t, k->inconclusive_fail);
	if (j->gone && rc != EXIT_FAIL)
		rc = EXIT_NOTHING;
	rc = cli_finish_output(rc);
	return lost ? EXIT_FAIL : rc;
}

static int run(int argc, char **argv)
{
	struct check_cmd k = { .run_sd = CHECK_RUN_SD_PTS };
	struct check_set set;
	struct check_baseline base = { 0 };
	struct judged j = { 0 };
	struct feed *f = NULL;
	FILE *junit = NULL;
	cli_common_init(&k.c);
	k.c.duration_s = 10;
	check_set_init(&set);
	int rc = cli_parse(&cmd_check, argc, argv, &k);
	if (rc < 0)
		rc = prepare(&k, &set, &base, &junit);
	if (rc >= 0)
		goto out;

	char timestamp[32];
	time_t now = time(NULL);
	strftime(timestamp, sizeof(timestamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	struct feed_opts how = { .keep_seconds = 1 };
	if ((rc = cli_feed_open(&k.c, &how, &f)) >= 0)
		goto out;
	rc = sample_and_judge(&k, &set, &base, f, &j);
	feed_stop(f);
	if (rc == EXIT_OK)
		rc = report(&k, f, &j, j.n ? j.r[0].time_s : 0, timestamp, &junit);
	feed_close(f);
out:
	if (junit)
		fclose(junit);
	free(j.r);
	check_baseline_done(&base);
	check_set_done(&set);
	cli_common_done(&k.c);
	return rc;
}

const struct cli_command cmd_check = {
	"check", "judge capacity thresholds for CI (idle_pct>=30 stall_ms<100): pass, fail or inconclusive",
	"[OPTIONS] THRESHOLD...",
	"Samples " CLI_TARGETS_HELP " for --warmup +\n"
	"--duration seconds, then judges every worker and threshold\n"
	"(metric op limit, e.g. idle_pct>=30, stall_ms<100ms, blocked_pct{syscall=fsync}<5): pass when\n"
	"the whole 95% interval is on the good side, fail when it is on the bad side, inconclusive\n"
	"otherwise. Every threshold is checked before sampling. Exit 0 all passed, 1 a failure,\n"
	"3 inconclusive, 4 nothing to measure, 2 a usage error. See docs/check.md.",
	options, run, add_text,
};
