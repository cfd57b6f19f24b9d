/* Capacity model on recorded sample streams: idle, CI95, windows, blockers, rates, headroom, stall, history. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "model/estimate.h"
#include "model/model_window.h"
#include "model/model.h"

#define NS 1000000000ull
#define MS 1000000ull

static struct series *acc;
static struct worker_view view;

static void setup(void)
{
	acc = malloc(sizeof(*acc));
	series_init(acc);
	memset(&view, 0, sizeof(view));
}

static void teardown(void) { free(acc); }

TestSuite(model, .init = setup, .fini = teardown, .timeout = 10);

static const struct probe_verdict POLL = { PROBE_POLL, SYS_epoll_wait, 3 };
static const struct probe_verdict RUN = { PROBE_RUNNING, -1, -1 };
static const struct probe_verdict READ5 = { PROBE_BLOCKED, SYS_read, 5 };
static const struct probe_verdict FSYNC7 = { PROBE_BLOCKED, SYS_fsync, 7 };
static const struct probe_verdict OTHER = { PROBE_OTHER, -1, -1 };

/* n samples evenly spread over [from, to) ns, the i-th chosen by pick(i) */
static void feed(uint64_t from, uint64_t to, int n, const struct probe_verdict *(*pick)(int))
{
	for (int i = 0; i < n; i++)
		series_add_sample(acc, from + (to - from) * (uint64_t)i / (uint64_t)n, pick(i), NULL);
}

static const struct probe_verdict *quarter_idle(int i) { return i % 4 == 0 ? &POLL : &RUN; }
static const struct probe_verdict *all_poll(int i) { (void)i; return &POLL; }
static const struct probe_verdict *all_run(int i) { (void)i; return &RUN; }
static const struct probe_verdict *mixed(int i)
{
	static const struct probe_verdict *cycle[10] = { &READ5, &READ5, &READ5, &READ5, &READ5, &READ5,
							 &FSYNC7, &FSYNC7, &POLL, &OTHER };
	return cycle[i % 10];
}

Test(model, idle_share_and_wilson_interval)
{
	feed(1 * NS, 6 * NS, 1000, quarter_idle);
	model_window(acc, 6 * NS - 1, 5, 0, &view); /* seconds 1..5 */
	cr_assert_eq(view.samples, 1000);
	cr_assert_float_eq(view.idle_pct, 25.0, 1e-9);
	cr_assert_float_eq(view.running_pct, 75.0, 1e-9);
	cr_assert_float_eq(view.blocked_pct, 0.0, 1e-9);
	/* the evaluator's interval over the 5 seconds: every second reads 25 %,
	 * so the batch means' spread is the binomial one, with t at 4 df */
	double half = est_t975(4) * 100 * sqrt(0.25 * 0.75 / 1000);
	cr_assert_float_eq(view.idle_ci95, half, 0.01, "ci95 %f", view.idle_ci95);
	cr_assert_float_eq(view.idle_lo, 25 - half, 0.01, "lo %f", view.idle_lo);
	cr_assert_float_eq(view.idle_hi, 25 + half, 0.01, "hi %f", view.idle_hi);
	cr_assert(isnan(view.ops_per_s), "uninstrumented: no rates");
}

/* A source that measures exactly says so: the interval is the value. */
Test(model, exact_counts_have_the_measurements_interval)
{
	feed(1 * NS, 6 * NS, 1000, quarter_idle);
	acc->exact = 1;
	model_window(acc, 6 * NS - 1, 5, 0, &view);
	cr_assert_float_eq(view.idle_pct, 25.0, 1e-9);
	cr_assert_eq(view.idle_ci95, 0, "± %f", view.idle_ci95);
	cr_assert(view.idle_lo == view.idle_pct && view.idle_hi == view.idle_pct, "[%f, %f]", view.idle_lo, view.idle_hi);
}

Test(model, ci95_properties)
{
	cr_assert_gt(model_ci95_pts(0.5, 100), model_ci95_pts(0.5, 10000));
	cr_assert_gt(model_ci95_pts(0.0, 50), 0.0, "never claims certainty from few samples");
	cr_assert_float_eq(model_ci95_pts(0.5, 10000), 0.98, 0.01);
	cr_assert(isnan(model_ci95_pts(0.5, 0)));
}

