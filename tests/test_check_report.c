/* check_report: JUnit XML read back by python3-junitparser, TAP by Perl's TAP::Parser and prove, JSON by json-c, each field by field against the results. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_report.h"
#include "exitcodes.h"
#include "support/support.h"

#define NRES 6
#define EVIL "we<i&rd\"p'roc\x01\xff"          /* a comm with markup, a control byte, invalid UTF-8 */
#define EVIL_CLEAN "we<i&rd\"p'roc\xef\xbf\xbd\xef\xbf\xbd"   /* as an XML parser must read it back */

static const struct check_metric metrics[] = {
	{ "idle_pct", "%", NULL },
	{ "blocked_pct", "%", "syscall" },
	{ "stall_ms", "ms", NULL },
};
static const struct check_parse_ctx ctx = { .metrics = metrics, .nmetrics = 3 };

static struct check_threshold th[5];
static struct check_result res[NRES];
static struct check_run_info info = {
	.host = "ci-runner-7", .kernel = "6.1.0-28-amd64", .timestamp = "2026-12-01T20:00:00Z",
	.rate_hz = 200, .duration_s = 60,
};

/* 60 seconds of ~200 samples each around pct% with a little spread */
static void stream(struct est_sec *s, double pct)
{
	for (int i = 0; i < 60; i++)
		s[i] = (struct est_sec){ pct * 2 + (i % 3 - 1) * 6, 200 };
}

static void result(int i, const char *proc, int tid, int t, const struct est_sec *s, size_t n, enum est_kind kind,
		   const struct estimate *base)
{
	struct estimate e;
	cr_assert_eq(est_batch_means(s, n, kind, kind == EST_PROPORTION ? 100 : 1, &e), 0);
	struct check_result *r = &res[i];
	memset(r, 0, sizeof(*r));
	r->pid = 4000;
	r->tid = tid;
	snprintf(r->process, sizeof(r->process), "%s", proc);
	/* a tag with a tab and a newline: XML attributes must keep them, the table must not */
	snprintf(r->tag, sizeof(r->tag), "%s", tid == 4001 ? "acceptor" : tid == 4002 ? "tab\there\nnl" : "");
	r->time_s = 60;
	check_result_judge(r, &th[t], &e, base, 0, CHECK_RUN_SD_PTS);
}

static void fixture(void)
{
	static const char *const text[5] = {
		"idle_pct>=30", "blocked_pct{syscall=fsync}<5", "stall_ms<100", "idle_pct>=baseline-5", "idle_pct >= 50",
	};
	char err[CHECK_ERR_LEN];
	for (int i = 0; i < 5; i++)
		cr_assert_eq(check_parse(&ctx, text[i], &th[i], err, sizeof(err)), 0, "%s", err);
	struct est_sec s[60];
	stream(s, 41);
	result(0, "echo", 4001, 0, s, 60, EST_PROPORTION, NULL);       /* pass */
	stream(s, 20);
	result(1, "echo", 4002, 0, s, 60, EST_PROPORTION, NULL);       /* fail, same name as 0 */
	for (int i = 0; i < 60; i++)                                     /* 5% exactly: straddles */
		s[i] = (struct est_sec){ i % 2 ? 12 : 8, 200 };
	result(2, EVIL, 4003, 1, s, 60, EST_PROPORTION, NULL);         /* inconclusive */
	result(3, "db", 4004, 2, NULL, 0, EST_MAX, NULL);              /* nothing */
	struct estimate base;
	stream(s, 42);
	cr_assert_eq(est_batch_means(s, 60, EST_PROPORTION, 100, &base), 0);
	stream(s, 41);
	result(4, "echo", 4001, 3, s, 60, EST_PROPORTION, &base);      /* pass, relative */
	for (int i = 0; i < 60; i++)   /* 24.75%: plainly below 50; weighted samples: n is not whole */
		s[i] = (struct est_sec){ 48.5 + i % 3, 200, 287 };
	result(5, "db", 4005, 4, s, 60, EST_PROPORTION, NULL);         /* fail */
	static const enum check_verdict want[NRES] = { CHECK_PASS, CHECK_FAIL, CHECK_INCONCLUSIVE, CHECK_NOTHING,
						       CHECK_PASS, CHECK_FAIL };
	for (int i = 0; i < NRES; i++)
		cr_assert_eq(res[i].verdict, want[i], "fixture %d is %s", i, check_verdict_str(res[i].verdict));
}

