/* loopstat diff on real recordings: two runs of the same duty cycle say "same", 30% against 40% busy says "worse" with the change's interval covering 10 points, --fail-on gives check's exit codes as the change's interval says, and list/check --json documents of the same runs compare as the recordings do. */
#include <criterion/criterion.h>

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("diff"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(diff, .init = setup, .fini = teardown, .timeout = 60);

#define RUNS 3

/* Records RUNS plain duty-cycle loops side by side (they share the
 * machine's load), idle[i] of each 100 ms period (long beside a loaded machine's wake-up delays), for 9 s at 200 Hz. */
static void record_runs(const char *const idle[RUNS], char *rec[RUNS])
{
	pid_t pid[RUNS];
	int out[RUNS];
	char cmds[RUNS][1024];
	const char *cmd[RUNS];
	for (int i = 0; i < RUNS; i++) {
		const char *args[] = { "--idle", idle[i], "--period-ms", "100", "--seconds", "14", "--plain", NULL };
		pid[i] = tc_spawn_example("duty_cycle", args, &out[i]);
		cr_assert_gt(pid[i], 0);
	}
	usleep(300 * 1000);   /* their loops running */
	for (int i = 0; i < RUNS; i++) {
		char name[16];
		snprintf(name, sizeof(name), "run%d.rec", i);
		rec[i] = ts_path_in(dir, name);
		snprintf(cmds[i], sizeof(cmds[i]), "exec \"%s\" record -o %s -p %d --duration 9 --rate 200 2>&1",
			 ts_loopstat_bin(), rec[i], (int)pid[i]);
		cmd[i] = cmds[i];
	}
	char *outs[RUNS];
	int rcs[RUNS];
	ts_sh_all(RUNS, cmd, outs, rcs, 30000);
	for (int i = 0; i < RUNS; i++) {
		cr_assert_eq(rcs[i], 0, "record %d: exit %d: %s", i, rcs[i], outs[i]);
		free(outs[i]);
		tc_kill(pid[i]);
		close(out[i]);
	}
}

/* `diff --json A B` (and more arguments); the document, its exit code in *rc. */
static json_object *diff_json(const char *a, const char *b, const char *more, int *rc)
{
	char *out = NULL;
	*rc = more ? ts_loopstat(&out, 20000, "diff", "--json", more, a, b, NULL)
		   : ts_loopstat(&out, 20000, "diff", "--json", a, b, NULL);
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "diff --json %s %s: exit %d, not JSON: %s", a, b, *rc, out);
	free(out);
	return doc;
}

/* The metric row of the first unit of kind ("worker", "service"). */
static json_object *row(json_object *doc, const char *kind, const char *metric)
{
	json_object *units, *ms;
	cr_assert(json_object_object_get_ex(doc, "units", &units));
	for (size_t i = 0; i < json_object_array_length(units); i++) {
		json_object *u = json_object_array_get_idx(units, i);
		if (strcmp(tj_str(u, "kind"), kind) != 0 || !json_object_object_get_ex(u, "metrics", &ms))
			continue;
		for (size_t j = 0; j < json_object_array_length(ms); j++) {
			json_object *r = json_object_array_get_idx(ms, j);
			if (strcmp(tj_str(r, "metric"), metric) == 0)
				return r;
		}
	}
	cr_assert_fail("no %s row of %s", kind, metric);
	return NULL;
}

static void change_of(json_object *r, double *est, double *lo, double *hi)
{
	json_object *c;
	cr_assert(json_object_object_get_ex(r, "change", &c) && c && !json_object_is_type(c, json_type_null));
	*est = tj_num(c, "value");
	*lo = tj_num(c, "lo");
	*hi = tj_num(c, "hi");
}