Test(model, window_excludes_older_seconds_cumulative_does_not)
{
	feed(1 * NS, 11 * NS, 1000, all_run);   /* 10 s fully busy */
	feed(11 * NS, 16 * NS, 500, all_poll);  /* then 5 s idle */
	model_window(acc, 16 * NS - 1, 5, 0, &view);
	cr_assert_float_eq(view.idle_pct, 100.0, 1e-9, "last 5 s: idle %f", view.idle_pct);
	cr_assert_eq(view.samples, 500);
	model_window(acc, 16 * NS - 1, 0, 0, &view);
	cr_assert_eq(view.samples, 1500);
	cr_assert_float_eq(view.idle_pct, 100.0 / 3, 1e-9);
}

Test(model, blockers_ranked_by_share)
{
	feed(1 * NS, 3 * NS, 1000, mixed);
	model_window(acc, 3 * NS - 1, 2, 0, &view);
	cr_assert_float_eq(view.blocked_pct, 80.0, 1e-9);
	cr_assert_float_eq(view.other_pct, 10.0, 1e-9);
	cr_assert_eq(view.nblocked_top, 2);
	cr_assert_str_eq(view.blocked_top[0].syscall, "read");
	cr_assert_eq(view.blocked_top[0].fd, 5);
	cr_assert_float_eq(view.blocked_top[0].pct, 60.0, 1e-9);
	cr_assert_str_eq(view.blocked_top[1].syscall, "fsync");
	cr_assert_float_eq(view.blocked_top[1].pct, 20.0, 1e-9);
}

static void shm_at(uint64_t t, uint64_t ops, uint64_t switches, uint64_t poll_ns, uint64_t runq)
{
	uint64_t v[PROBE_SHM_NVALUES] = { 0 };
	v[PROBE_SHM_ops] = ops;
	v[PROBE_SHM_switches] = switches;
	v[PROBE_SHM_poll_time_ns] = poll_ns;
	v[PROBE_SHM_runqueue_len] = runq;
	series_add_shm(acc, t, t, v, "handler");
}

Test(model, rates_self_idle_and_headroom)
{
	/* 1000 ops/s, 75% of wall in poll by its own clock, 10 Hz readings */
	for (uint64_t t = 1 * NS; t <= 7 * NS; t += 100 * MS) {
		uint64_t el = t - 1 * NS;
		shm_at(t, el / MS, el / MS * 3, el * 3 / 4, (t / (100 * MS)) % 7);
	}
	feed(1 * NS, 7 * NS, 1200, quarter_idle); /* sampled: 25% idle */
	model_window(acc, 7 * NS, 5, 1, &view);
	cr_assert_float_eq(view.ops_per_s, 1000.0, 1e-6, "ops/s %f", view.ops_per_s);
	cr_assert_float_eq(view.switches_per_s, 3000.0, 1e-6);
	cr_assert_float_eq(view.self_idle_pct, 75.0, 1e-6);
	/* headroom = ops/s / (1 - idle) with the sampled idle of 25% */
	cr_assert_float_eq(view.headroom_ops_per_s, 1000.0 / 0.75, 1e-6);
	cr_assert_eq(view.runqueue_max, 6);
	cr_assert(isnan(model_headroom(1000, 99.5)), "no finite headroom for an idle worker");
	cr_assert(isnan(model_headroom(NAN, 50)));
}

/* Headroom is the tightest of the loop's, the quota's and the pool's bounds. */
Test(model, headroom_is_bound_by_the_tightest_of_loop_quota_and_pool)
{
	for (uint64_t t = 1 * NS; t <= 7 * NS; t += 100 * MS) {
		uint64_t el = t - 1 * NS;
		shm_at(t, el / MS, el / MS, el / 2, 0);   /* 1000 ops/s */
	}
	feed(1 * NS, 7 * NS, 1200, quarter_idle);     /* 25% idle: the loop's bound 1333 ops/s */
	for (uint64_t t = 1 * NS; t <= 7 * NS; t += NS)
		series_add_pool(acc, t, 4, 100, 90);   /* a pool of 4, 90% busy: its bound 1111 ops/s */
	model_window(acc, 7 * NS, 5, 1, &view);
	cr_assert_float_eq(view.pool_busy_pct, 90.0, 1e-6);
	cr_assert_float_eq(view.pool_threads, 4.0, 1e-6);
	cr_assert_float_eq(view.headroom_ops_per_s, 1000.0 / 0.9, 1e-6, "headroom %f", view.headroom_ops_per_s);
	enum model_bound b;
	double h = model_headroom_bound(view.ops_per_s, view.idle_pct, view.quota_cpus, view.cpu_pct, view.pool_busy_pct, &b);
	cr_assert_eq(b, MODEL_BOUND_POOL);
	cr_assert_float_eq(h, view.headroom_ops_per_s, 1e-6);
	/* 0.5 CPU used under a 0.25-CPU quota: half the rate is all it can do */
	h = model_headroom_bound(1000, 25, 0.25, 50, 90, &b);
	cr_assert_eq(b, MODEL_BOUND_QUOTA);
	cr_assert_float_eq(h, 500.0, 1e-6);
	h = model_headroom_bound(1000, 25, NAN, 50, NAN, &b);
	cr_assert_eq(b, MODEL_BOUND_LOOP);
	cr_assert_float_eq(h, 1000.0 / 0.75, 1e-6);
	cr_assert(isnan(model_headroom_bound(1000, 99.5, NAN, NAN, NAN, &b)) && b == MODEL_BOUND_NONE);
	cr_assert_str_eq(model_bound_name(MODEL_BOUND_POOL), "pool");
	cr_assert_null(model_bound_name(MODEL_BOUND_NONE));
}

