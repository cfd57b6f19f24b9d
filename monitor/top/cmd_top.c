/*
 * cmd_top.c — `loopstat top`: the live dashboard.
 */
#include "cli.h"
#include "collect/recording.h"
#include "collect/replay.h"
#include "collect/sampler.h"
#include "top/tui.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct top_ctx {
	struct cli_common common;
	struct tui_opts tui;
	const char *replay;              /* a recording to replay instead of sampling */
};

static int set_delay(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("delay", arg, 0.05, 3600, &((struct top_ctx *)ctx)->tui.delay_s, msg, len);
}

static int set_no_color(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct top_ctx *)ctx)->tui.no_color = 1;
	return 0;
}

static int set_replay(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	((struct top_ctx *)ctx)->replay = arg;
	return 0;
}

/* tui_run's result as an exit code */
static int exit_of(int rc)
{
	if (rc < 0) {
		cli_error("needs a terminal: %s", strerror(-rc));
		return EXIT_FAIL;
	}
	return rc > 0 ? 128 + rc : EXIT_OK;   /* stopped by a signal, as a shell reports it */
}

/* The dashboard over a recording (loopstat record): no sampler at all. */
static int run_replay(struct top_ctx *c)
{
	FILE *f = fopen(c->replay, "r");
	if (!f) {
		cli_error("open(%s): %s", c->replay, strerror(errno));
		return errno == ENOENT ? EXIT_USAGE : EXIT_FAIL;
	}
	struct replay *r = NULL;
	long line = 0;
	int err = replay_open(f, &r, &line);
	fclose(f);
	if (rec_format_error(err)) {
		cli_error("%s:%ld: %s", c->replay, line, rec_format_error(err));
		return EXIT_USAGE;
	}
	if (err == -E2BIG) {
		cli_error("%s:%ld: past what a replay reads (lines of %d bytes, %u strings, %d threads; "
			  "'loopstat report' takes more threads): refused", c->replay, line, REC_MAX_LINE,
			  REC_MAX_STRINGS, REPLAY_MAX_THREADS);
		return EXIT_USAGE;
	}
	if (err < 0) {
		cli_error("reading %s: %s", c->replay, strerror(-err));
		return EXIT_FAIL;
	}
	struct source src;
	replay_source(r, &src);
	int rc = tui_run(&src, &c->tui);
	if (replay_cut(r))   /* said after the screen is given back, where it stays */
		cli_error("%s was cut short (no end record): its complete records were replayed", c->replay);
	replay_delete(r);
	return exit_of(rc);
}

static const struct cli_option options[] = {
	CLI_OPT_TARGETS,
	CLI_OPT_RATE,
	CLI_OPT_PRECISION,
	CLI_OPT_MAX_WORKERS,
	CLI_OPT_STALL_MS,
	{ 'd', "delay", "DURATION", "time between screen refreshes: 1, 0.5, 2s (default 1 s)", set_delay },
	{ 0, "no-color", NULL, "no colours (also when NO_COLOR is set)", set_no_color },
	{ 0, "replay", "FILE", "replay a recording (loopstat record) at its recorded pace instead of sampling", set_replay },
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct top_ctx c = { 0 };
	cli_common_init(&c.common);
	int rc = cli_parse(&cmd_top, argc, argv, &c);
	if (rc >= 0)
		goto out;
	if (c.replay) {
		rc = run_replay(&c);
		goto out;
	}
	/* the dashboard would only show these in its header: say them and stop */
	if ((rc = cli_check_pids(&c.common.targets)) >= 0 || (rc = cli_check_access(&c.common.targets)) >= 0)
		goto out;
	struct sampler_opts so = { .rate_hz = c.common.rate_hz, .precision_pts = c.common.precision_pts, .targets = &c.common.targets,
				   .max_workers = c.common.max_workers, .stall_ms = c.common.stall_ms };
	struct sampler *s = NULL;
	int err = sampler_new(&so, &s);
	if (err == 0 && (err = sampler_start(s)) < 0)
		sampler_delete(s);
	if (err < 0) {
		cli_error("starting the sampler: %s", strerror(-err));
		rc = EXIT_FAIL;
		goto out;
	}
	c.tui.targeted = !targets_all(&c.common.targets);
	struct source src;
	source_sampler(&src, s);
	rc = exit_of(tui_run(&src, &c.tui));
	sampler_delete(s);
out:
	cli_common_done(&c.common);
	return rc;
}

const struct cli_command cmd_top = {
	"top", "live dashboard (the default when stdout is a terminal)", "[OPTIONS]",
	"Shows every worker's idle%, CPU%, blocked% and top blocker, refreshed every --delay seconds;\n"
	"press ? for the keys. Needs a terminal on stdin and stdout.",
	options, run,
};
