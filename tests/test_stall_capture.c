/* A worker out of its poll past --stall-ms is captured with where it is: on a CPU with its function, or in read(2) with the fd. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("stallcap");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(stall_capture, .init = setup, .fini = teardown, .timeout = 40);

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "missing key '%s'", key);
	return v;
}

static const char *str(json_object *o, const char *key) { return json_object_get_string(get(o, key)); }

#define BURN_MS   200   /* tc_spawn_burner's burn, by its own clock */
#define PERIOD_MS 10    /* list's default rate, 100 Hz */

/* `loopstat list --json` of pid for 3.5 s; its one worker's stalls, and the document in *doc. */
static json_object *stalls_of(pid_t pid, json_object **doc, char **text)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	/* --source proc: the sampler's capture (syscall file, perf sample) is
	 * what this judges; test_bpf_stall judges the kernel's */
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--duration", "3.5", "--source", "proc", "-p", p, NULL };
	int rc = ts_run(argv, text, 20000);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, *text);
	*doc = json_tokener_parse(*text);
	cr_assert(*doc, "not JSON: %s", *text);
	json_object *ws = get(*doc, "workers");
	cr_assert_eq(json_object_array_length(ws), 1, "one worker: %s", *text);
	json_object *w = json_object_array_get_idx(ws, 0);
	json_object *st = get(w, "stalls");
	cr_assert_gt(json_object_array_length(st), 0, "no stall captured: %s", *text);
	cr_assert_eq(json_object_get_int(get(w, "stalls_captured")), (int)json_object_array_length(st),
		     "stalls_captured counts them: %s", *text);
	return st;
}

/* 200 ms on the CPU once a second in tc_stall_burn: each capture is a perf
 * sample of the running thread, unwound to that function. */
Test(stall_capture, cpu_burner_has_its_function_in_the_stack)
{
	pid_t pid = tc_spawn_burner(0.8, BURN_MS / 1000.0);
	json_object *doc;
	char *text = NULL;
	json_object *st = stalls_of(pid, &doc, &text);
	tc_kill(pid);
	int found = 0, ended_ones = 0, tight = 0;
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *s = json_object_array_get_idx(st, i);
		cr_expect_str_eq(str(s, "state"), "running", "%s", text);
		cr_expect_str_eq(str(s, "stack_from"), "perf", "%s", text);
		/* a span of the 200 ms burned by the burner's own clock, and up
		 * to a period more for a wait for a CPU on waking, which the
		 * samples rightly count in the span and the burner's clock does
		 * not; one still open at the end of list's run is shorter */
		double d = json_object_get_double(get(s, "duration_ms"));
		int ended = json_object_get_boolean(get(s, "ended"));
		cr_expect(d <= BURN_MS + 2 * PERIOD_MS, "a stall of %.0f ms for a %d-ms burn: %s", d, BURN_MS, text);
		if (ended) {
			/* the burn lies within the reach the samples around it give,
			 * and so does the estimate; the sampler's jittered ticks put
			 * each end within half their gap there (to the ms), so the
			 * estimate is within half the reach's width of the burn */
			double lo = json_object_get_double(get(s, "duration_lo_ms"));
			double hi = json_object_get_double(get(s, "duration_hi_ms"));
			double half = (hi - lo) / 2 + 1;
			cr_expect(lo <= d && d <= hi && lo <= BURN_MS + 2 * PERIOD_MS && hi >= BURN_MS,
				  "a stall of %.0f ms in [%.0f, %.0f] for a %d-ms burn: %s", d, lo, hi, BURN_MS, text);
			cr_expect(d >= BURN_MS - half && d <= BURN_MS + PERIOD_MS + half,
				  "a stall of %.0f ms in [%.0f, %.0f] for a %d-ms burn: %s", d, lo, hi, BURN_MS, text);
			tight += hi - lo <= 3 * PERIOD_MS;
		}
		ended_ones += ended;
		found += tj_has_frame(s, "tc_stall_burn");
	}
	cr_expect_geq(found * 2, (int)json_object_array_length(st), "tc_stall_burn in most stalls' stacks: %s", text);
	cr_expect_gt(ended_ones, 0, "a burn of 3.5 s ended in list's run: %s", text);
	cr_expect_gt(tight, 0, "one burn at least read to 3 periods: %s", text);
	json_object_put(doc);
	free(text);
}

/* 200 ms blocked in read(2) on a pipe once a second (duty_cycle --block):
 * captured with the syscall, the fd and what it is, and its stack. */
Test(stall_capture, blocking_read_has_its_syscall_and_fd)
{
	const char *args[] = { "--plain", "--idle", "0.75", "--block", "0.2", "--period-ms", "1000", "--seconds", "30", NULL };
	pid_t pid = tc_spawn_example("duty_cycle", args, NULL);
	json_object *doc;
	char *text = NULL;
	json_object *st = stalls_of(pid, &doc, &text);
	tc_kill(pid);
	int found = 0;
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *s = json_object_array_get_idx(st, i);
		if (strcmp(str(s, "state"), "blocked") != 0)
			continue;
		cr_expect_str_eq(str(s, "syscall"), "read", "%s", text);
		cr_expect_geq(json_object_get_int(get(s, "fd")), 0, "%s", text);
		cr_expect(strncmp(str(s, "target"), "pipe:[", 6) == 0, "the fd's target: %s", text);
		cr_expect_str_eq(str(s, "stack_from"), "syscall", "%s", text);
		cr_expect_gt(json_object_array_length(get(s, "frames")), 1, "%s", text);
		found++;
	}
	cr_expect_gt(found, 0, "a stall blocked in read: %s", text);
	json_object_put(doc);
	free(text);
}

/* record keeps the stalls in its stream ("k" records) and report lists
 * them with their stacks. */
Test(stall_capture, record_and_report_keep_the_stalls)
{
	pid_t pid = tc_spawn_burner(0.8, 0.2);
	char p[16], path[700];
	snprintf(p, sizeof(p), "%d", (int)pid);
	snprintf(path, sizeof(path), "%s/stalls.rec", dir);
	char *rec[] = { (char *)ts_loopstat_bin(), "record", "-p", p, "--duration", "3", "-o", path, NULL };
	char *out = NULL;
	int rc = ts_run(rec, &out, 20000);
	tc_kill(pid);
	cr_assert_eq(rc, 0, "record: exit %d: %s", rc, out);
	free(out);
	char *rep[] = { (char *)ts_loopstat_bin(), "report", path, NULL };
	rc = ts_run(rep, &out, 20000);
	cr_assert_eq(rc, 0, "report: exit %d: %s", rc, out);
	const char *sec = strstr(out, "stalls captured");
	cr_assert(sec, "no stalls in the report: %s", out);
	cr_expect(strstr(sec, "running") && strstr(sec, "tc_stall_burn"), "%s", out);
	free(out);
}