/* A reading at t (sampler clock) = t + 1000 s (CLOCK_MONOTONIC). */
static void shm_polling_at(uint64_t t, uint64_t poll_ns, uint64_t since_mono)
{
	uint64_t v[PROBE_SHM_NVALUES] = { 0 };
	v[PROBE_SHM_poll_time_ns] = poll_ns;
	v[PROBE_SHM_poll_since_ns] = since_mono;
	series_add_shm(acc, t, t + 1000 * NS, v, "");
}

Test(model, self_idle_counts_a_poll_in_progress)
{
	/* 50% idle up to 2 s, then one blocking poll from 2 s that lasts past
	 * the end of every window: before, the window read 0% then >100% */
	for (uint64_t t = 1 * NS; t <= 2 * NS; t += 100 * MS)
		shm_polling_at(t, (t - 1 * NS) / 2, 0);
	for (uint64_t t = 2 * NS + 100 * MS; t <= 6 * NS; t += 100 * MS)
		shm_polling_at(t, NS / 2, 1002 * NS);
	model_window(acc, 6 * NS, 3, 1, &view); /* seconds 4..6, baseline at 3.9 s */
	cr_assert_float_eq(view.self_idle_pct, 100.0, 1e-6, "self idle %f", view.self_idle_pct);
	model_window(acc, 6 * NS, 0, 1, &view); /* since 1 s: 0.5 s + 4 s of 5 s */
	cr_assert_float_eq(view.self_idle_pct, 90.0, 1e-6, "self idle %f", view.self_idle_pct);
	/* the poll ends at 6.5 s: its time moves into poll_time_ns */
	shm_polling_at(6 * NS + 500 * MS, NS / 2 + 4500 * MS, 0);
	model_window(acc, 6 * NS + 500 * MS, 0, 1, &view);
	cr_assert_float_eq(view.self_idle_pct, 5000.0 / 55.0, 1e-6, "self idle %f", view.self_idle_pct);
}

Test(model, cpu_and_wait_from_schedstat)
{
	for (uint64_t s = 1; s <= 6; s++)
		series_add_sched(acc, s * NS, (s - 1) * NS / 2, (s - 1) * NS / 10);
	model_window(acc, 6 * NS, 0, 0, &view);
	cr_assert_float_eq(view.cpu_pct, 50.0, 1e-6);
	cr_assert_float_eq(view.cpu_wait_pct, 10.0, 1e-6);
}

/* schedstat readings every 250 ms from `from` to `to`: runnable `busy`
 * of the time, a fifth of it waiting for a CPU */
static void sched_feed(uint64_t from, uint64_t to, double busy)
{
	for (uint64_t t = from; t <= to; t += 250 * MS) {
		double runnable = busy * (double)(t - from);
		series_add_sched(acc, t, (uint64_t)(runnable * 0.8), (uint64_t)(runnable * 0.2));
	}
}

/* A sampler that never got to run while the worker did saw only its poll;
 * schedstat says the worker was runnable 10 % of the time. */
Test(model, runnable_share_comes_from_schedstat_when_samples_miss_it)
{
	sched_feed(0, 6 * NS, 0.10);
	feed(1 * NS, 6 * NS, 1000, all_poll);
	model_window(acc, 6 * NS - 1, 5, 0, &view); /* seconds 1..5 */
	cr_assert_float_eq(view.cpu_pct + view.cpu_wait_pct, 10.0, 1e-6);
	cr_assert_float_eq(view.running_pct, 10.0, 1e-6);
	cr_assert_float_eq(view.idle_pct, 90.0, 1e-6, "idle %f", view.idle_pct);
	cr_assert_eq(view.samples, 1000);
	/* the interval of an estimate that cannot vary: only Wilson's edge term */
	cr_assert_lt(view.idle_ci95, 0.4, "ci95 %f", view.idle_ci95);
	cr_assert_float_eq(view.idle_history[0], 90.0f, 1e-3, "history %f", view.idle_history[0]);
}