static char *dir;
static void setup(void)
{
	fixture();
	dir = ts_tmpdir("check_report");
}
static void teardown(void) { ts_rmtree_free(dir); }

static char *write_to(const char *name, int (*w)(FILE *, const struct check_run_info *, const struct check_result *,
						 size_t), size_t n)
{
	char *path;
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	cr_assert_eq(w(f, &info, res, n), 0);
	cr_assert_eq(fclose(f), 0);
	return path;
}

static char *render(void (*w)(FILE *, const struct check_result *, size_t), size_t n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	w(f, res, n);
	fclose(f);
	return buf;
}

Test(check_report, summary_and_table, .init = setup, .fini = teardown, .timeout = 10)
{
	char *s = render(check_report_summary, NRES);
	cr_expect_str_eq(s, "check: 2 passed, 2 failed, 1 inconclusive, 1 nothing to measure\n");
	free(s);
	s = render(check_report_summary, 3);
	cr_expect_str_eq(s, "check: 1 passed, 1 failed, 1 inconclusive\n");
	free(s);
	s = render(check_report_table, NRES);
	cr_expect(strstr(s, "WORKER") && strstr(s, "95% INTERVAL"), "%s", s);
	cr_expect(strstr(s, "echo 4000/4001 acceptor") && strstr(s, "idle_pct>=30") && strstr(s, "pass"), "%s", s);
	cr_expect(strstr(s, "blocked_pct{syscall=fsync}<5") && strstr(s, "inconclusive"), "%s", s);
	cr_expect(strstr(s, "db 4000/4004") && strstr(s, "nothing"), "%s", s);
	cr_expect(strstr(s, "echo 4000/4002 tab?here?nl") && strstr(s, "we<i&rd\"p'roc??"), "%s", s);
	int lines = 0;
	for (const char *p = s; *p; p++)
		lines += *p == '\n';
	cr_expect_eq(lines, NRES + 1);
	free(s);
}

/* A roll-up row has no thread: it reads "fleet", not "fleet 0/0". */
Test(check_report, fleet_row_is_named_without_a_thread, .init = setup, .fini = teardown, .timeout = 10)
{
	res[0].pid = res[0].tid = 0;
	snprintf(res[0].process, sizeof(res[0].process), "fleet");
	res[0].tag[0] = '\0';
	char *s = render(check_report_table, 1);
	cr_expect(strstr(s, "fleet "), "%s", s);
	cr_expect(!strstr(s, "0/0"), "the fleet row names a thread: %s", s);
	free(s);
}

/* junitparser reads the file; we print what it read as JSON and compare. */
static const char junit_py[] =
	"import json, sys\n"
	"from junitparser import JUnitXml, Properties\n"
	"xml = JUnitXml.fromfile(sys.argv[1])\n"
	"out = []\n"
	"for suite in xml:\n"
	"    s = {'name': suite.name, 'tests': suite.tests, 'failures': suite.failures, 'errors': suite.errors,\n"
	"         'skipped': suite.skipped, 'time': suite.time, 'hostname': suite.hostname,\n"
	"         'timestamp': suite.timestamp, 'props': {p.name: p.value for p in suite.properties()}, 'cases': []}\n"
	"    for case in suite:\n"
	"        props = case.child(Properties)\n"
	"        res = [{'tag': r._tag, 'message': r.message, 'type': r.type, 'text': r.text} for r in case.result]\n"
	"        s['cases'].append({'classname': case.classname, 'name': case.name, 'time': case.time,\n"
	"                           'props': {p.name: p.value for p in props} if props is not None else {},\n"
	"                           'result': res})\n"
	"    out.append(s)\n"
	"print(json.dumps(out))\n";

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "no '%s' in %s", key, json_object_to_json_string(o));
	return v;
}
static const char *gets(json_object *o, const char *key) { return json_object_get_string(get(o, key)); }
static double getd(json_object *o, const char *key) { return json_object_get_double(get(o, key)); }

