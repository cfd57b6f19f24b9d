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
	return cli_set_duration("duration", arg, 0.05, 86400, &((struct cli_common *)ctx)->duration_s, msg, len);
}

static const struct cli_option options[] = {
	CLI_OPT_PID,
	CLI_OPT_NAME,
	CLI_OPT_RATE,
	CLI_OPT_JSON,
	CLI_OPT_MAX_WORKERS,
	CLI_OPT_STALL_MS,
	{ 0, "duration", "DURATION", "how long to sample: 2, 1.5, 30s, 2m (default 2 s)", set_duration },
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct cli_common c;
	struct model m;
	cli_common_init(&c);
	int rc = cli_parse(&cmd_list, argc, argv, &c);
	if (rc >= 0 || (rc = cli_check_pids(&c.targets)) >= 0)
		goto out;
	struct session_opts so = { .targets = &c.targets, .rate_hz = c.rate_hz, .max_workers = c.max_workers,
				   .stall_ms = c.stall_ms };
	struct session se;
	int err = session_start(&se, &so);
	if (err == 0) {
		session_wait_until(&se, c.duration_s);
		session_stop(&se);
		err = model_of_session(&se, 0, &m);
		session_end(&se);
	}
	if (err < 0) {
		cli_error("sampling: %s", strerror(-err));
		rc = EXIT_FAIL;
		goto out;
	}
	/* the table (or JSON) even when it is empty: a script reads the same shape */
	if (c.json)
		list_print_json(stdout, &m);
	else
		list_print_text(stdout, &m);
	rc = cli_finish_output(cli_model_verdict(&m, &c.targets));
	model_done(&m);
out:
	cli_common_done(&c);
	return rc;
}

const struct cli_command cmd_list = {
	"list", "sample for a while, then print every worker once (the default when stdout is not a terminal)",
	"[OPTIONS]",
	"Samples every instrumented worker (and the processes named with -p or -n) for --duration seconds,\n"
	"then prints one row per worker, or JSON version 1 with --json. No worker found is exit 4 (the\n"
	"empty table or JSON is still printed).",
	options, run,
};
