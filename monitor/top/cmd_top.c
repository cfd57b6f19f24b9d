/*
 * cmd_top.c — `loopstat top`: the live dashboard.
 */
#include "cli.h"
#include "model/feed.h"
#include "top/tui.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

struct top_ctx {
	struct cli_common common;
	struct tui_opts tui;
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

/* tui_run's result as an exit code */
static int exit_of(int rc)
{
	if (rc < 0) {
		cli_error("needs a terminal: %s", strerror(-rc));
		return EXIT_FAIL;
	}
	return rc > 0 ? 128 + rc : EXIT_OK;   /* stopped by a signal, as a shell reports it */
}

static const struct cli_option options[] = {
	CLI_OPT_TARGETS,
	CLI_OPT_RATE,
	CLI_OPT_PRECISION,
	CLI_OPT_MAX_WORKERS,
	CLI_OPT_STALL_MS,
	{ 'd', "delay", "DURATION", "time between screen refreshes: 1, 0.5, 2s (default 1 s)", set_delay },
	{ 0, "no-color", NULL, "no colours (also when NO_COLOR is set)", set_no_color },
	{ 0, "replay", "FILE", "replay a recording (loopstat record) at its recorded pace instead of sampling", cli_set_replay },
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct top_ctx c = { 0 };
	cli_common_init(&c.common);
	int rc = cli_parse(&cmd_top, argc, argv, &c);
	if (rc >= 0)
		goto out;
	/* the dashboard would only show these in its header: say them and stop */
	if (!c.common.replay &&
	    ((rc = cli_check_pids(&c.common.targets)) >= 0 || (rc = cli_check_access(&c.common.targets)) >= 0))
		goto out;
	struct feed *f;
	struct feed_opts how = { .paced = 1 };
	if ((rc = cli_feed_open(&c.common, &how, &f)) >= 0)
		goto out;
	c.tui.targeted = !c.common.replay && !targets_all(&c.common.targets);
	rc = exit_of(tui_run(f, &c.tui));
	if (feed_truncated(f))   /* said after the screen is given back, where it stays */
		cli_error("%s was cut short (no end record): its complete records were replayed", c.common.replay);
	feed_close(f);
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
