/*
 * cmd_record.c — `loopstat record`: the raw sample stream of a run, with
 * everything resolved to text, for `report` and `top --replay` later or
 * on another machine (format in collect/recording.h).
 */
#include "cli.h"
#include "probe_stat.h"
#include "profile/flight.h"
#include "profile/profile_run.h"

#include <math.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

FLIGHT_CLI_SETTERS(struct record_cli, fo)

static const struct cli_option options[] = {
	{ 'o', "output", "FILE", "the recording to write (required; - for stdout); with --ring, a directory",
	  profile_cli_output },
	CLI_OPT_TARGETS,
	{ 'r', "rate", "HZ", "samples per second per thread (" CLI_RATE_RANGE ", default 1000)", cli_set_rate },
	{ 0, "duration", "DURATION", "how long to record: 5, 1.5, 30s, 2m (default 5 s; with --ring, until "
	  "SIGINT or SIGTERM)", profile_cli_duration },
	CLI_OPT_STALL_MS,
	FLIGHT_CLI_OPTIONS("flight recorder: keep the last DURATION (120s, 2m) in memory; -o names a directory"),
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct record_cli rc_ = { .fo = FLIGHT_OPTS_INIT };
	struct profile_cli *c = &rc_.p;
	cli_common_init(&c->common);
	c->common.duration_s = 0;   /* not given: a flight recorder runs until stopped */
	int rc = cli_parse(&cmd_record, argc, argv, &rc_);
	if (rc >= 0)
		goto out;
	if (!c->out) {
		rc = cli_usage_error("record", "needs -o FILE");
		goto out;
	}
	if ((rc = flight_check_usage("record", &rc_.fo, c->out, "--ring", "-o DIR")) >= 0)
		goto out;
	if (!c->common.duration_s && rc_.fo.ring_s <= 0)
		c->common.duration_s = 5;
	/* one pid: checked first, and its exit ends the recording */
	pid_t one = c->common.targets.npids == 1 && !c->common.targets.has_re ? c->common.targets.pids[0] : 0;
	if (one ? (rc = profile_check_target(one, 0)) >= 0 : (rc = cli_check_pids(&c->common.targets)) >= 0)
		goto out;
	if (rc_.fo.ring_s > 0) {
		rc = flight_run(&rc_, one);
		goto out;
	}
	struct rec_meta rm = { .rate_hz = c->common.rate_hz ? c->common.rate_hz : PROFILE_DEFAULT_HZ,
				       .start_unix = (double)time(NULL) };
	gethostname(rm.host, sizeof(rm.host) - 1);
	snprintf(rm.title, sizeof(rm.title), "loopstat record");
	if (one) {
		struct probe_stat st = { .comm = "?" };
		probe_stat_read(one, 0, &st);
		snprintf(rm.title, sizeof(rm.title), "pid %d (%s)", (int)one, st.comm);
	}
	rc = EXIT_FAIL;
	FILE *f = profile_open_out(c->out);
	if (!f)
		goto out;
	struct rec_writer *rec = rec_writer_new(f, &rm);
	if (!rec) {
		cli_error("out of memory");
		profile_close_out(f, c->out, 0);
		goto out;
	}
	struct profile_run_opts ro = { .common = &c->common, .pid = one, .rec = rec };
	struct profile_run_result res;
	int err = profile_run(&ro, &res);
	int wrc = rec_writer_end(rec, round(res.elapsed_s * 1000) / 1000);
	rc = profile_close_out(f, c->out, wrc);
	if (err < 0)
		rc = EXIT_FAIL;
	else if (rc == EXIT_OK)
		rc = profile_run_verdict(&ro, &res);
out:
	cli_common_done(&c->common);
	return rc;
}

const struct cli_command cmd_record = {
	"record", "write the raw sample stream of a run to a file, for report and top --replay",
	"-o FILE [OPTIONS]",
	"Samples " CLI_TARGETS_HELP " like profile,\n"
	"and writes every sample with its names, fd targets, fiber tags and stack frames resolved to\n"
	"text: version 1, line-based, strings interned. 'loopstat report FILE' renders it anywhere, later.\n"
	"With --ring it is a flight recorder: the last DURATION of every event stays in a bounded ring in\n"
	"memory (its bound printed at the start); each second each worker's figures are judged against the\n"
	"--trigger thresholds (check's grammar; any one met fires), and a trigger writes the ring and the\n"
	"next --after seconds as a recording into the -o directory, named by time and trigger. A trigger\n"
	"while one is being written joins it. At most one per worker per --cooldown; SIGUSR2 writes one on\n"
	"demand. Written as export's spool is (no link followed; a full disk loses the new recording, never\n"
	"the old ones), the directory kept under --max-bytes by removing the oldest first.",
	options, run,
};