/* The samples split the time off the CPU: 80 % of it here, in the
 * proportions of mixed(): read 60 %, fsync 20 %, poll 10 %, other 10 %. */
Test(model, samples_split_the_time_off_cpu)
{
	sched_feed(0, 6 * NS, 0.20);
	feed(1 * NS, 6 * NS, 1000, mixed);
	for (int i = 0; i < 250; i++) /* running samples do not move the split */
		series_add_sample(acc, 1 * NS + (uint64_t)i * 10 * MS, &RUN, NULL);
	model_window(acc, 6 * NS - 1, 5, 0, &view); /* seconds 1..5 */
	cr_assert_float_eq(view.running_pct, 20.0, 1e-6);
	cr_assert_float_eq(view.idle_pct, 8.0, 1e-6, "idle %f", view.idle_pct);
	cr_assert_float_eq(view.blocked_pct, 64.0, 1e-6);
	cr_assert_float_eq(view.other_pct, 8.0, 1e-6);
	cr_assert_eq(view.nblocked_top, 2);
	cr_assert_float_eq(view.blocked_top[0].pct, 48.0, 1e-6);
	cr_assert_float_eq(view.blocked_top[1].pct, 16.0, 1e-6);
	/* the evaluator's interval: at least Wilson's for p = 0.1 over the 1000
	 * off-CPU samples, scaled to 80 %, and the estimate inside it */
	cr_assert_geq(view.idle_ci95, 0.8 * model_ci95_pts(0.1, 1000) - 1e-9, "ci95 %f", view.idle_ci95);
	cr_assert_float_eq(view.idle_ci95, (view.idle_hi - view.idle_lo) / 2, 1e-9);
	cr_assert(view.idle_lo < 8 && 8 < view.idle_hi, "[%f, %f]", view.idle_lo, view.idle_hi);
}

/* No sample off the CPU: nothing to split, the samples' own shares stand
 * (a worker busier than schedstat's reading says is not made idle). */
Test(model, no_off_cpu_sample_keeps_the_sampled_shares)
{
	sched_feed(0, 6 * NS, 0.70);
	feed(1 * NS, 6 * NS, 200, all_run);
	model_window(acc, 6 * NS - 1, 5, 0, &view); /* seconds 1..5 */
	cr_assert_float_eq(view.idle_pct, 0.0, 1e-9);
	cr_assert_float_eq(view.running_pct, 100.0, 1e-9);
}

Test(model, stall_while_running_with_switches_frozen)
{
	shm_at(1 * NS, 10, 500, 0, 0);
	for (uint64_t t = 1 * NS + 100 * MS; t <= 2800 * MS; t += 100 * MS) {
		shm_at(t, 10, 500, 0, 0); /* switches frozen */
		series_add_sample(acc, t, &RUN, NULL);
	}
	model_window(acc, 2800 * MS, 5, 1, &view);
	cr_assert_float_eq(view.stall_ms, 1800.0, 1e-6, "stall %f ms", view.stall_ms);
	cr_assert_str_eq(view.fiber_tag, "handler");

	series_add_sample(acc, 2900 * MS, &POLL, NULL); /* back in its poll: idle, not stalled */
	shm_at(3 * NS, 10, 500, 0, 0);
	cr_assert_eq(series_stall_ns(acc, 3 * NS), 0);
	/* a peak: the window still holds the stall, a window after it does not */
	model_window(acc, 3 * NS, 5, 1, &view);
	cr_assert_float_eq(view.stall_ms, 1800.0, 1e-6, "the window's longest: %f ms", view.stall_ms);
	model_window(acc, 3 * NS + 500 * MS, 1, 1, &view);
	cr_assert_float_eq(view.stall_ms, 0.0, 1e-9, "second 3 had none: %f ms", view.stall_ms);

	shm_at(3100 * MS, 10, 501, 0, 0); /* and a switch resets the clock */
	series_add_sample(acc, 3150 * MS, &RUN, NULL);
	cr_assert_eq(series_stall_ns(acc, 3200 * MS), 0, "100 ms is no stall");
	cr_assert_eq(series_stall_ns(acc, 3500 * MS), 400 * MS);
}

