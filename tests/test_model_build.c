/* The model from recorded snapshots, without a sampler thread: sorting, fd targets, gone workers, fleet totals and the fleet's history. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "model/model_build.h"
#include "model/model_window.h"

#define NS 1000000000ull

static struct snapshot snap;

static void setup(void)
{
	memset(&snap, 0, sizeof(snap));
	snap.cap = 4;
	snap.w = calloc(snap.cap, sizeof(*snap.w));
	snap.rate_hz = 100;
	snap.now_ns = 11 * NS;
}

static void teardown(void) { snapshot_done(&snap); }

TestSuite(model_build, .init = setup, .fini = teardown, .timeout = 10);

/* A worker whose samples over seconds 1..10 are `poll` in poll_per_10, the rest blocked in read(fd). */
static struct snap_worker *add(pid_t pid, pid_t tid, int poll_per_10, int fd)
{
	struct snap_worker *w = &snap.w[snap.n++];
	memset(w, 0, sizeof(*w));
	w->pid = pid;
	w->tid = tid;
	snprintf(w->name, sizeof(w->name), "w%d", (int)pid);
	series_init(&w->series);
	struct probe_verdict poll = { PROBE_POLL, SYS_epoll_wait, 3 }, rd = { PROBE_BLOCKED, SYS_read, fd };
	for (int i = 0; i < 1000; i++)
		series_add_sample(&w->series, 1 * NS + (uint64_t)i * 10000000ull, i % 10 < poll_per_10 ? &poll : &rd, NULL);
	return w;
}

Test(model_build, sorted_by_pid_tid_with_targets_and_fleet)
{
	struct snap_worker *b = add(20, 21, 5, 9);
	b->ntargets = 1;
	b->targets[0].fd = 9;
	snprintf(b->targets[0].text, sizeof(b->targets[0].text), "pipe:[42]");
	add(10, 10, 9, 4);
	struct model m;
	cr_assert_eq(model_build(&snap, 0, &m), 0);
	cr_assert_eq(m.n, 2);
	cr_assert_eq(m.workers[0].pid, 10, "sorted by pid");
	cr_assert_eq(m.workers[1].pid, 20);
	cr_assert_float_eq(m.workers[0].idle_pct, 90.0, 1e-9);
	cr_assert_float_eq(m.workers[1].idle_pct, 50.0, 1e-9);
	cr_assert_str_eq(m.workers[1].blocked_top[0].syscall, "read");
	cr_assert_str_eq(m.workers[1].blocked_top[0].target, "pipe:[42]", "the snapshot's resolved target");
	cr_assert_str_eq(m.workers[0].blocked_top[0].target, "", "no target resolved for fd 4");
	cr_assert_str_eq(m.workers[0].backend, "none");
	cr_assert_eq(m.fleet.workers, 2);
	cr_assert_float_eq(m.fleet.mean_idle_pct, 70.0, 1e-9);
	cr_assert(isnan(m.fleet.ops_per_s), "no instrumented worker: unknown, not 0");
	cr_assert(isnan(m.fleet.headroom_ops_per_s));
	cr_assert_float_eq(m.elapsed_s, 10.0, 1e-9);
	cr_assert_float_eq(m.rate_hz, 100, 1e-9);
	model_done(&m);
}

Test(model_build, fleet_history_is_the_mean_of_the_workers_with_that_second)
{
	add(1, 1, 10, 3);   /* idle 100 % every second */
	add(2, 2, 0, 3);    /* idle 0 % */
	struct model m;
	cr_assert_eq(model_build(&snap, 5, &m), 0);
	cr_assert_eq(m.fleet.nhistory, 10);
	for (int k = 0; k < m.fleet.nhistory; k++)
		cr_assert_float_eq(m.fleet.idle_history[k], 50.0, 1e-4, "second %d: %f", k, m.fleet.idle_history[k]);
	model_done(&m);
}

Test(model_build, fleet_sums_only_what_is_known)
{
	struct model m = { 0 };
	struct worker_view w[3] = { 0 };
	w[0] = (struct worker_view){ .idle_pct = 20, .ops_per_s = 100, .headroom_ops_per_s = 125 };
	w[1] = (struct worker_view){ .idle_pct = NAN, .ops_per_s = NAN, .headroom_ops_per_s = NAN };
	w[2] = (struct worker_view){ .idle_pct = 60, .ops_per_s = 50, .headroom_ops_per_s = NAN };
	w[0].nhistory = 2;
	w[0].idle_history[0] = 10;
	w[0].idle_history[1] = NAN;
	w[2].nhistory = 1;
	w[2].idle_history[0] = 30;
	m.workers = w;
	m.n = 3;
	model_fleet(&m);
	cr_assert_eq(m.fleet.workers, 3);
	cr_assert_float_eq(m.fleet.mean_idle_pct, 40.0, 1e-9, "NaN is skipped, not counted as 0");
	cr_assert_float_eq(m.fleet.ops_per_s, 150.0, 1e-9);
	cr_assert_float_eq(m.fleet.headroom_ops_per_s, 125.0, 1e-9);
	cr_assert_eq(m.fleet.nhistory, 2);
	cr_assert_float_eq(m.fleet.idle_history[0], 10.0, 1e-6, "only worker 0 has the older second");
	cr_assert_float_eq(m.fleet.idle_history[1], 30.0, 1e-6, "worker 0's NaN leaves worker 2's value");
}

Test(model_build, gone_worker_is_not_stalled_and_empty_fleet_is_unknown)
{
	struct model m;
	cr_assert_eq(model_build(&snap, 0, &m), 0);
	cr_assert_eq(m.n, 0);
	cr_assert(isnan(m.fleet.mean_idle_pct));
	model_done(&m);
	struct snap_worker *w = add(5, 5, 5, 3);
	w->gone = 1;
	w->instrumented = 1;
	uint64_t v[PROBE_SHM_NVALUES] = { 0 };
	series_add_shm(&w->series, 1 * NS, 1 * NS, v, "");
	series_add_shm(&w->series, 2 * NS, 2 * NS, v, "");
	cr_assert_eq(model_build(&snap, 0, &m), 0);
	cr_assert(m.workers[0].gone);
	cr_assert_float_eq(m.workers[0].stall_ms, 0, 1e-12, "an exited thread is not stalled");
	model_done(&m);
}

Test(model_build, a_window_copy_reads_only_its_own_seconds_even_for_a_young_worker)
{
	/* a sampler one second old: the window's bounds reach below 0, where
	 * an unused bucket's marker (-1) lies; the copy leaves unused buckets'
	 * counts as whatever memory held */
	struct series *src = malloc(sizeof(*src)), *dst = malloc(sizeof(*dst));
	series_init(src);
	struct probe_verdict poll = { PROBE_POLL, SYS_epoll_wait, 3 };
	for (int i = 0; i < 100; i++)
		series_add_sample(src, 1 * NS + (uint64_t)i * 1000000ull, &poll, NULL);
	memset(dst, 0xbe, sizeof(*dst));
	series_copy_window(dst, src, 1, 5, 1);
	struct worker_view a, b;
	model_window(src, 1 * NS + 500000000ull, 5, 0, &a);
	model_window(dst, 1 * NS + 500000000ull, 5, 0, &b);
	cr_assert_eq(a.samples, 100);
	cr_assert_eq(b.samples, 100, "the copy read %llu samples", (unsigned long long)b.samples);
	cr_assert_float_eq(b.idle_pct, 100.0, 1e-9);
	free(src);
	free(dst);
}
