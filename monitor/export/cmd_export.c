/*
 * cmd_export.c — `loopstat export`: sample for --duration seconds, then hand
 * one point per metric-table row per worker, plus the fleet totals, to
 * export_run (spool, Graphite destinations, Prometheus textfile).
 *
 * Options: one table, EXPORT_OPTIONS (export_config.h), makes both the
 * option rows here and the config file's keys. The config file (--config)
 * is read first, then the command line's export options are applied over it
 * in their order, through the same export_opts_set the file uses, so the
 * two cannot disagree.
 *
 * --resolution window: one point per metric, the whole run, stamped with
 * the wall-clock second sampling ended. --resolution 1s: one point per
 * metric per second sampled. The sampler's per-second buckets only hold
 * SERIES_DETAIL_S seconds, so instead of copying them all at the end, a
 * snapshot is taken just after each second ends and the model is built over
 * that one complete second (model_build_range: the evaluator over that
 * second's bucket, no rewinding); each point is stamped with the wall-clock second nearest
 * that second's start. A snapshot that comes late fills the seconds since
 * the last one from the ring; a second nothing was sampled in is counted,
 * said on stderr and in the self-report (seconds_missed), never skipped
 * silently.
 */
#include "model/feed.h"
#include "cli.h"
#include "export/export_config.h"
#include "expo/expo_points.h"
#include "export/export_run.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ll
#define EXPORT_CLI_SETS 64

struct export_ctx {
	struct cli_common c;          /* first: the shared setters (-p, -n, --max-workers) work on it */
	const char *config;           /* borrowed from argv */
	struct { const char *key, *value; } set[EXPORT_CLI_SETS];  /* export options, in argv order */
	int nset;
};

/* Checks the value now (so the message names the option) and keeps it
 * for after the config file. */
static int record(void *ctx, const char *key, const char *arg, char *msg, size_t len)
{
	struct export_ctx *x = ctx;
	struct export_opts scratch;
	char why[256];
	export_opts_init(&scratch);
	if (export_opts_set(&scratch, key, arg, why, sizeof(why)) < 0) {
		snprintf(msg, len, "--%s: %s", key, why);
		return -1;
	}
	if (x->nset == EXPORT_CLI_SETS) {
		snprintf(msg, len, "more than %d export options", EXPORT_CLI_SETS);
		return -1;
	}
	x->set[x->nset].key = key;
	x->set[x->nset++].value = arg;
	return 0;
}

/* A setter per OWN row of EXPORT_OPTIONS; the shared rows have cli.h's. */
#define SETTER_OWN(id, key) \
	static int set_##id(void *ctx, const char *arg, char *msg, size_t len) { return record(ctx, key, arg, msg, len); }
#define SETTER_PID(id, key)
#define SETTER_NAME(id, key)
#define SETTER_USER(id, key)
#define SETTER_SERVICE(id, key)
#define SETTER_INSTRUMENTED(id, key)
#define SETTER_ALL(id, key)
#define SETTER_MAX_WORKERS(id, key)
#define SETTER_SOURCE(id, key)
#define SETTER(id, key, sh, arg, help, example, kind, field, cli, lo, hi) SETTER_##cli(id, key)
EXPORT_OPTIONS(SETTER)

static int set_config(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	((struct export_ctx *)ctx)->config = arg;
	return 0;
}

#define ROW_OWN(id, key, sh, arg, help) { sh, key, arg, help, set_##id },
#define ROW_PID(id, key, sh, arg, help) CLI_OPT_PID,
#define ROW_NAME(id, key, sh, arg, help) CLI_OPT_NAME,
#define ROW_USER(id, key, sh, arg, help) CLI_OPT_USER,
#define ROW_SERVICE(id, key, sh, arg, help) CLI_OPT_SERVICE,
#define ROW_INSTRUMENTED(id, key, sh, arg, help) CLI_OPT_INSTRUMENTED,
#define ROW_ALL(id, key, sh, arg, help) CLI_OPT_ALL,
#define ROW_MAX_WORKERS(id, key, sh, arg, help) CLI_OPT_MAX_WORKERS,
#define ROW_SOURCE(id, key, sh, arg, help) CLI_OPT_SOURCE,
#define ROW(id, key, sh, arg, help, example, kind, field, cli, lo, hi) ROW_##cli(id, key, sh, arg, help)
static const struct cli_option options[] = {
	EXPORT_OPTIONS(ROW)
	{ 0, "config", "FILE", "read options from FILE (key = value, keys are the long options)", set_config },
	{ 0 },
};