static json_object *parse_junit(const char *xml_path)
{
	char *py;
	cr_assert(asprintf(&py, "%s/read_junit.py", dir) > 0);
	cr_assert_eq(ts_write_file(py, junit_py, sizeof(junit_py) - 1), 0);
	char *argv[] = { "/usr/bin/python3", py, (char *)xml_path, NULL };
	char *out = NULL;
	int rc = ts_run(argv, &out, 20000);
	cr_assert_eq(rc, 0, "python3-junitparser could not read the file (scripts/deps.sh installs it): %s", out);
	json_object *o = json_tokener_parse(out);
	cr_assert(o, "%s", out);
	free(out);
	free(py);
	return o;
}

/* The property value of a case, as the writer's %.6g spelled it. */
static double prop_num(json_object *props, const char *key) { return strtod(gets(props, key), NULL); }

static int close_to(double a, double b) { return fabs(a - b) <= 1e-5 * fmax(1, fabs(b)); }

Test(check_report, junit_read_by_junitparser, .init = setup, .fini = teardown, .timeout = 30)
{
	char *path = write_to("junit.xml", check_report_junit, NRES);
	json_object *all = parse_junit(path);
	cr_assert_eq(json_object_array_length(all), 1);
	json_object *s = json_object_array_get_idx(all, 0);
	cr_expect_str_eq(gets(s, "name"), "loopstat check");
	cr_expect_eq(getd(s, "tests"), NRES);
	cr_expect_eq(getd(s, "failures"), 2);
	cr_expect_eq(getd(s, "errors"), 1);
	cr_expect_eq(getd(s, "skipped"), 1);
	cr_expect_eq(getd(s, "time"), 60);
	cr_expect_str_eq(gets(s, "hostname"), "ci-runner-7");
	cr_expect_str_eq(gets(s, "timestamp"), "2026-12-01T20:00:00Z");
	json_object *sp = get(s, "props");
	cr_expect_str_eq(gets(sp, "host"), "ci-runner-7");
	cr_expect_str_eq(gets(sp, "kernel"), "6.1.0-28-amd64");
	cr_expect_eq(prop_num(sp, "rate"), 200);

	json_object *cases = get(s, "cases");
	cr_assert_eq(json_object_array_length(cases), NRES);
	for (int i = 0; i < NRES; i++) {
		const struct check_result *r = &res[i];
		json_object *c = json_object_array_get_idx(cases, i);
		char want[256];
		snprintf(want, sizeof(want), "loopstat.%s", i == 2 ? EVIL_CLEAN : r->process);
		cr_expect_str_eq(gets(c, "classname"), want);
		if (i <= 1) /* two workers of echo with one threshold: told apart by tid */
			snprintf(want, sizeof(want), "%s (tid %d)", r->threshold->text, (int)r->tid);
		else
			snprintf(want, sizeof(want), "%s", r->threshold->text);
		cr_expect_str_eq(gets(c, "name"), want);
		cr_expect_eq(getd(c, "time"), 60);

		json_object *p = get(c, "props");
		cr_expect_str_eq(gets(p, "verdict"), check_verdict_str(r->verdict));
		cr_expect_eq(prop_num(p, "tid"), r->tid);
		cr_expect_str_eq(gets(p, "tag"), r->tag);
		if (r->value.ok) {
			cr_expect(close_to(prop_num(p, "value"), r->value.est), "case %d value %s", i, gets(p, "value"));
			cr_expect(close_to(prop_num(p, "interval_lo"), r->value.lo));
			cr_expect(close_to(prop_num(p, "interval_hi"), r->value.hi));
			cr_expect(close_to(prop_num(p, "n"), r->value.n));
			cr_expect(close_to(prop_num(p, "n_eff"), r->value.n_eff));
		} else {
			cr_expect_str_eq(gets(p, "value"), "nan");
		}
		cr_expect(close_to(prop_num(p, "limit"), r->abs_limit));
		if (r->threshold->relative)
			cr_expect(close_to(prop_num(p, "baseline"), r->baseline.est));

		json_object *rl = get(c, "result");
		if (r->verdict == CHECK_PASS) {
			cr_expect_eq(json_object_array_length(rl), 0, "case %d passed", i);
			continue;
		}
		cr_assert_eq(json_object_array_length(rl), 1);
		json_object *x = json_object_array_get_idx(rl, 0);
		const char *tag = r->verdict == CHECK_FAIL ? "failure" : r->verdict == CHECK_NOTHING ? "error" : "skipped";
		cr_expect_str_eq(gets(x, "tag"), tag);
		const char *text = gets(x, "text");
		cr_assert(text, "case %d: the body carries the figures (GitLab ignores message)", i);
		char line[128];
		snprintf(line, sizeof(line), "verdict: %s\n", check_verdict_str(r->verdict));
		cr_expect(strstr(text, line), "%s", text);
		cr_expect(strstr(text, "value: ") && strstr(text, "interval: [") && strstr(text, "limit: ") &&
			  strstr(text, "n: ") && strstr(text, "n_eff: "), "%s", text);
		if (r->value.ok) {
			snprintf(line, sizeof(line), "n_eff: %.6g\n", r->value.n_eff);
			cr_expect(strstr(text, line), "want '%s' in %s", line, text);
		}
		cr_expect(strstr(gets(x, "message"), r->threshold->text));
	}
	json_object_put(all);
	free(path);

	/* --inconclusive=fail: the skipped case becomes a failure */
	info.inconclusive_fail = 1;
	path = write_to("junit-strict.xml", check_report_junit, NRES);
	info.inconclusive_fail = 0;
	all = parse_junit(path);
	s = json_object_array_get_idx(all, 0);
	cr_expect_eq(getd(s, "failures"), 3);
	cr_expect_eq(getd(s, "skipped"), 0);
	json_object *c2 = json_object_array_get_idx(get(s, "cases"), 2);
	cr_expect_str_eq(gets(json_object_array_get_idx(get(c2, "result"), 0), "tag"), "failure");
	json_object_put(all);
	free(path);
}

