/* loopstat check end to end on real workers: exit codes, usage errors before sampling, inconclusive results, JUnit and TAP read back, --max-duration, --fleet, --baseline (the verdict matrix is test_check_verdicts). */
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

#ifdef __SANITIZE_ADDRESS__
#define QUICK_MS 1000
#else
#define QUICK_MS 100
#endif

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("checkcmd");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(check_cmd, .init = setup, .fini = teardown, .timeout = 40);

/* ---- usage: before any sampling ---- */

Test(check_cmd, mistakes_are_exit_2_before_sampling)
{
	char *cfg, *bad_cfg, *bad_json;
	cr_assert(asprintf(&cfg, "%s/missing.checks", dir) > 0);
	cr_assert(asprintf(&bad_cfg, "%s/bad.checks", dir) > 0);
	cr_assert(asprintf(&bad_json, "%s/bad.json", dir) > 0);
	const char text[] = "# capacity\nidle_pct >= 30\n\nstall_ms < 100 furlongs\n";
	cr_assert_eq(ts_write_file(bad_cfg, text, sizeof(text) - 1), 0);
	cr_assert_eq(ts_write_file(bad_json, "{\"version\": 1}", 14), 0);
	struct { const char *args, *says; } bad[] = {
		{ "'idel_pct>=30'", "did you mean idle_pct" },
		{ "'samples>=10'", "valid: idle_pct" },           /* a tally is no threshold */
		{ "'idle_ci95<5'", "unknown metric" },
		{ "'idle_pct=>30'", "column" },
		{ "'idle_pct==30'", "never proves" },
		{ "'idle_pct>=30ms'", "does not fit" },
		{ "'stall_ms<'", "missing the limit" },
		{ "'blocked_pct{syscall=fsnyc}<5'", "no syscall 'fsnyc'" },
		{ "'idle_pct{syscall=read}>5'", "takes no filter" },
		{ "", "no threshold" },
		{ "--config /nonexistent/x.checks", "open(/nonexistent/x.checks)" },
		{ NULL, ":4:" },                                  /* bad_cfg: FILE:LINE:COLUMN */
		{ "'idle_pct>=baseline-5'", "needs --baseline" },
		{ NULL, "not a 'loopstat check --json' result" }, /* bad_json */
		{ "--tap --json 'idle_pct>=30'", "choose one" },
		{ "--duration 0 'idle_pct>=30'", "invalid duration" },
		{ "--inconclusive=maybe 'idle_pct>=30'", "fail or skip" },
		{ "--max-duration 5 'idle_pct>=30'", "shorter than --duration" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char args[1024], *out;
		if (!bad[i].args && strcmp(bad[i].says, ":4:") == 0)
			snprintf(args, sizeof(args), "--duration 10 --config %s", bad_cfg);
		else if (!bad[i].args)
			snprintf(args, sizeof(args), "--duration 10 --baseline %s 'idle_pct>=baseline-5'", bad_json);
		else
			snprintf(args, sizeof(args), "--duration 10 %s", bad[i].args);
		long long ms;
		int rc = ck_check(args, 1, &out, &ms);
		cr_expect_eq(rc, 2, "'%s': exit %d: %s", args, rc, out);
		cr_expect(strstr(out, bad[i].says), "'%s' should say '%s': %s", args, bad[i].says, out);
		/* --duration 10 and an answer within 100 ms (an ASan build starts
		 * slower: 1 s, still a tenth of the duration): nothing was sampled */
		cr_expect_lt(ms, QUICK_MS, "'%s' took %lld ms: it sampled first", args, ms);
		free(out);
	}
	free(cfg);
	free(bad_cfg);
	free(bad_json);
}

/* ---- nothing to measure ---- */

Test(check_cmd, no_worker_is_exit_4)
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

Test(check_cmd, target_exiting_mid_check_is_exit_4_and_bails_out)
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

/* One second of data bounds nothing: every sampled kind is inconclusive;
 * a maximum is an observed fact and decides. */
Test(check_cmd, inconclusive_and_what_decides_it)
{
	pid_t busy = ck_duty("0.2", NULL, NULL);
	char a[1024], *out;
	const char *th = "'idle_pct>=50' 'ops_per_s>=5' 'cpu_pct<99' 'self_idle_pct<90' 'runqueue_max<=64'";
	snprintf(a, sizeof(a), "-p %d --warmup 1 --duration 1 --json %s", (int)busy, th);
	cr_expect_eq(ck_check(a, 0, &out, NULL), 3);
	json_object *j = ck_parse(out);
	ck_expect_verdict(j, busy, "idle_pct>=50", "inconclusive");
	ck_expect_verdict(j, busy, "ops_per_s>=5", "inconclusive");
	ck_expect_verdict(j, busy, "cpu_pct<99", "inconclusive");
	ck_expect_verdict(j, busy, "self_idle_pct<90", "inconclusive");
	ck_expect_verdict(j, busy, "runqueue_max<=64", "pass");
	json_object_put(j);
	free(out);

	snprintf(a, sizeof(a), "-p %d --warmup 1 --duration 1 --inconclusive=fail %s", (int)busy, th);
	cr_expect_eq(ck_check(a, 0, &out, NULL), 1, "--inconclusive=fail");
	free(out);
	snprintf(a, sizeof(a), "-p %d --warmup 1 --duration 1 --point-estimate 'idle_pct>=50' 'idle_pct<=60'",
		 (int)busy);
	int rc = ck_check(a, 0, &out, NULL);
	cr_expect_eq(rc, 1, "the estimate alone always decides: exit %d %s", rc, out);
	free(out);
	/* --max-duration samples on until decided */
	snprintf(a, sizeof(a), "-p %d --warmup 1 --duration 1 --max-duration 8 --json 'idle_pct<=60' 'ops_per_s>=5'",
		 (int)busy);
	cr_expect_eq(ck_check(a, 0, &out, NULL), 0);
	j = ck_parse(out);
	double t = json_object_get_double(ck_get(ck_result(j, busy, "idle_pct<=60"), "time_s"));
	cr_expect(t >= 2 && t <= 8, "decided after %g s", t);
	json_object_put(j);
	free(out);
	tc_kill(busy);
}

Test(check_cmd, fleet_and_baseline)
{
	pid_t busy = ck_duty("0.2", NULL, NULL), idle = ck_duty("0.95", NULL, NULL);
	char a[1024], *out, *base;
	cr_assert(asprintf(&base, "%s/base.json", dir) > 0);
	snprintf(a, sizeof(a), "-p %d,%d --warmup 1 --duration 3 --fleet --json 'idle_pct>=15' 'idle_pct>=90' 'ops_per_s>=5'",
		 (int)busy, (int)idle);
	int rc = ck_check(a, 0, &out, NULL);
	cr_expect_eq(rc, 1, "exit %d", rc);
	json_object *j = ck_parse(out);
	cr_expect_eq(json_object_array_length(ck_get(j, "results")), 3, "one result per threshold for the fleet");
	json_object *r = ck_result(j, 0, "idle_pct>=15");
	cr_expect_str_eq(json_object_get_string(ck_get(r, "process")), "fleet");
	double v = json_object_get_double(ck_get(r, "value"));
	cr_expect(v > 25 && v < 85, "pooled idle of a 20%% and a 95%% worker, between the two: %g", v);
	ck_expect_verdict(j, 0, "idle_pct>=15", "pass");
	ck_expect_verdict(j, 0, "idle_pct>=90", "fail");
	json_object_put(j);
	free(out);

	/* a baseline of the idle worker, then relative thresholds against it */
	snprintf(a, sizeof(a), "-p %d --warmup 1 --duration 3 --json 'idle_pct>=50' > %s", (int)idle, base);
	cr_assert_eq(ck_check(a, 0, &out, NULL), 0);
	free(out);
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

/* A worker /proc will not show us: exit 5 with the fix, not "no worker". */
Test(check_cmd, access_refused_is_exit_5)
{
	if (getuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("needs root and setpriv to run the check as another user");
	cr_assert_eq(chmod(dir, 0777), 0);
	pid_t p = ck_duty("0.5", "--block", "0.2");   /* a root process; the check runs as nobody */
	char cmd[1024], *out;
	snprintf(cmd, sizeof(cmd),
		 "exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups \"%s\" check -p %d --duration 10 "
		 "'idle_pct>=10' 2>&1", ts_loopstat_bin(), (int)p);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 20000);
	cr_expect_eq(rc, 5, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "CAP_SYS_PTRACE"), "says how to fix it: %s", out);
	free(out);
	tc_kill(p);
}

/* A baseline decides verdicts: every figure is a JSON number, finite and
 * in its metric's range, checked before sampling (exit 2, naming it). */
Test(check_cmd, baseline_values_are_checked_before_sampling)
{
#define ROW(value, se) "{\"version\": 1, \"command\": \"check\", \"results\": [{\"metric\": \"idle_pct\", " \
	"\"process\": \"duty_cycle\", \"tag\": \"duty\", \"filter\": {}, \"value\": " value ", \"lo\": null, " \
	"\"hi\": null, \"se\": " se ", \"df\": 3, \"n\": 400, \"n_eff\": 40}]}"
	static const struct { const char *json, *says; } bad[] = {
		{ ROW("-1e308", "1"), "value -1e+308 is out of range (0 to 100)" },
		{ ROW("-Infinity", "1"), "value -inf is out of range" },
		{ ROW("NaN", "1"), "value nan is out of range" },
		{ ROW("\"70\"", "1"), "value is not a number: \"70\"" },
		{ ROW("170", "1"), "value 170 is out of range (0 to 100)" },
		{ ROW("70", "\"1\""), "se is not a number" },
		{ ROW("70", "-1"), "se -1 is out of range" },
		{ ROW("70", "Infinity"), "se inf is out of range" },
		{ "{\"version\": \"1\", \"command\": \"check\", \"results\": []}", "not a 'loopstat check --json' result" },
	};
	char *path;
	cr_assert(asprintf(&path, "%s/base.json", dir) > 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(ts_write_file(path, bad[i].json, strlen(bad[i].json)), 0);
		char a[512], *out;
		long long ms;
		snprintf(a, sizeof(a), "--duration 10 --baseline %s 'idle_pct>=baseline-5'", path);
		int rc = ck_check(a, 1, &out, &ms);
		cr_expect_eq(rc, 2, "%s: exit %d: %s", bad[i].json, rc, out);
		cr_expect(strstr(out, bad[i].says), "%s should say '%s': %s", bad[i].json, bad[i].says, out);
		cr_expect(strncmp(out, "loopstat check: ", 16) == 0, "%s", out);
		cr_expect_lt(ms, QUICK_MS, "refused before sampling");
		free(out);
	}
	/* the same row with sound figures is read: the check goes on to find its target gone (4) */
	const char good[] = ROW("70", "1.5");
	cr_assert_eq(ts_write_file(path, good, sizeof(good) - 1), 0);
	char a[512], *out;
	snprintf(a, sizeof(a), "-p 4194000 --duration 10 --baseline %s 'idle_pct>=baseline-5'", path);
	int rc = ck_check(a, 1, &out, NULL);
	cr_expect_eq(rc, 4, "a sound baseline is accepted: exit %d: %s", rc, out);
	cr_expect(strstr(out, "no process 4194000"), "%s", out);
	free(out);
	free(path);
#undef ROW
}

/* A report that cannot be written is exit 1 with its cause, whatever the
 * verdicts: here an inconclusive run (3 when the report is whole). */
Test(check_cmd, a_lost_report_is_exit_1_with_its_cause)
{
	pid_t busy = ck_duty("0.2", NULL, NULL);
	static const struct { const char *opts, *says; } lost[] = {
		{ "--junit /dev/full >/dev/null", "loopstat check: writing /dev/full: No space left on device" },
		{ "--json >/dev/full", "loopstat check: writing the output: No space left on device" },
		{ "--tap >/dev/full", "loopstat check: writing the output: No space left on device" },
		{ ">/dev/null", NULL },   /* the same run, its report whole: inconclusive */
	};
	for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]); i++) {
		char cmd[1024], *out;
		snprintf(cmd, sizeof(cmd), "exec \"%s\" check -p %d --duration 1 'idle_pct>=50' 2>&1 %s",
			 ts_loopstat_bin(), (int)busy, lost[i].opts);
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };
		int rc = ts_run(argv, &out, 20000);
		cr_expect_eq(rc, lost[i].says ? 1 : 3, "'%s': exit %d: %s", lost[i].opts, rc, out);
		if (lost[i].says)
			cr_expect(strstr(out, lost[i].says), "'%s' should say '%s': %s", lost[i].opts, lost[i].says, out);
		free(out);
	}
	tc_kill(busy);
}
