/* loopstat check as CI runs it: our own capacity check of echo_server under load (healthy passes, slowed fails), and a real run's JUnit read by junitparser and TAP by prove. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop.h"
#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("checkci");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(check_ci, .init = setup, .fini = teardown, .timeout = 45);

static int sh(const char *cmd, char **out)
{
	char *argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };
	return ts_run(argv, out, 40000);
}

static int check(const char *args, char **out)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "exec \"%s\" check %s", ts_loopstat_bin(), args);
	return sh(cmd, out);
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "no '%s' in %s", key, json_object_to_json_string(o));
	return v;
}
static const char *gets(json_object *o, const char *key) { return json_object_get_string(get(o, key)); }
static double getd(json_object *o, const char *key) { return json_object_get_double(get(o, key)); }

/* ---- our own capacity check ---- */

/* echo_server (slowed by --work-us when work_us) under load at 2000
 * messages/s, checked against tests/capacity.checks; returns the exit code. */
static int capacity_run(const char *work_us, char **out)
{
	const char *slow[] = { "--port", "0", "--work-us", work_us, NULL };
	const char *fast[] = { "--port", "0", NULL };
	int so;
	pid_t srv = tc_spawn_example("echo_server", work_us ? slow : fast, &so);
	FILE *f = fdopen(so, "r");
	int port = 0;
	cr_assert(f && fscanf(f, "port %d", &port) == 1 && port > 0, "echo_server says its port");
	char portarg[16];
	snprintf(portarg, sizeof(portarg), "%d", port);
	const char *largs[] = { "--port", portarg, "--connections", "20", "--rate", "2000", "--duration", "12", NULL };
	pid_t load = tc_spawn_example("load", largs, NULL);
	char a[512];
	snprintf(a, sizeof(a), "-p %d --warmup 1 --duration 5 --config tests/capacity.checks --json 2>/dev/null",
		 (int)srv);
	int rc = check(a, out);
	tc_kill(load);
	tc_kill(srv);
	fclose(f);
	return rc;
}

static const char *verdict_of(json_object *j, const char *threshold)
{
	json_object *rs = get(j, "results");
	for (size_t i = 0; i < json_object_array_length(rs); i++)
		if (strcmp(gets(json_object_array_get_idx(rs, i), "threshold"), threshold) == 0)
			return gets(json_object_array_get_idx(rs, i), "verdict");
	cr_assert_fail("no %s in %s", threshold, json_object_to_json_string(j));
	return NULL;
}

Test(check_ci, echo_server_capacity_passes_and_a_slowed_server_fails)
{
	char *out;
	int rc = capacity_run(NULL, &out);
	cr_expect_eq(rc, 0, "the healthy server passes tests/capacity.checks: exit %d\n%s", rc, out);
	json_object *j = json_tokener_parse(out);
	cr_assert(j, "%s", out);
	cr_expect_eq(json_object_array_length(get(j, "results")), 5);
	json_object_put(j);
	free(out);

	/* 1 ms of CPU per message at 2000/s: twice what one core can do */
	rc = capacity_run("1000", &out);
	cr_expect_eq(rc, 1, "the slowed server fails: exit %d\n%s", rc, out);
	j = json_tokener_parse(out);
	cr_assert(j, "%s", out);
	cr_expect_str_eq(verdict_of(j, "idle_pct>=50"), "fail");
	json_object_put(j);
	free(out);
}

/* ---- a real run's reports ---- */

static const char junit_py[] =
	"import json, sys\n"
	"from junitparser import JUnitXml, Properties\n"
	"xml = JUnitXml.fromfile(sys.argv[1])\n"
	"out = []\n"
	"for suite in xml:\n"
	"    s = {'tests': suite.tests, 'failures': suite.failures, 'errors': suite.errors, 'skipped': suite.skipped,\n"
	"         'props': {p.name: p.value for p in suite.properties()}, 'cases': []}\n"
	"    for case in suite:\n"
	"        props = case.child(Properties)\n"
	"        res = [{'tag': r._tag, 'text': r.text} for r in case.result]\n"
	"        s['cases'].append({'classname': case.classname, 'name': case.name, 'time': case.time,\n"
	"                           'props': {p.name: p.value for p in props} if props is not None else {},\n"
	"                           'result': res})\n"
	"    out.append(s)\n"
	"print(json.dumps(out))\n";

