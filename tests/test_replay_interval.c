/* One interval: on one recording, the ± that `list --replay --json` shows (idle_lo, idle_hi) is the interval `check --replay` judges with, and list and check read a recording as top does. */
#include <criterion/criterion.h>

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("replayci"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(replay_interval, .init = setup, .fini = teardown, .timeout = 60);

/* A recording of a plain loop idle about half its time, for secs seconds. */
static char *record(const char *secs)
{
	int out;
	const char *args[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	pid_t pid = tc_spawn_example("duty_cycle", args, &out);
	cr_assert_gt(pid, 0);
	char p[16], *rec = ts_path_in(dir, "run.rec"), *o = NULL;
	snprintf(p, sizeof(p), "%d", (int)pid);
	usleep(300 * 1000);   /* its loop running */
	int rc = ts_loopstat(&o, 30000, "record", "-o", rec, "-p", p, "--duration", secs, "--rate", "200", NULL);
	cr_assert_eq(rc, 0, "record: exit %d: %s", rc, o ? o : "");
	free(o);
	tc_kill(pid);
	close(out);
	return rec;
}

Test(replay_interval, list_shows_the_interval_check_judges_with)
{
	char *rec = record("6");
	char *lo_out = NULL, *ck_out = NULL;
	int rc = ts_loopstat(&lo_out, 20000, "list", "--replay", rec, "--json", NULL);
	cr_assert_eq(rc, 0, "list --replay: exit %d: %s", rc, lo_out);
	/* --duration longer than the recording: judged as far as it goes */
	rc = ts_loopstat(&ck_out, 20000, "check", "--replay", rec, "--json", "--duration", "60", "idle_pct>=0", NULL);
	cr_assert_eq(rc, 0, "check --replay: exit %d: %s", rc, ck_out);

	json_object *l = json_tokener_parse(lo_out), *c = json_tokener_parse(ck_out), *ws, *rs;
	cr_assert(l && json_object_object_get_ex(l, "workers", &ws) && json_object_array_length(ws) == 1, "%s", lo_out);
	cr_assert(c && json_object_object_get_ex(c, "results", &rs) && json_object_array_length(rs) == 1, "%s", ck_out);
	json_object *w = json_object_array_get_idx(ws, 0), *r = json_object_array_get_idx(rs, 0);
	double idle = tj_num(w, "idle_pct"), lo = tj_num(w, "idle_lo"), hi = tj_num(w, "idle_hi");
	double half = tj_num(w, "idle_ci95");
	double clo = tj_num(r, "lo"), chi = tj_num(r, "hi"), judged = tj_num(r, "time_s");
	cr_log_info("list idle %.2f [%.2f, %.2f] ±%.2f; check [%.4f, %.4f] over %.0f s", idle, lo, hi, half, clo, chi,
		    judged);
	cr_assert(idle > 20 && idle < 80, "a half-idle loop reads %.2f", idle);
	/* 6 s recorded: its 5 whole seconds, or 4 when it started just before a second */
	cr_assert(judged >= 4 && judged <= 6, "check judged %.0f s of a 6-s recording", judged);
	/* list's JSON has two decimals: the same interval to its last digit */
	cr_assert(fabs(lo - clo) <= 0.0051 && fabs(hi - chi) <= 0.0051,
		  "list says [%.2f, %.2f], check judges with [%.4f, %.4f]", lo, hi, clo, chi);
	cr_assert(lo < idle && idle < hi, "the estimate %.2f inside [%.2f, %.2f]", idle, lo, hi);
	cr_assert_float_eq(half, (chi - clo) / 2, 0.0051, "± is the half-width: %.2f", half);
	json_object_put(l);
	json_object_put(c);
	free(lo_out);
	free(ck_out);
	free(rec);
}

/* A recording that is not there is a usage error (2), as for top; a check
 * a recording cannot decide is inconclusive (3). */
Test(replay_interval, check_and_list_read_recordings_as_top_does)
{
	char *missing = ts_path_in(dir, "none.rec"), *out = NULL;
	cr_assert_eq(ts_loopstat(&out, 10000, "list", "--replay", missing, NULL), 2, "%s", out);
	free(out);
	out = NULL;
	cr_assert_eq(ts_loopstat(&out, 10000, "check", "--replay", missing, "idle_pct>=0", NULL), 2, "%s", out);
	free(out);
	free(missing);
	char *rec = record("3");
	out = NULL;
	/* a threshold at the recording's own estimate: its interval straddles it */
	cr_assert_eq(ts_loopstat(&out, 20000, "list", "--replay", rec, "--json", NULL), 0, "%s", out);
	json_object *l = json_tokener_parse(out), *ws;
	cr_assert(l && json_object_object_get_ex(l, "workers", &ws) && json_object_array_length(ws) == 1, "%s", out);
	char t[64];
	snprintf(t, sizeof(t), "idle_pct>=%.2f", tj_num(json_object_array_get_idx(ws, 0), "idle_pct"));
	json_object_put(l);
	free(out);
	out = NULL;
	int rc = ts_loopstat(&out, 20000, "check", "--replay", rec, t, NULL);
	cr_assert_eq(rc, 3, "%s: exit %d: %s", t, rc, out);
	free(out);
	free(rec);
}

/* A recording (tests/data/idle-edge.rec, 4 s of a half-idle loop) whose
 * share over all its samples, partial seconds too, lay outside the
 * interval of its whole seconds (50.33 over [49.21, 50.21]): list shows the
 * whole seconds' figure, the one the interval is about and check judges. */
Test(replay_interval, the_figure_shown_is_inside_its_interval)
{
	char *out = NULL;
	int rc = ts_loopstat(&out, 20000, "list", "--replay", "tests/data/idle-edge.rec", "--json", NULL);
	cr_assert_eq(rc, 0, "list --replay (run from the tree): exit %d: %s", rc, out);
	json_object *l = json_tokener_parse(out), *ws;
	cr_assert(l && json_object_object_get_ex(l, "workers", &ws) && json_object_array_length(ws) == 1, "%s", out);
	json_object *w = json_object_array_get_idx(ws, 0);
	double idle = tj_num(w, "idle_pct"), lo = tj_num(w, "idle_lo"), hi = tj_num(w, "idle_hi");
	cr_assert(lo <= idle && idle <= hi, "idle %.2f outside [%.2f, %.2f]", idle, lo, hi);
	double sum = idle + tj_num(w, "running_pct") + tj_num(w, "blocked_pct") + tj_num(w, "other_pct");
	cr_assert_float_eq(sum, 100, 0.05, "the shares over the same seconds: %.2f", sum);
	json_object_put(l);
	free(out);
}
