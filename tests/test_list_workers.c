/* `loopstat list --json` validated field by field against known live workers (instrumented and not). */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "model/model.h"
#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("workers");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(list_workers, .init = setup, .fini = teardown, .timeout = 60);

/* build/examples/counters beside the loopstat under test; returns once it published */
static pid_t spawn_counters(int busy_pct)
{
	char busy[16];
	snprintf(busy, sizeof(busy), "%d", busy_pct);
	const char *args[] = { "-b", busy, "-s", "30", NULL };
	pid_t pid = tc_spawn_example("counters", args, NULL);
	char seg[600];
	for (int i = 0; i < 300 && ts_shm_segment(dir, pid, seg, sizeof(seg)) != 0; i++)
		usleep(10000);
	cr_assert_eq(ts_shm_segment(dir, pid, seg, sizeof(seg)), 0, "counters %d never published in %s", (int)pid, dir);
	return pid;
}

/* CPU seconds pid has run, by the kernel's clock of it (schedstat). */
static double cpu_s(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	char *text = ts_read_file(path);
	double ns = strtod(text, NULL);
	free(text);
	return ns / 1e9;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "missing key '%s'", key);
	return v;
}

static double num(json_object *o, const char *key) { return json_object_get_double(get(o, key)); }

/* The binomial (Wilson) half-width of a worker's idle% over its samples:
 * the agreement bound with its own clock, as tight as before the ± became
 * the evaluator's wider, autocorrelation-honest interval. */
static double wilson(json_object *w)
{
	return model_ci95_pts(num(w, "idle_pct") / 100, (uint64_t)num(w, "samples"));
}

static json_object *worker_of(json_object *workers, pid_t pid)
{
	for (size_t i = 0; i < json_object_array_length(workers); i++) {
		json_object *w = json_object_array_get_idx(workers, i);
		if (json_object_get_int(get(w, "pid")) == pid)
			return w;
	}
	return NULL;
}

