/*
 * cmd_list.c — `loopstat list`: sample for a while, print every worker once.
 */
#include "cli.h"
#include "list/list.h"
#include "collect/session.h"
#include "model/feed.h"

#include <stdio.h>
#include <string.h>

static int set_duration(void *ctx, const char *arg, char *msg, size_t len)
{
	struct cli_common *c = ctx;
	if (cli_parse_number(arg, 0.05, 86400, &c->duration_s) == 0)
		return 0;
	snprintf(msg, len, "invalid duration '%s': expected seconds (0.05 to 86400)", arg);
	return -1;
}

static const struct cli_option options[] = {
	CLI_OPT_PID,
	CLI_OPT_NAME,
	CLI_OPT_RATE,
	CLI_OPT_JSON,
	CLI_OPT_MAX_WORKERS,
	{ 0, "duration", "SECONDS", "how long to sample (default 2)", set_duration },
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct cli_common c;
	struct model m;
	cli_common_init(&c);
	int rc = cli_parse(&cmd_list, argc, argv, &c);
	if (rc >= 0)
		goto out;
	struct session_opts so = { .targets = &c.targets, .rate_hz = c.rate_hz, .max_workers = c.max_workers };
	rc = EXIT_FAIL;
	struct session se;
	int err = session_start(&se, &so);
	if (err < 0) {
		fprintf(stderr, "loopstat list: starting the sampler: %s\n", strerror(-err));
		goto out;
	}
	session_wait_until(&se, c.duration_s);
	session_stop(&se);
	err = model_of_session(&se, 0, &m);
	session_end(&se);
	if (err < 0) {
		fprintf(stderr, "loopstat list: building the model: %s\n", strerror(-err));
		goto out;
	}
	if (c.json)
		list_print_json(stdout, &m);
	else
		list_print_text(stdout, &m);
	int refused = cli_report_refused(&m);
	model_done(&m);
	rc = cli_finish_output(refused >= 0 ? refused : EXIT_OK);
out:
	cli_common_done(&c);
	return rc;
}

const struct cli_command cmd_list = {
	"list", "sample for a while, then print every worker once (the default when stdout is not a terminal)",
	"[OPTIONS]",
	"Samples every instrumented worker (and the processes named with -p or -n) for --duration seconds,\n"
	"then prints one row per worker, or JSON version 1 with --json.",
	options, run,
};