/* Does this prove know TAP version 14 (Test::Harness >= 3.48)? */
static int prove_knows_14(void)
{
	char *path;
	cr_assert(asprintf(&path, "%s/probe.tap", dir) > 0);
	const char tap[] = "TAP version 14\n1..1\nok 1\n";
	cr_assert_eq(ts_write_file(path, tap, sizeof(tap) - 1), 0);
	char *argv[] = { "/usr/bin/prove", "--exec", "/bin/cat", path, NULL };
	char *out = NULL;
	int rc = ts_run(argv, &out, 20000);
	free(out);
	free(path);
	return rc == 0;
}

/* TAP::Parser's view of a stream: one line per test point and per YAML block. */
static const char tap_pl[] =
	"use TAP::Parser;\n"
	"my $p = TAP::Parser->new({ exec => ['/bin/cat', $ARGV[0]] });\n"
	"while (my $r = $p->next) {\n"
	"  if ($r->is_test) { printf \"test %d %s %s\\n\", $r->number, $r->is_actual_ok ? 'ok' : 'notok',\n"
	"                            $r->has_skip ? 'skip' : '-'; }\n"
	"  elsif ($r->is_yaml) { my $d = $r->data; printf \"yaml %s %s %s\\n\", $d->{verdict}, $d->{n_eff}, $d->{threshold}; }\n"
	"  elsif ($r->is_bailout) { print \"bail \", $r->explanation, \"\\n\"; }\n"
	"}\n"
	"printf \"plan %s errors %d passed %d failed %d\\n\", $p->plan, scalar($p->parse_errors), scalar($p->passed), scalar($p->failed);\n"
	"print \"error $_\\n\" for $p->parse_errors;\n";

static char *run_tap(const char *tap_path, const char *script, int *rc)
{
	char *argv[] = { "/usr/bin/perl", (char *)script, (char *)tap_path, NULL };
	char *out = NULL;
	*rc = ts_run(argv, &out, 20000);
	return out;
}

/* prove's verdict and summary; its stderr (where a bail-out goes) joins stdout */
static char *prove(const char *tap_path, int *rc)
{
	char *argv[] = { "/bin/sh", "-c", "exec /usr/bin/prove --exec /bin/cat \"$0\" 2>&1", (char *)tap_path, NULL };
	char *out = NULL;
	*rc = ts_run(argv, &out, 20000);
	return out;
}

