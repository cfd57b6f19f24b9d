/* loopstat check end to end on real workers, judging their shares: inconclusive results, --max-duration, --fleet, --baseline (exit codes of real runs: test_check_exit; the verdict matrix: test_check_verdicts; usage errors: test_check_usage). */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fiberloop.h"
#include "support/check_run.h"
#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("checkcmd");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(check_cmd, .init = setup, .fini = teardown, .timeout = 40);

/* One second of data bounds nothing: every sampled kind is inconclusive;
 * a maximum is an observed fact and decides. */
Test(check_cmd, inconclusive_and_what_decides_it)
{
	pid_t busy = ck_duty("0.2", NULL, NULL);
	char a[4][1024], *out[4];
	const char *th = "'idle_pct>=50' 'ops_per_s>=5' 'cpu_pct<99' 'self_idle_pct<90' 'runqueue_max<=64'";
	snprintf(a[0], sizeof(a[0]), "-p %d --warmup 1 --duration 1 --json %s", (int)busy, th);
	snprintf(a[1], sizeof(a[1]), "-p %d --warmup 1 --duration 1 --inconclusive=fail %s", (int)busy, th);
	snprintf(a[2], sizeof(a[2]), "-p %d --warmup 1 --duration 1 --point-estimate 'idle_pct>=50' 'idle_pct<=60'",
		 (int)busy);
	/* --max-duration samples on until decided */
	snprintf(a[3], sizeof(a[3]),
		 "-p %d --warmup 1 --duration 1 --max-duration 8 --json 'idle_pct<=60' 'ops_per_s>=5'", (int)busy);
	/* the four side by side: each verdict hangs on its own run's data */
	const char *args[] = { a[0], a[1], a[2], a[3] };
	int rc[4];
	ck_check_all(4, args, 0, out, rc);

	cr_expect_eq(rc[0], 3);
	json_object *j = ck_parse(out[0]);
	ck_expect_verdict(j, busy, "idle_pct>=50", "inconclusive");
	ck_expect_verdict(j, busy, "ops_per_s>=5", "inconclusive");
	ck_expect_verdict(j, busy, "cpu_pct<99", "inconclusive");
	ck_expect_verdict(j, busy, "self_idle_pct<90", "inconclusive");
	ck_expect_verdict(j, busy, "runqueue_max<=64", "pass");
	json_object_put(j);

	cr_expect_eq(rc[1], 1, "--inconclusive=fail");
	cr_expect_eq(rc[2], 1, "the estimate alone always decides: exit %d %s", rc[2], out[2]);

	cr_expect_eq(rc[3], 0);
	j = ck_parse(out[3]);
	double t = json_object_get_double(ck_get(ck_result(j, busy, "idle_pct<=60"), "time_s"));
	cr_expect(t >= 2 && t <= 8, "decided after %g s", t);
	json_object_put(j);
	for (int i = 0; i < 4; i++)
		free(out[i]);
	tc_kill(busy);
}

Test(check_cmd, fleet_and_baseline)
{
	pid_t busy = ck_duty("0.2", NULL, NULL), idle = ck_duty("0.95", NULL, NULL);
	char a[1024], *out, *base;
	cr_assert(asprintf(&base, "%s/base.json", dir) > 0);
	char fleet[1024], *outs[2];
	/* Thresholds the workers' own clocks decide on any host: CPU taken by
	 * other work makes a worker wait for a CPU on waking, which its clock
	 * counts as time in its poll and the samples as runnable, so it can
	 * only lower the sampled idle below what the worker's clock says (20
	 * and 95 %, pooled 57.5): at most 90 passes, at least 90 fails. The
	 * last two read the pooled own clock and wait beside it. */
	snprintf(fleet, sizeof(fleet),
		 "-p %d,%d --warmup 1 --duration 3 --fleet --json 'idle_pct<=90' 'idle_pct>=90' 'ops_per_s>=5' "
		 "'self_idle_pct<=100' 'cpu_wait_pct<=100'",
		 (int)busy, (int)idle);
	/* beside it, a baseline of the idle worker (relative thresholds against
	 * it below): busy 5 % of each period by its clock, never above 99 % idle;
	 * judged on its value, as 3 s of 1-s batches (df 2) on a loaded host can
	 * leave the interval's top at 100 */
	snprintf(a, sizeof(a), "-p %d --warmup 1 --duration 3 --point-estimate --json 'idle_pct<=99' > %s", (int)idle, base);
	const char *args[] = { fleet, a };
	int rcs[2];
	ck_check_all(2, args, 0, outs, rcs);
	if (rcs[1] != 0) {
		char *text = ts_read_file(base);
		cr_assert_fail("the baseline's run: exit %d: %s", rcs[1], text);
	}
	free(outs[1]);
	out = outs[0];
	int rc = rcs[0];
	cr_expect_eq(rc, 1, "exit %d", rc);
	json_object *j = ck_parse(out);
	cr_expect_eq(json_object_array_length(ck_get(j, "results")), 5, "one result per threshold for the fleet");
	json_object *r = ck_result(j, 0, "idle_pct<=90");
	cr_expect_str_eq(json_object_get_string(ck_get(r, "process")), "fleet");
	double v = json_object_get_double(ck_get(r, "value"));
	double own = json_object_get_double(ck_get(ck_result(j, 0, "self_idle_pct<=100"), "value"));
	double wait = json_object_get_double(ck_get(ck_result(j, 0, "cpu_wait_pct<=100"), "value"));
	cr_log_info("pooled idle %.2f, the workers' own clocks %.2f, cpu wait %.2f\n", v, own, wait);
	cr_expect(ts_idle_agrees(v, own, wait, 3), "pooled idle %g against the workers' own clocks %g (cpu wait %g)", v,
		  own, wait);
	ck_expect_verdict(j, 0, "idle_pct<=90", "pass");
	ck_expect_verdict(j, 0, "idle_pct>=90", "fail");
	json_object_put(j);
	free(out);

	/* relative thresholds against the idle worker's baseline */
	snprintf(a, sizeof(a), "-p %d --warmup 1 --duration 4 --json --baseline %s 'idle_pct>=baseline-50' "
		 "'idle_pct>=baseline+50' 'running_pct<=baseline+30'", (int)idle, base);
	rc = ck_check(a, 0, &out, NULL);
	cr_expect_eq(rc, 1, "exit %d %s", rc, out);
	j = ck_parse(out);
	ck_expect_verdict(j, idle, "idle_pct>=baseline-50", "pass");
	ck_expect_verdict(j, idle, "idle_pct>=baseline+50", "fail");
	ck_expect_verdict(j, idle, "running_pct<=baseline+30", "nothing");   /* not in the baseline file */
	r = ck_result(j, idle, "idle_pct>=baseline-50");
	cr_expect(json_object_get_type(ck_get(r, "relative")) == json_type_object, "%s", json_object_to_json_string(r));
	json_object_put(j);
	free(out);
	free(base);
	tc_kill(busy);
	tc_kill(idle);
}