/* list --json and check --json documents of the recordings compare as the recordings do. */
static void json_documents_compare(char *const rec[RUNS])
{
	/* list --json and check --json of the recordings: the same workers, the idle figures and intervals */
	char *lj[2], *cj[2];
	for (int i = 0; i < 2; i++) {
		int k = i ? 2 : 0;
		char name[32], *out = NULL;
		snprintf(name, sizeof(name), "list%d.json", i);
		lj[i] = ts_path_in(dir, name);
		int rc = ts_loopstat(&out, 20000, "list", "--replay", rec[k], "--json", "--all", NULL);
		cr_assert_eq(rc, 0, "list --replay: exit %d: %s", rc, out);
		cr_assert_eq(ts_write_file(lj[i], out, strlen(out)), 0);
		free(out);
		snprintf(name, sizeof(name), "check%d.json", i);
		cj[i] = ts_path_in(dir, name);
		rc = ts_loopstat(&out, 20000, "check", "--replay", rec[k], "--json", "--duration", "60", "idle_pct>=0",
				 "running_pct<=100", NULL);
		cr_assert_eq(rc, 0, "check --replay: exit %d: %s", rc, out);
		cr_assert_eq(ts_write_file(cj[i], out, strlen(out)), 0);
		free(out);
	}
	int rc;
	json_object *from_rec = diff_json(rec[0], rec[2], NULL, &rc);
	double re, rlo, rhi;
	change_of(row(from_rec, "worker", "idle_pct"), &re, &rlo, &rhi);
	/* check's estimates are the recording's, interval and all: the same change */
	json_object *from_check = diff_json(cj[0], cj[1], NULL, &rc);
	cr_assert_eq(rc, 0, "diff of check --json documents: exit %d", rc);
	double ce, clo, chi;
	change_of(row(from_check, "worker", "idle_pct"), &ce, &clo, &chi);
	cr_log_info("recordings %.2f [%.2f, %.2f], check --json %.2f [%.2f, %.2f]", re, rlo, rhi, ce, clo, chi);
	cr_expect(fabs(ce - re) < 0.01 && fabs(clo - rlo) < 0.01 && fabs(chi - rhi) < 0.01);
	cr_expect_str_eq(tj_str(row(from_check, "worker", "idle_pct"), "verdict"),
			 tj_str(row(from_rec, "worker", "idle_pct"), "verdict"));
	/* list's idle carries its interval */
	json_object *from_list = diff_json(lj[0], lj[1], NULL, &rc);
	cr_assert_eq(rc, 0, "diff of list --json documents: exit %d", rc);
	double le, llo, lhi;
	json_object *lr = row(from_list, "worker", "idle_pct");
	change_of(lr, &le, &llo, &lhi);
	cr_log_info("list --json %.2f [%.2f, %.2f] %s", le, llo, lhi, tj_str(lr, "verdict"));
	/* list's figures cover every sample, the recordings' whole seconds: within their interval */
	cr_expect(rlo <= le && le <= rhi, "list's change %.2f, the recordings' %.2f [%.2f, %.2f]", le, re, rlo, rhi);
	cr_expect(llo < lhi && llo <= le && le <= lhi);
	/* a figure list shows without an interval is shown, never judged */
	cr_expect_str_eq(tj_str(row(from_list, "worker", "cpu_pct"), "verdict"), "unknown");
	/* a recording against check's document of itself: the same worker, no change */
	json_object *mixed = diff_json(rec[0], cj[0], NULL, &rc);
	cr_expect_eq(rc, 0);
	change_of(row(mixed, "worker", "idle_pct"), &ce, &clo, &chi);
	cr_expect(fabs(ce) < 0.01, "a run against itself changed by %.2f", ce);
	json_object_put(mixed);
	json_object_put(from_list);
	json_object_put(from_check);
	json_object_put(from_rec);
	for (int i = 0; i < 2; i++) {
		free(lj[i]);
		free(cj[i]);
	}
}