Test(list_workers, every_field_against_known_workers)
{
	pid_t inst = spawn_counters(40);
	int rfd, wr, loop_out;
	const char *args[] = { "--idle", "0.8", "--seconds", "30", "--plain", NULL };
	pid_t loop = tc_spawn_example("duty_cycle", args, &loop_out);
	pid_t reader = tc_spawn_blocked_read(&rfd, &wr);

	char pids[64];
	snprintf(pids, sizeof(pids), "%d,%d,%d", (int)inst, (int)loop, (int)reader);
	/* --source proc: the samples' fields are what this validates (their
	 * interval, class shares summing to 100); test_bpf_source the kernel's */
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--duration", "3", "--rate", "200",
			 "--source", "proc", "-p", pids, NULL };
	char *out = NULL;
	/* the counters' CPU by the kernel's clock of it, over list's run */
	double cpu0 = cpu_s(inst), t0 = ts_now_ms() / 1e3;
	int rc = ts_run(argv, &out, 20000);
	double own_cpu = 100 * (cpu_s(inst) - cpu0) / (ts_now_ms() / 1e3 - t0);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "not JSON: %s", out);
	cr_assert_eq(json_object_get_int(get(doc, "version")), 1);
	cr_assert_float_eq(num(doc, "duration_s"), 3.0, 0.5);
	json_object *workers = get(doc, "workers");
	cr_assert_eq(json_object_array_length(workers), 2, "the reader never polls, so it is no worker: %s", out);
	cr_assert_null(worker_of(workers, reader));

	/* the instrumented one */
	json_object *w = worker_of(workers, inst);
	cr_assert(w);
	cr_assert_eq(json_object_get_int(get(w, "tid")), inst);
	cr_assert_str_eq(json_object_get_string(get(w, "name")), "counters");
	cr_assert_str_eq(json_object_get_string(get(w, "tag")), "counters");
	cr_assert_str_eq(json_object_get_string(get(w, "backend")), "none");
	cr_assert(json_object_get_boolean(get(w, "instrumented")));
	cr_assert(!json_object_get_boolean(get(w, "gone")));
	cr_assert_gt(json_object_get_int(get(w, "samples")), 300);
	double idle = num(w, "idle_pct");
	double sum = idle + num(w, "running_pct") + num(w, "blocked_pct") + num(w, "other_pct");
	cr_assert_float_eq(sum, 100.0, 0.05);
	/* the ± is the evaluator's interval over the run's whole seconds (two of a
	 * 3-s run: wide, as check would find it): around the estimate, its half-width */
	double lo = num(w, "idle_lo"), hi = num(w, "idle_hi"), ci = num(w, "idle_ci95");
	cr_assert(ci > 0 && lo <= idle && idle <= hi, "idle %.2f ± %.2f in [%.2f, %.2f]", idle, ci, lo, hi);
	cr_assert_float_eq(ci, (hi - lo) / 2, 0.011, "± %.2f of [%.2f, %.2f]", ci, lo, hi);
	json_object *c = get(w, "counters");
	/* its own clock (poll_time_ns, over list's window) against the
	 * samples: CPU taken by other work moves both alike (ts_idle_agrees) */
	double wait = num(w, "cpu_wait_pct"), self = num(c, "self_idle_pct");
	cr_log_info("counters: idle %.2f ±%.2f, its own clock %.2f, cpu wait %.2f; cpu %.2f, by the kernel %.2f\n", idle,
		    num(w, "idle_ci95"), self, wait, num(w, "cpu_pct"), own_cpu);
	cr_assert(ts_idle_agrees(idle, self, wait, wilson(w) + 3), "sampled %.2f ±%.2f vs self %.2f (cpu wait %.2f)",
		  idle, wilson(w), self, wait);
	/* it spins 4 ms of every 10 by its own clock: 60 % in its poll at most */
	cr_assert_leq(self, 63.0, "a 40%%-busy loop's own clock says it idles %.2f%%", self);
	cr_assert_float_eq(num(w, "cpu_pct"), own_cpu, 5.0, "cpu %.2f%%, by the kernel's clock of it %.2f%%",
			   num(w, "cpu_pct"), own_cpu);
	cr_assert_geq(num(w, "cpu_wait_pct"), 0.0);
	/* one op per wake, a wake per 10-ms tick at most (the kernel's timer
	 * counts the ticks, however late the loop runs), and each op spins
	 * 4 ms of the loop's own clock */
	cr_assert_float_eq(num(c, "completions_per_s"), 100.0, 15.0, "the timer's ticks");
	cr_assert_gt(num(c, "ops_per_s"), 0.0);
	cr_assert_leq(num(c, "ops_per_s"), num(c, "completions_per_s") * 1.05, "an op per tick at most");
	cr_assert_geq(100 - self, 0.4 * num(c, "ops_per_s") - 3, "%.2f ops/s of 4 ms each in %.2f%% busy by its clock",
		      num(c, "ops_per_s"), 100 - self);
	cr_assert_float_eq(num(c, "polls_per_s"), num(c, "ops_per_s"), 15.0);
	cr_assert_float_eq(num(c, "headroom_ops_per_s"), num(c, "ops_per_s") / (1 - idle / 100), 0.05 * num(c, "headroom_ops_per_s"));
	/* by its own clock the loop is back in its poll 4 ms after each wake:
	 * any longer stall is time it waited for a CPU, which the samples
	 * count in cpu_wait (0 on a host with a CPU to spare) */
	double waited_ms = wait / 100 * num(doc, "duration_s") * 1000;
	cr_assert_leq(num(c, "stall_ms"), waited_ms > 0 ? 4 + waited_ms : 0, "a stall of %.0f ms; it waited %.0f ms for a CPU",
		      num(c, "stall_ms"), waited_ms);
	cr_assert_eq(json_object_get_int(get(c, "fibers")), 0);
	json_object *totals = get(w, "totals");
	/* the counters since it started hold at least the window's */
	double span = num(doc, "duration_s");
	cr_assert_geq(json_object_get_int64(get(totals, "ops")), 0.95 * num(c, "ops_per_s") * span);
	cr_assert_geq(json_object_get_int64(get(totals, "poll_time_ns")), 0.95 * self / 100 * span * 1e9);
	cr_assert_eq(json_object_get_type(get(w, "blocked_top")), json_type_array);

	/* the uninstrumented epoll loop: sampled, no counters */
	w = worker_of(workers, loop);
	cr_assert(w);
	cr_assert(!json_object_get_boolean(get(w, "instrumented")));
	cr_assert_str_eq(json_object_get_string(get(w, "backend")), "none");
	cr_assert(!json_object_object_get_ex(w, "counters", NULL), "no counters for an uninstrumented worker");
	cr_assert(!json_object_object_get_ex(w, "totals", NULL));
	/* 80 % of its time in its poll by design; what it printed, by its clock */
	kill(loop, SIGTERM);
	double loop_self = tc_read_self_idle(loop_out, 5000);
	close(loop_out);
	cr_assert(ts_idle_agrees(num(w, "idle_pct"), loop_self, num(w, "cpu_wait_pct"), wilson(w) + 3),
		  "idle %.2f ±%.2f (cpu wait %.2f), its own clock %.2f", num(w, "idle_pct"), wilson(w),
		  num(w, "cpu_wait_pct"), loop_self);

	json_object *fleet = get(doc, "fleet");
	cr_assert_eq(json_object_get_int(get(fleet, "workers")), 2);
	cr_assert_float_eq(num(fleet, "ops_per_s"), num(c, "ops_per_s"), 0.01);
	json_object_put(doc);
	free(out);

	kill(inst, SIGTERM);
	waitpid(inst, NULL, 0);
	tc_kill(loop);
	tc_kill(reader);
	close(wr);
}