/* The options in force: config file, then the command line, then the checks
 * that would otherwise wait for the end of sampling. -1 to go on, or an
 * exit code. */
static int configure(struct export_ctx *x, struct export_opts *o)
{
	char err[1400];
	export_opts_init(o);
	if (x->config && export_config_load(o, x->config, err, sizeof(err)) < 0)
		return cli_usage_error("export", "--config: %s", err);
	for (int i = 0; i < x->nset; i++)
		if (export_opts_set(o, x->set[i].key, x->set[i].value, err, sizeof(err)) < 0)
			return cli_usage_error("export", "--%s: %s", x->set[i].key, err);
	/* targets from the file only when the command line names none */
	if (o->pids[0] && x->c.targets.npids == 0 && targets_add_pids(&x->c.targets, o->pids, err, sizeof(err)) < 0)
		return cli_usage_error("export", "pid: %s", err);
	if (o->name_regex[0] && !x->c.name_given &&
	    targets_set_regex(&x->c.targets, o->name_regex, err, sizeof(err)) < 0)
		return cli_usage_error("export", "name: %s", err);
	if (o->user[0] && !x->c.targets.has_uid && targets_set_user(&x->c.targets, o->user, err, sizeof(err)) < 0)
		return cli_usage_error("export", "user: %s", err);
	if (o->service_regex[0] && !x->c.targets.has_service &&
	    targets_set_service(&x->c.targets, o->service_regex, err, sizeof(err)) < 0)
		return cli_usage_error("export", "service: %s", err);
	if (o->instrumented)
		x->c.targets.instrumented_only = 1;
	if (o->all)
		x->c.targets.all_roles = 1;
	if (o->max_workers && !x->c.max_workers)
		x->c.max_workers = o->max_workers;
	if (o->source[0] && !x->c.source_given && cli_set_source(&x->c, o->source, err, sizeof(err)) < 0)
		return cli_usage_error("export", "source: %s", err);
	/* the feed reads the common options (cli_feed_open): the merged ones */
	x->c.rate_hz = o->rate_hz;
	x->c.precision_pts = o->precision_pts;
	x->c.duration_s = o->duration_s;
	if (!o->graphite[0] && !o->prometheus_textfile[0] && !o->dry_run)
		return cli_usage_error("export", "nothing to do: give --graphite HOST:PORT, --prometheus-textfile "
		                       "PATH or --dry-run");
	if (o->graphite[0] && !o->spool[0] && !o->dry_run)
		return cli_usage_error("export", "no spool directory: HOME is unset and uid %u has no home directory; "
		                       "give --spool DIR", (unsigned)geteuid());
	struct export_template t;
	if (export_template_parse(&t, o->tmpl[0] ? o->tmpl : NULL, err, sizeof(err)) < 0)
		return cli_usage_error("export", "--template: %s", err);
	struct export_dest d[EXPORT_DEST_MAX];
	if (o->graphite[0] && export_dest_parse(o->graphite, d, EXPORT_DEST_MAX, err, sizeof(err)) < 0)
		return cli_usage_error("export", "--graphite: %s", err);
	/* paths refused now, not after --duration of sampling (cron would mail it every run) */
	int code = export_run_check(o, stderr);
	if (code != EXIT_OK)
		return code;
	cli_check_pids(&x->c.targets);   /* said; but the run goes on: it still delivers the spool */
	return -1;
}

/* --resolution 1s: the points of every second sampled, taken live (see the
 * top of the file). */
struct seconds {
	struct feed *f;
	const struct export_opts *o;
	const char *host;
	struct expo_points *b;
	int nsec, made, err;
};

static int one_second(void *arg, int64_t sec)
{
	struct seconds *x = arg;
	/* the run's seconds are 1..nsec: the sampler's clock starts at 1 s */
	if (sec < 1 || sec > x->nsec)
		return sec > x->nsec;
	struct model m;
	int sampled = 0, rc = feed_range(x->f, sec, sec, &m);
	if (rc == 0) {
		int64_t ts = (int64_t)floor(feed_unix_at(x->f, sec) + 0.5);
		rc = expo_points_add_model_sampled(x->b, &m, ts, x->o->prefix, x->host, &sampled);
		model_done(&m);
	}
	x->made += sampled;
	x->err = rc;
	return rc < 0 || sec == x->nsec;
}

