/*
 * cmd_list.c — `loopstat list`: sample for a while, print every worker once.
 */
#include "cli.h"
#include "list/list.h"
#include "model/feed.h"
#include "model/model_build.h"

#include <stdio.h>
#include <string.h>

static int set_duration(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("duration", arg, 0.05, 86400, &((struct cli_common *)ctx)->duration_s, msg, len);
}

struct list_ctx {
	struct cli_common c;   /* first: the shared setters take the context as one */
	const char *by;        /* NULL: a row per worker; "service", "runtime" or "kind" (static) */
};

static int set_by(void *ctx, const char *arg, char *msg, size_t len)
{
	static const char *const groups[] = { "service", "runtime", "kind" };
	struct list_ctx *x = ctx;
	x->by = NULL;
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		if (strcmp(arg, groups[i]) == 0)
			x->by = groups[i];
	if (x->by || strcmp(arg, "worker") == 0)
		return 0;
	snprintf(msg, len, "invalid --by '%s': expected worker, service, runtime or kind", arg);
	return -1;
}

/* The services' roll-up made over runtimes or kinds instead: each worker's
 * group name in place of its service (the table is all that is printed). */
static void regroup(struct model *m, const char *by)
{
	if (!strcmp(by, "service"))
		return;
	for (size_t i = 0; i < m->n; i++) {
		struct worker_view *w = &m->workers[i];
		snprintf(w->service, sizeof(w->service), "%s", !strcmp(by, "kind") ? w->kind : w->runtime);
	}
	model_fleet(m);
}

static const struct cli_option options[] = {
	CLI_OPT_TARGETS,
	CLI_OPT_RATE,
	CLI_OPT_PRECISION,
	CLI_OPT_JSON,
	CLI_OPT_MAX_WORKERS,
	CLI_OPT_STALL_MS,
	CLI_OPT_REPLAY,
	{ 0, "duration", "DURATION", "how long to sample: 2, 1.5, 30s, 2m (default 2 s)", set_duration },
	{ 0, "by", "worker|service|runtime|kind", "a row per worker (the default), per service, per runtime or per kind",
	  set_by },
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct list_ctx x = { 0 };
	struct cli_common *cc = &x.c;
	struct model m;
	cli_common_init(cc);
	int rc = cli_parse(&cmd_list, argc, argv, &x);
	if (rc >= 0 || (rc = cli_check_pids(&cc->targets)) >= 0)
		goto out;
	struct feed *f;
	struct feed_opts how = { .keep_seconds = 1 };   /* the ± over the run's seconds, as check judges */
	if ((rc = cli_feed_open(cc, &how, &f)) >= 0)
		goto out;
	/* a recording: the whole of it */
	struct feed_follow wait = { .until_s = cc->replay ? 0 : cc->duration_s, .expect_s = cc->duration_s };
	int err = feed_follow(f, &wait);
	feed_stop(f);
	if (err >= 0)
		err = feed_now(f, 0, 0, &m);
	if (feed_truncated(f))
		cli_error("%s was cut short (no end record): its complete records were read", cc->replay);
	feed_close(f);
	if (err < 0) {
		cli_error("sampling: %s", strerror(-err));
		rc = EXIT_FAIL;
		goto out;
	}
	/* the table (or JSON) even when it is empty: a script reads the same shape */
	if (cc->json)
		list_print_json(stdout, &m);
	else if (x.by) {
		regroup(&m, x.by);
		list_print_groups(stdout, &m, x.by);
	}
	else
		list_print_text(stdout, &m);
	rc = cli_finish_output(cli_model_verdict(&m, &cc->targets));
	model_done(&m);
out:
	cli_common_done(cc);
	return rc;
}

const struct cli_command cmd_list = {
	"list", "sample for a while, then print every worker once (the default when stdout is not a terminal)",
	"[OPTIONS]",
	"Samples " CLI_TARGETS_HELP " for --duration seconds,\n"
	"then prints one row per worker (--by service, runtime or kind: per group), or JSON version 1\n"
	"with --json.\n"
	"No worker found is exit 4 (the empty table or JSON is still printed). --replay FILE: the\n"
	"figures of a whole recording.",
	options, run,
};
