/*
 * cmd_diff.c — `loopstat diff A B`: what changed between two runs, per
 * worker and per service, each metric's change with its 95% interval and
 * a verdict (diff.h); for two recordings also where the time moved, as a
 * differential profile (diff_profile.h). --fail-on gates CI with check's
 * grammar on the changes and check's exit codes.
 */
#include "check/check_series.h"
#include "cli.h"
#include "diff/diff.h"
#include "diff/diff_profile.h"
#include "util/json.h"

#include <errno.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_FAIL_ON_MAX 64

struct diff_cmd {
	struct cli_common c;          /* first: the shared setters take it */
	const char *files[2];
	size_t nfiles;
	const char *fail_on[DIFF_FAIL_ON_MAX];   /* borrowed from argv */
	size_t nfail_on;
	const char *format, *out;
	double run_sd;                /* --run-sd: points per run */
};

static int add_file(void *ctx, const char *arg, char *msg, size_t len)
{
	struct diff_cmd *k = ctx;
	if (k->nfiles == 2) {
		snprintf(msg, len, "diff compares two runs, not '%s' too", arg);
		return -1;
	}
	k->files[k->nfiles++] = arg;
	return 0;
}

static int set_fail_on(void *ctx, const char *arg, char *msg, size_t len)
{
	struct diff_cmd *k = ctx;
	if (k->nfail_on == DIFF_FAIL_ON_MAX) {
		snprintf(msg, len, "more than %d --fail-on thresholds", DIFF_FAIL_ON_MAX);
		return -1;
	}
	k->fail_on[k->nfail_on++] = arg;
	return 0;
}

static int set_format(void *ctx, const char *arg, char *msg, size_t len)
{
	if (!diff_profile_format_ok(arg)) {
		snprintf(msg, len, "invalid format '%s': expected %s", arg, DIFF_PROFILE_FORMATS);
		return -1;
	}
	((struct diff_cmd *)ctx)->format = arg;
	return 0;
}

static int set_output(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	((struct diff_cmd *)ctx)->out = arg;
	return 0;
}

static int set_run_sd(void *ctx, const char *arg, char *msg, size_t len)
{
	return check_set_run_sd(arg, &((struct diff_cmd *)ctx)->run_sd, msg, len);
}

static const struct cli_option options[] = {
	{ 0, "fail-on", "EXPR", "exit 1 when a change holds for a worker or service: check's grammar on the change "
	  "B - A (idle_pct<-5: idle fell by more than 5 points); repeatable", set_fail_on },
	{ 'f', "format", "FORMAT", "the differential profile's format: " DIFF_PROFILE_FORMATS " (default text)",
	  set_format },
	{ 'o', "output", "FILE", "write the differential profile to FILE (folded and svg need it)", set_output },
	{ 0, "run-sd", "PTS", "how far a share moves between runs of one program beyond their intervals, in points "
	  "per run, counted in each change's interval (0 to 50, default 1)", set_run_sd },
	CLI_OPT_JSON,
	{ 0 },
};

/* The --fail-on thresholds, checked before anything is read. -1 or EXIT_USAGE. */
static int parse_fail_on(const struct diff_cmd *k, struct check_set *set)
{
	size_t nm;
	const struct check_metric *metrics = diff_metrics(&nm);
	struct check_parse_ctx px = { metrics, nm, check_series_filter_ok, NULL, 1 };
	char err[CHECK_ERR_LEN];
	for (size_t i = 0; i < k->nfail_on; i++) {
		if (check_set_add(set, &px, k->fail_on[i], err, sizeof(err)) < 0) {
			cli_error("--fail-on: %s", err);
			return EXIT_USAGE;
		}
		if (set->v[set->n - 1].nfilter) {
			cli_error("--fail-on %s: a diff compares whole figures, not filtered ones", k->fail_on[i]);
			return EXIT_USAGE;
		}
	}
	return -1;
}

static int write_profile(const struct diff_cmd *k, struct diff_profile *d)
{
	const char *fmt = k->format ? k->format : "text";
	char title[256];
	snprintf(title, sizeof(title), "loopstat diff %s -> %s", k->files[0], k->files[1]);
	FILE *f = k->out && strcmp(k->out, "-") != 0 ? fopen(k->out, "w") : stdout;
	if (!f) {
		cli_error("open(%s): %s", k->out, strerror(errno));
		return EXIT_FAIL;
	}
	if (f == stdout && strcmp(fmt, "text") == 0)
		fputc('\n', f);
	int err = diff_profile_write(f, fmt, d, title);
	if (f != stdout)
		return cli_close_output(f, k->out, err) < 0 ? EXIT_FAIL : -1;
	if (err < 0) {
		/* said once, with its cause: what could not be written is dropped,
		 * so cli_finish_output's flush does not say it again without one */
		cli_error("writing the output: %s", strerror(-err));
		__fpurge(stdout);
		clearerr(stdout);
		return EXIT_FAIL;
	}
	return -1;
}