/* *missed gets the seconds of the run that have no points. 0 or -ENOMEM. */
static int collect_seconds(struct feed *f, const struct export_opts *o, const char *host, struct expo_points *b,
			   uint64_t *missed)
{
	struct seconds x = { f, o, host, b, (int)ceil(o->duration_s - 1e-9), 0, 0 };
	/* a tenth past the last second: the sampler started a little after the feed */
	struct feed_follow ff = { .second = one_second, .arg = &x, .until_s = x.nsec + 1.1, .expect_s = o->duration_s };
	int rc = feed_follow(f, &ff);
	*missed = (uint64_t)(x.nsec - x.made);
	return x.err < 0 ? x.err : rc < 0 ? rc : 0;
}

static int sample_and_export(struct export_ctx *x, const struct export_opts *o)
{
	char host[256];
	expo_points_host(o->host, host, sizeof(host));
	int per_second = strcmp(o->resolution, "1s") == 0;
	struct feed *f;
	struct feed_opts how = { .keep_seconds = !per_second };   /* the run's ± over its seconds, as list's */
	int err = 0, rc = cli_feed_open(&x->c, &how, &f);
	if (rc >= 0)
		return rc;
	struct expo_points b;
	expo_points_init(&b);
	uint64_t missed = 0;
	struct feed_follow wait = { .until_s = o->duration_s, .expect_s = o->duration_s };
	if (per_second)
		err = collect_seconds(f, o, host, &b, &missed);
	else
		err = feed_follow(f, &wait);
	feed_stop(f);
	struct model m;
	if (err == 0)
		err = feed_now(f, 0, 0, &m);
	feed_close(f);
	if (err < 0) {
		cli_error("building the model: %s", strerror(-err));
		expo_points_done(&b);
		return EXIT_FAIL;
	}
	int64_t now = time(NULL);
	/* which source measured, and why auto fell back, as serve's /metrics says it */
	if (!per_second && (expo_points_add_model(&b, &m, o->prefix, host, now) < 0 ||
			    expo_points_add_source(&b, &m, o->prefix, host, now) < 0 ||
			    expo_points_add_ignored(&b, &m, o->prefix, host, now) < 0)) {
		cli_error("out of memory");
		model_done(&m);
		expo_points_done(&b);
		return EXIT_FAIL;
	}
	/* refused, or no worker: said here, as list says it */
	int verdict = cli_model_verdict(&m, &x->c.targets);
	model_done(&m);

	/* With nothing measured, the run still delivers what earlier runs
	 * spooled (a worker restarting must not hold back the backlog). */
	int nothing = verdict != EXIT_OK;
	struct export_result r;
	if (missed && !nothing)
		cli_error("--resolution 1s: %" PRIu64 " of %d seconds have no points: nothing was sampled in them "
		          "(loopstat stopped or starved of CPU)", missed, (int)ceil(o->duration_s - 1e-9));
	struct export_input in = { nothing ? NULL : b.pts, nothing ? 0 : b.n, now, host, missed };
	int code = export_run(o, &in, stdout, stderr, &r);
	expo_points_done(&b);
	if (verdict == EXIT_ACCESS)
		return code == EXIT_USAGE ? code : verdict;
	if (verdict == EXIT_NOTHING)
		return code == EXIT_USAGE || code == EXIT_ACCESS ? code : EXIT_NOTHING;
	return code;
}

static int run(int argc, char **argv)
{
	struct export_ctx x;
	memset(&x, 0, sizeof(x));
	cli_common_init(&x.c);
	struct export_opts o;
	int rc = cli_parse(&cmd_export, argc, argv, &x);
	if (rc < 0)
		rc = configure(&x, &o);
	if (rc < 0)
		rc = sample_and_export(&x, &o);
	cli_common_done(&x.c);
	return cli_finish_output(rc);
}

const struct cli_command cmd_export = {
	"export", "sample for a while, then send the figures to Graphite (and a Prometheus textfile), for cron",
	"--graphite HOST:PORT[,...] [OPTIONS]",
	"Samples for --duration seconds, then writes one Graphite plaintext line per metric per worker,\n"
	"plus fleet totals, to the spool and from there to every destination; nothing on stdout unless\n"
	"--dry-run. Exits 75 when some points wait in the spool for the next run. See docs/export.md.",
	options, run,
};