Test(model, per_second_history)
{
	feed(1 * NS, 2 * NS, 100, all_poll);
	feed(2 * NS, 3 * NS, 100, all_run);
	feed(4 * NS, 5 * NS, 100, quarter_idle); /* second 3 has no samples */
	series_add_sample(acc, 5 * NS + 1, &POLL, NULL);  /* second 5 is under way: not history yet */
	model_window(acc, 5 * NS + 2, 5, 0, &view);
	cr_assert_eq(view.nhistory, 4);
	cr_assert_float_eq(view.idle_history[0], 100.0f, 1e-4);
	cr_assert_float_eq(view.idle_history[1], 0.0f, 1e-4);
	cr_assert(isnan(view.idle_history[2]));
	cr_assert_float_eq(view.idle_history[3], 25.0f, 1e-4);
}

Test(model, gone_and_no_access_samples_are_not_time)
{
	static const struct probe_verdict gone = { PROBE_GONE, -1, -1 }, denied = { PROBE_NO_ACCESS, -1, -1 };
	series_add_sample(acc, 1 * NS, &gone, NULL);
	series_add_sample(acc, 1 * NS, &denied, NULL);
	model_window(acc, 2 * NS, 5, 0, &view);
	cr_assert_eq(view.samples, 0);
	cr_assert(isnan(view.idle_pct));
}

Test(model, keys_split_by_call_site_and_fiber_and_overflow_is_counted)
{
	struct series_ctx a = { .sp = 0x7000, .pc = 0x1000, .fiber = 0 }, b = { .sp = 0x7100, .pc = 0x2000, .fiber = 0 };
	uint64_t v[PROBE_SHM_NVALUES] = { 0 };
	v[PROBE_SHM_current_tag] = 2;
	series_add_shm(acc, 1 * NS, 1 * NS, v, "handler");
	for (int i = 0; i < 30; i++)
		series_add_sample(acc, 1 * NS + (uint64_t)i * MS, &READ5, &a);
	for (int i = 0; i < 10; i++)
		series_add_sample(acc, 1 * NS + (uint64_t)(100 + i) * MS, &READ5, &b);
	struct series_ctx in_fiber = { .fiber = acc->fiber_now };
	for (int i = 0; i < 20; i++)
		series_add_sample(acc, 1 * NS + (uint64_t)(200 + i) * MS, &RUN, &in_fiber);
	model_window(acc, 2 * NS, 0, 1, &view);
	cr_assert_eq(view.nkeys, 3);
	cr_assert_str_eq(view.keys[0].cls, "blocked");
	cr_assert_str_eq(view.keys[0].syscall, "read");
	cr_assert_eq(view.keys[0].pc, 0x1000, "the same syscall from two call sites is two keys");
	cr_assert_eq(view.keys[0].sp, 0x7000);
	cr_assert_float_eq(view.keys[0].pct, 50.0, 1e-9);
	cr_assert_str_eq(view.keys[1].cls, "running");
	cr_assert_str_eq(view.keys[1].fiber, "handler", "the running fiber, named by the slot's reading");
	cr_assert_eq(view.keys[2].pc, 0x2000);
	cr_assert_float_eq(view.keys_unkeyed_pct, 0.0, 1e-12);

	/* more call sites than the table holds: counted, not dropped */
	for (int i = 0; i < SERIES_KEYS + 10; i++) {
		struct series_ctx c = { .pc = 0x10000 + (uint64_t)i };
		series_add_sample(acc, 1 * NS + (uint64_t)(300 + i) * MS, &FSYNC7, &c);
	}
	model_window(acc, 2 * NS, 0, 1, &view);
	cr_assert_eq(view.nkeys, MODEL_KEYS);
	cr_assert_float_eq(view.keys_unkeyed_pct, 100.0 * 13 / (60 + SERIES_KEYS + 10), 1e-9,
			   "3 keys were taken: 61 call sites fit, 13 did not");
}

Test(model, blockers_beyond_the_key_table_are_shown_as_unkeyed)
{
	for (int fd = 0; fd < SERIES_BLOCK_KEYS + 2; fd++) {
		struct probe_verdict v = { PROBE_BLOCKED, SYS_read, fd };
		series_add_sample(acc, 1 * NS + (uint64_t)fd * MS, &v, NULL);
	}
	model_window(acc, 2 * NS - 1, 1, 0, &view);
	cr_assert_float_eq(view.blocked_pct, 100.0, 1e-9);
	cr_assert_float_eq(view.blocked_unkeyed_pct, 100.0 * 2 / (SERIES_BLOCK_KEYS + 2), 1e-9);
}