Test(check_report, tap_read_by_prove, .init = setup, .fini = teardown, .timeout = 60)
{
	/* Debian 12's Test::Harness 3.44 refuses "TAP version 14" (3.48 accepts
	 * it); our stream uses nothing newer than 13, so 13 differs only there */
	info.tap_version = 14;
	char *p14 = write_to("check14.tap", check_report_tap, NRES);
	info.tap_version = 13;
	char *p13 = write_to("check13.tap", check_report_tap, NRES);
	info.tap_version = 0;
	char *a = NULL, *b = NULL;
	size_t la, lb;
	FILE *f = fopen(p14, "r");
	cr_assert(f && getdelim(&a, &la, 0, f) > 0);
	fclose(f);
	f = fopen(p13, "r");
	cr_assert(f && getdelim(&b, &lb, 0, f) > 0);
	fclose(f);
	cr_assert(strncmp(a, "TAP version 14\n1..6\n", 20) == 0, "%s", a);
	cr_expect_str_eq(strchr(a, '\n'), strchr(b, '\n'), "13 and 14 differ only in the version line");
	free(a);
	free(b);
	const char *tap = prove_knows_14() ? p14 : p13;
	cr_log_info("prove reads %s", tap == p14 ? "TAP version 14" : "TAP version 13 only");

	char *pl;
	cr_assert(asprintf(&pl, "%s/read_tap.pl", dir) > 0);
	cr_assert_eq(ts_write_file(pl, tap_pl, sizeof(tap_pl) - 1), 0);
	int rc;
	char *out = run_tap(tap, pl, &rc);
	cr_assert_eq(rc, 0, "%s", out);
	/* points: pass, fail, inconclusive (skip), nothing (not ok), pass, fail */
	static const char *const want[] = {
		"test 1 ok -\nyaml pass ", "test 2 notok -\nyaml fail ", "test 3 ok skip\nyaml inconclusive ",
		"test 4 notok -\nyaml nothing 0 stall_ms<100\n", "test 5 ok -\nyaml pass ", "test 6 notok -\nyaml fail ",
	};
	for (int i = 0; i < NRES; i++)
		cr_expect(strstr(out, want[i]), "want '%s' in:\n%s", want[i], out);
	char line[160];
	snprintf(line, sizeof(line), "yaml pass %.6g idle_pct>=30\n", res[0].value.n_eff);
	cr_expect(strstr(out, line), "the YAML block parses to the n_eff written: want '%s' in:\n%s", line, out);
	cr_expect(strstr(out, "plan 1..6 errors 0 passed 3 failed 3\n"), "%s", out);
	free(out);

	out = prove(tap, &rc);
	cr_expect_neq(rc, 0, "prove fails a check with failures:\n%s", out);
	cr_expect(strstr(out, "Failed 3/6 subtests") && strstr(out, "Failed tests:  2, 4, 6"), "%s", out);
	cr_expect(strstr(out, "Result: FAIL"), "%s", out);
	free(out);

	/* only the passing and the inconclusive point: prove passes, with the skip counted */
	struct check_result keep[3] = { res[0], res[2], res[4] };
	memcpy(res, keep, sizeof(keep));
	info.tap_version = tap == p14 ? 14 : 13;
	char *p3 = write_to("pass.tap", check_report_tap, 3);
	out = prove(p3, &rc);
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "Result: PASS"), "%s", out);
	free(out);
	/* unless inconclusive means fail */
	info.inconclusive_fail = 1;
	free(p3);
	p3 = write_to("strict.tap", check_report_tap, 3);
	info.inconclusive_fail = 0;
	out = prove(p3, &rc);
	cr_expect_neq(rc, 0);
	cr_expect(strstr(out, "Failed test:  2") && strstr(out, "Result: FAIL"), "%s", out);
	free(out);
	free(p3);

	/* Bail out! when a target vanishes */
	char *pb;
	cr_assert(asprintf(&pb, "%s/bail.tap", dir) > 0);
	f = fopen(pb, "w");
	fprintf(f, "TAP version %d\n1..3\n", info.tap_version);
	check_report_tap_bail(f, "target 4000 exited\nmid-check");
	fclose(f);
	info.tap_version = 0;
	out = run_tap(pb, pl, &rc);
	cr_expect(strstr(out, "bail target 4000 exited?mid-check\n"), "%s", out);
	free(out);
	out = prove(pb, &rc);
	cr_expect_neq(rc, 0);
	cr_expect(strstr(out, "Further testing stopped: target 4000 exited?mid-check"), "%s", out);
	free(out);
	free(pb);
	free(pl);
	free(p13);
	free(p14);
}

