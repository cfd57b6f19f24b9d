/* loopstat check's exit codes on real workers: nothing to measure, a target gone mid-check, one of two gone, access refused, a lost report (shares judged: test_check_cmd). These wait on loose bounds, so they run beside other suites. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fiberloop.h"
#include "support/check_run.h"
#include "support/children.h"
#include "support/support.h"
#include "support/users.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("checkexit");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(check_exit, .init = setup, .fini = teardown, .timeout = 40);

Test(check_exit, no_worker_is_exit_4)
{
	char *out;
	long long ms;
	int rc = ck_check("--duration 10 'idle_pct>=30'", 1, &out, &ms);   /* an empty segment directory */
	cr_expect_eq(rc, 4, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "nothing to measure"), "%s", out);
	cr_expect_lt(ms, 5000);
	free(out);
	rc = ck_check("-p 4194000 --duration 10 'idle_pct>=30'", 1, &out, NULL);   /* above any pid_max */
	cr_expect_eq(rc, 4, "a missing target: exit %d: %s", rc, out);
	free(out);
	/* --wait-for-workers: fewer than asked within --timeout is nothing to measure */
	pid_t one = ck_duty("0.5", NULL, NULL);
	char a[256];
	snprintf(a, sizeof(a), "-p %d --wait-for-workers 2 --timeout 1 --duration 10 'idle_pct>=1'", (int)one);
	rc = ck_check(a, 1, &out, &ms);
	cr_expect_eq(rc, 4, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "1 worker found, 2 wanted"), "%s", out);
	cr_expect_lt(ms, 4000, "gives up after --timeout");
	free(out);
	/* enough workers: it samples them. A maximum decides on any amount of
	 * data, so the verdict does not hang on how loaded the machine is. */
	snprintf(a, sizeof(a), "-p %d --wait-for-workers 1 --timeout 5 --duration 2 'runqueue_max<=64'", (int)one);
	rc = ck_check(a, 1, &out, NULL);
	cr_expect_eq(rc, 0, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "1 passed"), "%s", out);
	free(out);
	tc_kill(one);
}

Test(check_exit, target_exiting_mid_check_is_exit_4_and_bails_out)
{
	const char *args[] = { "--idle", "0.5", "--seconds", "2.5", NULL };
	pid_t p = tc_spawn_example("duty_cycle", args, NULL);
	char a[256], *out;
	snprintf(a, sizeof(a), "-p %d --duration 20 --tap 'idle_pct>=10'", (int)p);
	long long ms;
	int rc = ck_check(a, 0, &out, &ms);
	cr_expect_eq(rc, 4, "exit %d: %s", rc, out);
	cr_expect_lt(ms, 8000, "stops when the target is gone, not after --duration");
	cr_expect(strstr(out, "Bail out! worker duty_cycle"), "%s", out);
	cr_expect(strstr(out, "not ok 1"), "a vanished worker never passes: %s", out);
	free(out);
	tc_kill(p);
}

/* Two workers, one of which ends after 2.5 s: the other is still judged to
 * the end (a pass), the one that ended is inconclusive, never a pass, and
 * the run is not cut short nor "nothing to measure". */
Test(check_exit, one_worker_exiting_leaves_the_others_judged)
{
	const char *brief[] = { "--idle", "0.5", "--seconds", "2.5", NULL };
	const char *stays[] = { "--idle", "0.8", "--seconds", "30", NULL };
	pid_t p = tc_spawn_example("duty_cycle", brief, NULL), q = tc_spawn_example("duty_cycle", stays, NULL);
	char a[256], *out;
	snprintf(a, sizeof(a), "-p %d,%d --duration 6 --json 'idle_pct>=10'", (int)p, (int)q);
	long long ms;
	int rc = ck_check(a, 0, &out, &ms);
	cr_expect_eq(rc, 3, "exit %d: %s", rc, out);
	cr_expect_geq(ms, 6000, "stopped when one worker was gone (%lld ms)", ms);
	json_object *doc = json_tokener_parse(strchr(out, '{') ? strchr(out, '{') : out), *res;
	cr_assert(doc && json_object_object_get_ex(doc, "results", &res), "%s", out);
	int seen = 0;
	for (size_t i = 0; i < json_object_array_length(res); i++) {
		json_object *r = json_object_array_get_idx(res, i), *v;
		json_object_object_get_ex(r, "pid", &v);
		pid_t pid = (pid_t)json_object_get_int(v);
		json_object_object_get_ex(r, "verdict", &v);
		const char *verdict = json_object_get_string(v);
		json_object_object_get_ex(r, "gone", &v);
		int gone = json_object_get_boolean(v);
		if (pid == p) {
			cr_expect(gone, "the ended worker is not said gone: %s", out);
			cr_expect_str_eq(verdict, "inconclusive");
			seen++;
		} else if (pid == q) {
			cr_expect(!gone);
			cr_expect_str_eq(verdict, "pass", "the running worker: %s", out);
			seen++;
		}
	}
	cr_expect_eq(seen, 2, "%s", out);
	json_object_put(doc);
	free(out);
	tc_kill(p);
	tc_kill(q);
}

/* A worker /proc will not show us: exit 5 with the fix, not "no worker". */
Test(check_exit, access_refused_is_exit_5)
{
	ts_need_nobody();
	cr_assert_eq(chmod(dir, 0777), 0);
	pid_t p = ck_duty("0.5", "--block", "0.2");   /* a root process; the check runs as nobody */
	char cmd[1024], *out;
	snprintf(cmd, sizeof(cmd),
		 "exec " TS_AS_NOBODY " \"%s\" check -p %d --duration 10 "
		 "'idle_pct>=10' 2>&1", ts_loopstat_bin(), (int)p);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 20000);
	cr_expect_eq(rc, 5, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "CAP_SYS_PTRACE"), "says how to fix it: %s", out);
	free(out);
	tc_kill(p);
}

/* A report that cannot be written is exit 1 with its cause, whatever the
 * verdicts: here an inconclusive run (3 when the report is whole). */
Test(check_exit, a_lost_report_is_exit_1_with_its_cause)
{
	pid_t busy = ck_duty("0.2", NULL, NULL);
	static const struct { const char *opts, *says; } lost[] = {
		{ "--junit /dev/full >/dev/null", "loopstat check: writing /dev/full: No space left on device" },
		{ "--json >/dev/full", "loopstat check: writing the output: No space left on device" },
		{ "--tap >/dev/full", "loopstat check: writing the output: No space left on device" },
		{ ">/dev/null", NULL },   /* the same run, its report whole: inconclusive */
	};
	enum { N = sizeof(lost) / sizeof(lost[0]) };
	char cmd[N][1024], *out[N];
	const char *cmds[N];
	int rc[N];
	for (size_t i = 0; i < N; i++) {   /* side by side: the same run four ways */
		snprintf(cmd[i], sizeof(cmd[i]), "exec \"%s\" check -p %d --duration 1 'idle_pct>=50' 2>&1 %s",
			 ts_loopstat_bin(), (int)busy, lost[i].opts);
		cmds[i] = cmd[i];
	}
	ts_sh_all(N, cmds, out, rc, 20000);
	for (size_t i = 0; i < N; i++) {
		cr_expect_eq(rc[i], lost[i].says ? 1 : 3, "'%s': exit %d: %s", lost[i].opts, rc[i], out[i]);
		if (lost[i].says)
			cr_expect(strstr(out[i], lost[i].says), "'%s' should say '%s': %s", lost[i].opts, lost[i].says,
				  out[i]);
		free(out[i]);
	}
	tc_kill(busy);
}
