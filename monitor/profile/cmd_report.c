/*
 * cmd_report.c — `loopstat report FILE`: a recording rendered in any of
 * profile's formats, through the same accumulator as a live profile.
 */
#include "cli.h"
#include "profile/profile_run.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int set_file(void *ctx, const char *arg, char *msg, size_t len)
{
	struct profile_cli *c = ctx;
	if (c->file) {
		snprintf(msg, len, "report takes one recording, not '%s' too", arg);
		return -1;
	}
	c->file = arg;
	return 0;
}

static const struct cli_option options[] = {
	{ 'f', "format", "FORMAT", PROFILE_FORMAT_LIST, profile_cli_format },
	{ 'o', "output", "FILE", "write the profile to FILE (default: stdout)", profile_cli_output },
	PROFILE_CLI_THREADS,
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct profile_cli c = { 0 };
	cli_common_init(&c.common);
	int rc = cli_parse(&cmd_report, argc, argv, &c);
	if (rc >= 0)
		goto out;
	if (!c.file) {
		rc = cli_usage_error("report", "needs a recording: loopstat report FILE");
		goto out;
	}
	if ((rc = profile_check_output("report", c.fmt, c.out)) >= 0)
		goto out;
	rc = EXIT_FAIL;
	FILE *f = strcmp(c.file, "-") == 0 ? stdin : fopen(c.file, "r");
	if (!f) {
		cli_error("open(%s): %s", c.file, strerror(errno));
		rc = errno == ENOENT ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	struct profile_acc *acc = profile_acc_new(PROFILE_ACC_AUTO_FIBER);
	struct rec_meta rm;
	long line = 0;
	int err = acc ? profile_acc_read(acc, f, &rm, &line) : -ENOMEM;
	if (f != stdin)
		fclose(f);
	if (rec_format_error(err))
		cli_error("%s:%ld: %s", c.file, line, rec_format_error(err));
	else if (err == -E2BIG)
		cli_error("%s:%ld: past what a report reads (lines of %d bytes, %u strings, %u threads, %u tree "
			  "nodes): refused", c.file, line, REC_MAX_LINE, REC_MAX_STRINGS, PROFILE_ACC_MAX_THREADS,
			  PROFILE_TREE_MAX_NODES);
	else if (err < 0)
		cli_error("reading %s: %s", c.file, strerror(-err));
	if (err == 0 && rm.cut) {
		/* a signal or a full disk ended the writer: what it wrote is still samples */
		cli_error("%s was cut short (no end record): the report covers its %.1f s of complete records",
			  c.file, (double)rm.last_t_ns / 1e9);
		rm.duration_s = (double)rm.last_t_ns / 1e9;
	}
	struct profile_tree *t = err == 0 ? profile_acc_finish(acc) : NULL;
	if (err == 0 && !t)
		cli_error("out of memory");
	if (t && profile_acc_samples(acc, NULL, NULL) == 0) {
		cli_error("%s holds no samples", c.file);
		rc = EXIT_NOTHING;
	} else if (t) {
		struct profile_meta meta = { .title = rm.title, .rate_hz = rm.rate_hz, .duration_s = rm.duration_s,
					     .start_unix = rm.start_unix,
					     .threads = c.threads };
		rc = profile_emit(c.out, c.fmt, t, &meta, acc);
	} else if (rec_format_error(err) || err == -E2BIG) {
		rc = EXIT_USAGE;
	}
	profile_acc_delete(acc);
out:
	cli_common_done(&c.common);
	return rc;
}

const struct cli_command cmd_report = {
	"report", "render a recording (record, profile --record) in any of profile's formats",
	"FILE [OPTIONS]",
	"Reads a recording made by 'loopstat record' or 'loopstat profile --record', on this machine or\n"
	"another, and writes the same report a live profile of those samples gives.",
	options, run, set_file, 1,
};