static int report(const struct diff_cmd *k, const struct diff_run *a, const struct diff_run *b,
		  const struct diff_result *r, const struct check_set *set, struct diff_profile *d)
{
	if (k->c.json) {
		struct json j;
		json_init(&j, stdout);
		json_object_begin(&j);
		json_key(&j, "version");
		json_u64(&j, 1);
		json_key(&j, "command");
		json_string(&j, "diff");
		json_key(&j, "a");
		json_string(&j, a->path);
		json_key(&j, "b");
		json_string(&j, b->path);
		diff_write_json(&j, r);
		if (d)
			diff_profile_json(&j, d);
		json_object_end(&j);
		fputc('\n', stdout);
	} else {
		diff_write_text(stdout, a, b, r, set);
	}
	if (d && (!k->c.json || k->out))
		return write_profile(k, d);
	return -1;
}

static int run(int argc, char **argv)
{
	struct diff_cmd k = { .run_sd = CHECK_RUN_SD_PTS };
	struct check_set set;
	struct diff_run a = { 0 }, b = { 0 };
	struct diff_result r = { 0 };
	struct diff_profile d = { 0 };
	int have_profile = 0;
	cli_common_init(&k.c);
	check_set_init(&set);
	int rc = cli_parse(&cmd_diff, argc, argv, &k);
	if (rc >= 0)
		goto out;
	if (k.nfiles != 2) {
		rc = cli_usage_error("diff", "needs two runs: loopstat diff A B (recordings, or list/check --json)");
		goto out;
	}
	if (k.format && strcmp(k.format, "text") != 0 && !k.out) {
		rc = cli_usage_error("diff", "--format %s needs -o FILE (the comparison goes to stdout)", k.format);
		goto out;
	}
	if ((rc = parse_fail_on(&k, &set)) >= 0 || (rc = diff_run_load(&a, k.files[0])) >= 0 ||
	    (rc = diff_run_load(&b, k.files[1])) >= 0)
		goto out;
	if (a.recording && b.recording) {
		if ((rc = diff_profile_load(&d, k.files[0], k.files[1])) >= 0)
			goto out;
		have_profile = 1;
	} else if (k.out || k.format) {
		rc = cli_usage_error("diff", "a differential profile needs two recordings");
		goto out;
	}
	if (diff_compare(&a, &b, &set, k.run_sd, &r) < 0) {
		cli_error("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	rc = report(&k, &a, &b, &r, &set, have_profile ? &d : NULL);
	if (rc < 0 && !r.matched) {
		cli_error("no worker or service of %s matches one of %s (by service, name, runtime, role and tag)",
			  k.files[0], k.files[1]);
		rc = EXIT_NOTHING;
	} else if (rc < 0) {
		rc = set.n ? check_exit_code(&r.fail_on, 0) : EXIT_OK;
	}
	rc = cli_finish_output(rc);
out:
	if (have_profile)
		diff_profile_done(&d);
	diff_result_done(&r);
	diff_run_done(&a);
	diff_run_done(&b);
	check_set_done(&set);
	cli_common_done(&k.c);
	return rc;
}

const struct cli_command cmd_diff = {
	"diff", "what changed between two runs: each metric's change with its interval, and where the time moved",
	"[OPTIONS] A B",
	"Compares two runs, each a recording (loopstat record) or a 'list --json' or 'check --json'\n"
	"document. Workers pair by service, name, runtime, role and thread tag (pids change between\n"
	"runs); services are their workers pooled. Each metric's change B - A gets its 95% interval\n"
	"(Welch, as check --baseline judges: each run's own interval plus, for shares, the spread of\n"
	"a figure between runs of one program, --run-sd) and a verdict: worse (the whole\n"
	"interval on the busier side, the metric table's sort direction), better, same (the\n"
	"interval holds 0), or unknown (no interval: a maximum, a figure list has no interval for).\n"
	"Two recordings also give a differential profile: the frames whose share of their thread\n"
	"changed beyond noise.\n"
	"Exit 0, 1 a --fail-on change held, 2 usage, 3 a --fail-on change inconclusive, 4 nothing matched.",
	options, run, add_file, 1,
};