static json_object *parse_junit(const char *xml)
{
	char *py, *out = NULL;
	cr_assert(asprintf(&py, "%s/read_junit.py", dir) > 0);
	cr_assert_eq(ts_write_file(py, junit_py, sizeof(junit_py) - 1), 0);
	char *argv[] = { "/usr/bin/python3", py, (char *)xml, NULL };
	int rc = ts_run(argv, &out, 20000);
	cr_assert_eq(rc, 0, "python3-junitparser could not read %s: %s", xml, out);
	json_object *o = json_tokener_parse(out);
	cr_assert(o, "%s", out);
	free(out);
	free(py);
	return o;
}

static int close_to(double a, double b) { return fabs(a - b) <= 1e-3 * fmax(1, fabs(b)); }

Test(check_ci, junit_of_a_real_run_read_by_junitparser)
{
	const char *busy_a[] = { "--idle", "0.2", "--seconds", "20", NULL };
	const char *idle_a[] = { "--idle", "0.95", "--seconds", "20", NULL };
	pid_t busy = tc_spawn_example("duty_cycle", busy_a, NULL), idle = tc_spawn_example("duty_cycle", idle_a, NULL);
	char a[1024], *xml, *out;
	cr_assert(asprintf(&xml, "%s/check.xml", dir) > 0);
	snprintf(a, sizeof(a), "-p %d,%d --warmup 1 --duration 3 --json --junit %s 'idle_pct>=50' 'idle_pct<=60' 2>/dev/null",
		 (int)busy, (int)idle, xml);
	cr_expect_eq(check(a, &out), 1);
	json_object *j = json_tokener_parse(out);
	cr_assert(j, "%s", out);
	json_object *results = get(j, "results");
	cr_assert_eq(json_object_array_length(results), 4);

	json_object *all = parse_junit(xml);
	json_object *s = json_object_array_get_idx(all, 0);
	cr_expect_eq(getd(s, "tests"), 4);
	cr_expect_eq(getd(s, "failures"), 2, "busy fails idle_pct>=50, idle fails idle_pct<=60");
	cr_expect_eq(getd(s, "errors"), 0);
	cr_expect_eq(getd(s, "skipped"), 0);
	cr_expect_eq(atof(gets(get(s, "props"), "rate")), 100);
	json_object *cases = get(s, "cases");
	cr_assert_eq(json_object_array_length(cases), 4);
	for (size_t i = 0; i < 4; i++) {
		json_object *c = json_object_array_get_idx(cases, i), *r = json_object_array_get_idx(results, i);
		json_object *p = get(c, "props");
		cr_expect_str_eq(gets(c, "classname"), "loopstat.duty_cycle");
		char name[256];   /* two processes named duty_cycle: told apart by tid */
		snprintf(name, sizeof(name), "%s (tid %d)", gets(r, "threshold"), json_object_get_int(get(r, "tid")));
		cr_expect_str_eq(gets(c, "name"), name);
		cr_expect(close_to(getd(c, "time"), 3), "time %g", getd(c, "time"));
		cr_expect_str_eq(gets(p, "verdict"), gets(r, "verdict"));
		cr_expect_eq(atoi(gets(p, "pid")), json_object_get_int(get(r, "pid")));
		cr_expect(close_to(atof(gets(p, "value")), getd(r, "value")), "%s vs %g", gets(p, "value"), getd(r, "value"));
		cr_expect(close_to(atof(gets(p, "interval_lo")), getd(r, "lo")));
		cr_expect(close_to(atof(gets(p, "interval_hi")), getd(r, "hi")));
		cr_expect(close_to(atof(gets(p, "limit")), getd(r, "limit")));
		cr_expect(close_to(atof(gets(p, "n")), getd(r, "n")));
		cr_expect(close_to(atof(gets(p, "n_eff")), getd(r, "n_eff")));
		json_object *rl = get(c, "result");
		if (strcmp(gets(r, "verdict"), "fail") == 0) {
			cr_assert_eq(json_object_array_length(rl), 1);
			json_object *x = json_object_array_get_idx(rl, 0);
			cr_expect_str_eq(gets(x, "tag"), "failure");
			const char *text = gets(x, "text");
			cr_expect(text && strstr(text, "value: ") && strstr(text, "interval: [") && strstr(text, "n_eff: "),
				  "the body carries the figures: %s", text);
		} else {
			cr_expect_eq(json_object_array_length(rl), 0);
		}
	}
	json_object_put(all);
	json_object_put(j);
	free(out);
	free(xml);
	tc_kill(busy);
	tc_kill(idle);
}

