/*
 * cmd_top.c — `loopstat top`: the live dashboard.
 */
#include "cli.h"
#include "sampler.h"
#include "tui.h"

#include <stdio.h>
#include <string.h>

struct top_ctx {
	struct cli_common common;
	struct tui_opts tui;
};

static int set_delay(void *ctx, const char *arg, char *msg, size_t len)
{
	struct top_ctx *c = ctx;
	if (cli_parse_number(arg, 0.05, 3600, &c->tui.delay_s) == 0)
		return 0;
	snprintf(msg, len, "invalid delay '%s': expected seconds (0.05 to 3600)", arg);
	return -1;
}

static int set_no_color(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct top_ctx *)ctx)->tui.no_color = 1;
	return 0;
}

static const struct cli_option options[] = {
	CLI_OPT_PID,
	CLI_OPT_NAME,
	CLI_OPT_RATE,
	CLI_OPT_MAX_WORKERS,
	{ 'd', "delay", "SECONDS", "seconds between screen refreshes (default 1)", set_delay },
	{ 0, "no-color", NULL, "no colours (also when NO_COLOR is set)", set_no_color },
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct top_ctx c = { 0 };
	cli_common_init(&c.common);
	int rc = cli_parse(&cmd_top, argc, argv, &c);
	if (rc >= 0)
		goto out;
	struct sampler_opts so = { .rate_hz = c.common.rate_hz, .targets = &c.common.targets,
				   .max_workers = c.common.max_workers };
	struct sampler *s = NULL;
	int err = sampler_new(&so, &s);
	if (err == 0 && (err = sampler_start(s)) < 0)
		sampler_delete(s);
	if (err < 0) {
		fprintf(stderr, "loopstat: starting the sampler: %s\n", strerror(-err));
		rc = EXIT_FAIL;
		goto out;
	}
	c.tui.targeted = !targets_all(&c.common.targets);
	rc = tui_run(s, &c.tui);
	sampler_delete(s);
	if (rc < 0) {
		fprintf(stderr, "loopstat: top needs a terminal: %s\n", strerror(-rc));
		rc = EXIT_FAIL;
	} else if (rc > 0) {
		rc = 128 + rc;   /* stopped by a signal, as a shell reports it */
	}
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