Test(diff, same_duty_is_same_and_ten_points_busier_is_worse_from_any_input)
{
	const char *const idle[RUNS] = { "0.7", "0.7", "0.6" };
	char *rec[RUNS];
	record_runs(idle, rec);

	/* the same duty cycle twice: the same, its interval holding 0 */
	int rc;
	json_object *same = diff_json(rec[0], rec[1], NULL, &rc);
	cr_assert_eq(rc, 0, "diff of two runs: exit %d", rc);
	cr_assert_eq(tj_num(same, "matched"), 2, "the worker and its service pair");
	double est, lo, hi;
	json_object *r = row(same, "worker", "idle_pct");
	change_of(r, &est, &lo, &hi);
	cr_log_info("same duty: idle change %.2f [%.2f, %.2f] %s", est, lo, hi, tj_str(r, "verdict"));
	cr_expect_str_eq(tj_str(r, "verdict"), "same", "change %.2f [%.2f, %.2f]", est, lo, hi);
	cr_expect(lo <= 0 && 0 <= hi);
	/* the run-to-run spread is in the change's se, --run-sd points a run: 1 unless told */
	json_object *c;
	cr_assert(json_object_object_get_ex(r, "change", &c));
	double se1 = tj_num(c, "se");
	cr_expect_eq(tj_num(r, "run_sd"), 1);
	json_object *wide = diff_json(rec[0], rec[1], "--run-sd=3", &rc);
	json_object *rw = row(wide, "worker", "idle_pct"), *cw;
	cr_assert(json_object_object_get_ex(rw, "change", &cw));
	double se3 = tj_num(cw, "se");
	cr_expect(fabs(se3 * se3 - se1 * se1 - 2 * (9 - 1)) < 0.01, "se %.4f with 3 points a run, %.4f with 1", se3, se1);
	cr_expect_eq(tj_num(rw, "run_sd"), 3);
	/* a rate carries none */
	cr_expect_eq(tj_num(row(wide, "worker", "lag_p50_ms"), "run_sd"), 0);
	json_object_put(wide);
	char *err = NULL;
	cr_expect_eq(ts_loopstat(&err, 20000, "diff", "--run-sd=-1", rec[0], rec[1], NULL), 2, "%s", err);
	free(err);
	json_object_put(same);

	/* 30% busy against 40%: idle fell by 10 points */
	json_object *worse = diff_json(rec[0], rec[2], NULL, &rc);
	cr_assert_eq(rc, 0);
	r = row(worse, "worker", "idle_pct");
	change_of(r, &est, &lo, &hi);
	cr_log_info("30%% vs 40%% busy: idle change %.2f [%.2f, %.2f] %s", est, lo, hi, tj_str(r, "verdict"));
	cr_expect_str_eq(tj_str(r, "verdict"), "worse", "change %.2f [%.2f, %.2f]", est, lo, hi);
	cr_expect(lo <= -10 && -10 <= hi, "the change's interval [%.2f, %.2f] covers -10 points", lo, hi);
	/* busier is worse on the other side too: running rose */
	cr_expect_str_eq(tj_str(row(worse, "worker", "running_pct"), "verdict"), "worse");
	json_object_put(worse);

	/* --fail-on: 1 when the whole interval of the change is past the limit, 3 when it straddles it, 0 when
	 * it is wholly on the good side: check's exit codes, as the interval says */
	const char *limits[] = { "idle_pct<-5", "idle_pct<-10", "idle_pct<-30", "idle_pct>5" };
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		char opt[64];
		snprintf(opt, sizeof(opt), "--fail-on=%s", limits[i]);
		json_object *d = diff_json(rec[0], rec[2], opt, &rc);
		double l = atof(strchr(limits[i], '<') ? strchr(limits[i], '<') + 1 : strchr(limits[i], '>') + 1);
		int below = strchr(limits[i], '<') != NULL;
		change_of(row(d, "worker", "idle_pct"), &est, &lo, &hi);
		double slo, shi;
		change_of(row(d, "service", "idle_pct"), &slo, &slo, &shi);
		/* every pair (the worker and its service, here the same figures) must say the same */
		int holds = below ? hi < l : lo > l, never = below ? lo >= l : hi <= l;
		int want = holds ? 1 : never ? 0 : 3;
		cr_expect_eq(rc, want, "%s on a change of %.2f [%.2f, %.2f]: exit %d, want %d", limits[i], est, lo, hi, rc,
			     want);
		json_object_put(d);
	}
	json_documents_compare(rec);
	for (int i = 0; i < RUNS; i++)
		free(rec[i]);
}
