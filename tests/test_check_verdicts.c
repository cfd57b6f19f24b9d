/* loopstat check's verdicts on four real workers at once (busy, idle, blocked in read(2), stalled): a
 * suite of its own, so that no other test's workers share the two CPUs with them (a busy loop starved
 * for a quarter second reads as stalled, which it then was). */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fiberloop.h"
#include "support/check_run.h"
#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("checkverdicts");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(check_verdicts, .init = setup, .fini = teardown, .timeout = 40);

Test(check_verdicts, on_busy_idle_blocked_and_stalled_workers)
{
	pid_t busy = ck_duty("0.2", NULL, NULL), idle = ck_duty("0.95", NULL, NULL);
	pid_t blocked = ck_duty("0.3", "--block", "0.5");   /* plain epoll loop, half its time in read(2) */
	pid_t st = ck_stalled();
	char a[2048], *out;
	snprintf(a, sizeof(a),
		 "-p %d,%d,%d,%d --warmup 1 --duration 8 --json 'idle_pct>=50' 'idle_pct<=40' "
		 "'running_pct>=50' 'blocked_pct{syscall=read}>=25' 'blocked_pct{syscall=read}<10' "
		 "'blocked_pct{syscall=fsync}<5' 'stall_ms<100' 'stall_ms<5s' 'cpu_pct<50' 'ops_per_s>=1M' "
		 "'ops_per_s>=5' 'runqueue_max<=64'",
		 (int)busy, (int)idle, (int)blocked, (int)st);
	int rc = ck_check(a, 0, &out, NULL);
	cr_expect_eq(rc, 1, "a failure outranks nothing-to-measure: exit %d", rc);
	json_object *j = ck_parse(out);
	/* shares: proportions of samples split by schedstat */
	ck_expect_verdict(j, busy, "idle_pct>=50", "fail");
	ck_expect_verdict(j, idle, "idle_pct>=50", "pass");
	ck_expect_verdict(j, blocked, "idle_pct>=50", "fail");
	ck_expect_verdict(j, st, "idle_pct>=50", "fail");
	ck_expect_verdict(j, busy, "idle_pct<=40", "pass");
	ck_expect_verdict(j, st, "idle_pct<=40", "pass");
	ck_expect_verdict(j, idle, "idle_pct<=40", "fail");
	ck_expect_verdict(j, busy, "running_pct>=50", "pass");
	ck_expect_verdict(j, idle, "running_pct>=50", "fail");
	ck_expect_verdict(j, st, "running_pct>=50", "pass");
	ck_expect_verdict(j, blocked, "blocked_pct{syscall=read}>=25", "pass");
	ck_expect_verdict(j, busy, "blocked_pct{syscall=read}>=25", "fail");
	ck_expect_verdict(j, blocked, "blocked_pct{syscall=read}<10", "fail");
	ck_expect_verdict(j, idle, "blocked_pct{syscall=read}<10", "pass");
	ck_expect_verdict(j, blocked, "blocked_pct{syscall=fsync}<5", "pass");
	/* maxima: an observed fact */
	ck_expect_verdict(j, st, "stall_ms<100", "fail");
	ck_expect_verdict(j, st, "stall_ms<5s", "pass");
	ck_expect_verdict(j, busy, "stall_ms<100", "pass");
	ck_expect_verdict(j, idle, "runqueue_max<=64", "pass");
	/* schedstat and counter rates */
	ck_expect_verdict(j, idle, "cpu_pct<50", "pass");
	ck_expect_verdict(j, busy, "ops_per_s>=1M", "fail");
	ck_expect_verdict(j, idle, "ops_per_s>=5", "pass");
	/* counters of an uninstrumented worker: nothing to measure, never a pass */
	ck_expect_verdict(j, blocked, "ops_per_s>=5", "nothing");
	ck_expect_verdict(j, blocked, "stall_ms<100", "nothing");
	json_object *r = ck_result(j, st, "stall_ms<100");
	cr_expect_geq(json_object_get_double(ck_get(r, "value")), 800, "the 1.2 s stall: %s", json_object_to_json_string(r));
	json_object_put(j);
	free(out);
	tc_kill(busy);
	tc_kill(idle);
	tc_kill(blocked);
	tc_kill(st);
}