Test(check_report, json_read_by_json_c, .init = setup, .fini = teardown, .timeout = 10)
{
	char *path = write_to("check.json", check_report_json, NRES);
	json_object *o = json_object_from_file(path);
	cr_assert(o, "not JSON");
	cr_expect_eq(json_object_get_int(get(o, "version")), 1);
	cr_expect_str_eq(gets(o, "command"), "check");
	cr_expect_str_eq(gets(o, "host"), "ci-runner-7");
	cr_expect_str_eq(gets(o, "kernel"), "6.1.0-28-amd64");
	cr_expect_str_eq(gets(o, "mode"), "interval");
	cr_expect_eq(getd(o, "rate_hz"), 200);
	json_object *sum = get(o, "summary");
	cr_expect_eq(json_object_get_int(get(sum, "passed")), 2);
	cr_expect_eq(json_object_get_int(get(sum, "failed")), 2);
	cr_expect_eq(json_object_get_int(get(sum, "inconclusive")), 1);
	cr_expect_eq(json_object_get_int(get(sum, "nothing")), 1);
	cr_expect_eq(json_object_get_int(get(sum, "exit_code")), EXIT_FAIL);
	json_object *rs = get(o, "results");
	cr_assert_eq(json_object_array_length(rs), NRES);
	for (int i = 0; i < NRES; i++) {
		const struct check_result *r = &res[i];
		json_object *x = json_object_array_get_idx(rs, i);
		cr_expect_eq(json_object_get_int(get(x, "tid")), r->tid);
		cr_expect_str_eq(gets(x, "process"), i == 2 ? "we<i&rd\"p'roc\x01\xef\xbf\xbd" : r->process,
				 "case %d", i);
		cr_expect_str_eq(gets(x, "threshold"), r->threshold->text);
		cr_expect_str_eq(gets(x, "metric"), r->threshold->metric->name);
		cr_expect_str_eq(gets(x, "verdict"), check_verdict_str(r->verdict));
		cr_expect_str_eq(gets(x, "op"), check_op_str(r->threshold->op));
		if (r->value.ok) {
			cr_expect(fabs(getd(x, "value") - r->value.est) < 1e-4);
			cr_expect(fabs(getd(x, "lo") - r->value.lo) < 1e-4);
			cr_expect(fabs(getd(x, "hi") - r->value.hi) < 1e-4);
			cr_expect(fabs(getd(x, "se") - r->value.se) < 1e-6);
			cr_expect(fabs(getd(x, "n_eff") - r->value.n_eff) < 0.1);
			cr_expect(fabs(getd(x, "n") - r->value.n) <= 0.05, "n %g, written %g", r->value.n, getd(x, "n"));
		} else {
			cr_expect(json_object_get_type(get(x, "value")) == json_type_null, "nothing: value is null");
		}
		json_object *rel = get(x, "relative");
		cr_expect_eq(json_object_get_type(rel) == json_type_null, !r->threshold->relative);
	}
	json_object *f1 = get(json_object_array_get_idx(rs, 1), "filter");
	cr_expect_eq(json_object_object_length(f1), 0);
	cr_expect_str_eq(gets(get(json_object_array_get_idx(rs, 2), "filter"), "syscall"), "fsync");
	json_object *rel = get(json_object_array_get_idx(rs, 4), "relative");
	cr_expect_eq(getd(rel, "offset"), -5);
	cr_expect(fabs(getd(get(rel, "baseline"), "value") - res[4].baseline.est) < 1e-4);
	cr_expect(fabs(getd(get(rel, "difference"), "lo") - res[4].judged.lo) < 1e-4);
	json_object_put(o);
	free(path);
}