/* The default TAP, as a CI job gets it without any option: Debian 12's
 * prove (Test::Harness 3.44) refuses "TAP version 14" with a parse error,
 * so it must be 13, and prove must read a passing run as a pass and a
 * failing one as the failures they are (not as unparsable output). */
Test(check_ci, default_tap_of_a_real_run_read_by_prove)
{
	const char *busy_a[] = { "--idle", "0.2", "--seconds", "20", NULL };
	pid_t busy = tc_spawn_example("duty_cycle", busy_a, NULL);
	/* four checks of the busy worker, side by side, each into its own file:
	 * passing (a maximum decides on any amount of data); failing one of
	 * three points (one second of a share is inconclusive: # SKIP);
	 * inconclusive alone; version 14 on request */
	static const char *const runs[] = {
		"--duration 1 --tap 'runqueue_max<=1000'",
		"--warmup 1 --duration 1 --tap 'idle_pct>=50' 'runqueue_max>=1000' 'runqueue_max<=1000'",
		"--warmup 1 --duration 1 --tap 'idle_pct>=50' 'runqueue_max<=1000'",
		"--duration 1 --tap --tap-version 14 'runqueue_max<=1000'",
	};
	enum { N = sizeof(runs) / sizeof(runs[0]) };
	char *tap[N], cmd[N][1024], *outs[N], *out;
	const char *cmds[N];
	int rcs[N];
	for (int i = 0; i < N; i++) {
		cr_assert(asprintf(&tap[i], "%s/check%d.tap", dir, i) > 0);
		snprintf(cmd[i], sizeof(cmd[i]), "exec \"%s\" check -p %d %s > %s 2>/dev/null", ts_loopstat_bin(),
			 (int)busy, runs[i], tap[i]);
		cmds[i] = cmd[i];
	}
	ts_sh_all(N, cmds, outs, rcs, 40000);
	for (int i = 0; i < N; i++)
		free(outs[i]);
	char c[1024];

	/* passing */
	cr_expect_eq(rcs[0], 0);
	snprintf(c, sizeof(c), "head -c 16 %s", tap[0]);
	cr_expect_eq(sh(c, &out), 0);
	cr_expect_str_eq(out, "TAP version 13\n1");
	free(out);
	snprintf(c, sizeof(c), "/usr/bin/prove -v --exec /bin/cat %s 2>&1", tap[0]);
	int rc = sh(c, &out);
	cr_expect_eq(rc, 0, "prove passes a passing check: %s", out);
	cr_expect(strstr(out, "Result: PASS") && !strstr(out, "Parse errors"), "%s", out);
	free(out);

	/* failing: one of three points */
	cr_expect_eq(rcs[1], 1);
	snprintf(c, sizeof(c), "/usr/bin/prove -v --exec /bin/cat %s 2>&1", tap[1]);
	rc = sh(c, &out);
	cr_expect_neq(rc, 0, "prove fails the run: %s", out);
	cr_expect(strstr(out, "ok 1 - idle_pct>=50") && strstr(out, "# SKIP"), "%s", out);
	cr_expect(strstr(out, "not ok 2 - runqueue_max>=1000"), "%s", out);
	cr_expect(strstr(out, "Failed 1/3 subtests") && !strstr(out, "Parse errors"), "the failure, not a parse error: %s",
		  out);
	cr_expect(strstr(out, "Result: FAIL"), "%s", out);
	free(out);

	/* inconclusive alone is a skip to TAP: prove passes it */
	cr_expect_eq(rcs[2], 3);
	snprintf(c, sizeof(c), "/usr/bin/prove -v --exec /bin/cat %s 2>&1", tap[2]);
	rc = sh(c, &out);
	cr_expect_eq(rc, 0, "inconclusive is a skip to TAP: %s", out);
	cr_expect(strstr(out, "Result: PASS") && strstr(out, "# SKIP"), "%s", out);
	free(out);

	/* 14 on request, for harnesses that read it */
	cr_expect_eq(rcs[3], 0);
	snprintf(c, sizeof(c), "head -c 16 %s", tap[3]);
	cr_expect_eq(sh(c, &out), 0);
	cr_expect_str_eq(out, "TAP version 14\n1");
	free(out);
	for (int i = 0; i < N; i++)
		free(tap[i]);
	tc_kill(busy);
}
