/*
 * cmd_profile.c — `loopstat profile`: where one worker's wall time goes,
 * by state, syscall, fd target, call stack and fiber (docs/profile.md).
 */
#include "cli.h"
#include "util/clock.h"
#include "probe_stat.h"
#include "profile/profile_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct cli_option options[] = {
	{ 'p', "pid", "PID", "the process to profile (required)", profile_cli_pid },
	{ 0, "tid", "TID", "only this thread of it (default: every thread)", profile_cli_tid },
	{ 'r', "rate", "HZ", "samples per second per thread (" CLI_RATE_RANGE ", default 1000)", cli_set_rate },
	{ 0, "duration", "DURATION", "how long to sample: 5, 1.5, 30s, 2m (default 5 s)", profile_cli_duration },
	{ 'f', "format", "FORMAT", PROFILE_FORMAT_LIST, profile_cli_format },
	{ 'o', "output", "FILE", "write the profile to FILE (default: stdout)", profile_cli_output },
	{ 0, "record", "FILE", "also write the raw sample stream to FILE (see record)", profile_cli_record },
	PROFILE_CLI_THREADS,
	{ 0 },
};

/* The title of a profile of pid: "pid 1234 (worker)". */
static void title_of(pid_t pid, pid_t tid, char *buf, size_t len)
{
	struct probe_stat st = { .comm = "?" };
	probe_stat_read(pid, 0, &st);
	if (tid)
		snprintf(buf, len, "pid %d tid %d (%s)", (int)pid, (int)tid, st.comm);
	else
		snprintf(buf, len, "pid %d (%s)", (int)pid, st.comm);
}

static int run(int argc, char **argv)
{
	struct profile_cli c = { 0 };
	cli_common_init(&c.common);
	c.common.duration_s = 5;
	int rc = cli_parse(&cmd_profile, argc, argv, &c);
	if (rc >= 0)
		goto out;
	if (!c.pid) {
		rc = cli_usage_error("profile", "needs -p PID");
		goto out;
	}
	if ((rc = profile_check_output("profile", c.fmt, c.out)) >= 0 || (rc = profile_check_target(c.pid, c.tid)) >= 0)
		goto out;
	struct rec_meta rm = { .rate_hz = c.common.rate_hz ? c.common.rate_hz : PROFILE_DEFAULT_HZ,
				       .start_unix = (double)time(NULL) };
	gethostname(rm.host, sizeof(rm.host) - 1);
	title_of(c.pid, c.tid, rm.title, sizeof(rm.title));
	FILE *recf = NULL, *out = NULL;
	struct rec_writer *rec = NULL;
	struct profile_acc *acc = profile_acc_new(PROFILE_ACC_AUTO_FIBER);
	rc = EXIT_FAIL;
	if (!acc) {
		cli_error("out of memory");
		goto out;
	}
	/* both files are opened before sampling: a bad path fails at once, not after --duration */
	if (!(out = profile_open_out(c.out)))
		goto out_acc;
	if (c.record && (!(recf = profile_open_out(c.record)) || !(rec = rec_writer_new(recf, &rm))))
		goto out_acc;
	struct profile_run_opts ro = { .common = &c.common, .pid = c.pid, .tid = c.tid,
				       .acc = acc, .rec = rec };
	struct profile_run_result res;
	if (profile_run(&ro, &res) < 0)
		goto out_acc;
	/* the same rounding as the recording's trailer, so a report of it matches */
	double dur = round(res.elapsed_s * 1000) / 1000;
	if (rec) {
		int wrc = rec_writer_end(rec, dur);
		rec = NULL;
		if (profile_close_out(recf, c.record, wrc) != EXIT_OK)
			goto out_acc;
		recf = NULL;
	}
	int verdict = profile_run_verdict(&ro, &res);
	if (res.st.samples > 0) {
		struct profile_tree *t = profile_acc_finish(acc);
		struct profile_meta meta = { .title = rm.title, .rate_hz = rm.rate_hz, .duration_s = dur,
					     .start_unix = rm.start_unix,
					     .threads = c.threads };
		if (!t) {
			cli_error("out of memory");
			goto out_acc;
		}
		rc = profile_emit_to(out, c.out, c.fmt, t, &meta, acc);
		out = NULL;
		/* said beside the profile, not in it: a report of the recording
		 * prints the same profile */
		double reached = res.st.threads > 0 && dur > 0 ? (double)res.st.samples / res.st.threads / dur : 0;
		if (reached > 0 && reached < 0.95 * rm.rate_hz)
			cli_error("sampled at %.0f Hz of the %.0f asked: the sampler fell behind, and a sample after "
				  "skipped ticks counts for them too", reached, rm.rate_hz);
		if (res.st.perf_why[0])   /* the profile stands; its on-CPU samples have no stack */
			cli_error("on-CPU samples without stacks: %s", res.st.perf_why);
		if (rc == EXIT_OK && res.st.moved + res.st.unwind_failed > 0 && isatty(STDERR_FILENO))
			cli_error("%llu stacks changed while read, %llu could not be unwound",
				  (unsigned long long)res.st.moved, (unsigned long long)res.st.unwind_failed);
	}
	if (rc == EXIT_OK || res.st.samples == 0)
		rc = verdict;
out_acc:
	if (rec)
		rec_writer_end(rec, 0);
	if (recf && recf != stdout)
		fclose(recf);
	if (out && out != stdout)
		fclose(out);
	profile_acc_delete(acc);
out:
	cli_common_done(&c.common);
	return rc;
}

const struct cli_command cmd_profile = {
	"profile", "where one worker's wall time goes: by state, syscall, fd, call stack and fiber",
	"-p PID [OPTIONS]",
	"Samples every thread of PID (or only --tid) at --rate for --duration seconds without stopping it,\n"
	"and splits all of its wall time: idle in the loop's poll, on CPU, waiting for a CPU, and blocked by\n"
	"syscall, fd target and user stack; by fiber tag for workers on the loopstat runtime. Each share\n"
	"has its 95% interval. A target that exits early still gets the report of what was measured (exit 4).",
	options, run,
};
