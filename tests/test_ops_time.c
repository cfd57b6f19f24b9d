/* Time ops: sleep, timer_loop's fixed schedule with skipped ticks, nested timeout scopes, cancelled sleeps and their late completions. */
#include "support/fl_test.h"

#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sleep_main(void *arg)
{
	(void)arg;
	double t0 = now_s();
	cr_assert_eq(fl_sleep(0.05), 0);
	double dt = now_s() - t0;
	cr_assert(dt >= 0.05 && dt < 0.5, "slept %.3f s", dt);
	cr_assert_eq(fl_sleep(0), 0);
	cr_assert_eq(fl_sleep(-1), -EINVAL);
	return NULL;
}

Test(ops_time, sleep_duration, .timeout = 10)
{
	fl_test_run(sleep_main, NULL);
}

struct ticks {
	double t[16];
	int    n;
	int    stall_at;
};

static int on_tick(void *arg)
{
	struct ticks *k = arg;
	k->t[k->n++] = now_s();
	if (k->n == k->stall_at)
		/* late by more than two intervals; ends mid-way between slots 5
		 * and 6, so timer granularity (epoll: 1 ms) and a loaded machine
		 * cannot move it across a slot boundary */
		usleep(50000);
	return k->n == 8;
}

static void *timer_main(void *arg)
{
	(void)arg;
	struct ticks k = { .stall_at = 3 };
	double t0 = now_s();
	cr_assert_eq(fl_timer_loop(0.02, on_tick, &k), 0);
	cr_assert_eq(k.n, 8);
	/* every tick lands on the grid t0 + i*20ms; after the stall at tick 3
	 * (50 ms) ticks 4 and 5 were skipped, so tick 4 fires at slot 6 */
	for (int i = 0; i < k.n; i++) {
		int slot = i < 3 ? i + 1 : i + 3;
		double expect = t0 + slot * 0.02;
		cr_assert(k.t[i] >= expect - 0.001 && k.t[i] < expect + 0.015, "tick %d at %.4f, slot %.4f", i,
			  k.t[i] - t0, expect - t0);
	}
	cr_assert_eq(fl_timer_loop(0, on_tick, &k), -EINVAL);
	return NULL;
}

Test(ops_time, timer_loop_fixed_schedule_skips_missed, .timeout = 10)
{
	fl_test_run(timer_main, NULL);
}

static int inner_scope(void *arg)
{
	(void)arg;
	return fl_sleep(10);
}

static int outer_scope(void *arg)
{
	(void)arg;
	/* inner expires first */
	int r = fl_timeout(0.02, inner_scope, NULL);
	cr_assert_eq(r, -ETIMEDOUT);
	/* then the outer one interrupts this sleep */
	return fl_sleep(10);
}

static int quick(void *arg)
{
	(void)arg;
	return fl_sleep(0.001);
}

static void *scopes_main(void *arg)
{
	(void)arg;
	double t0 = now_s();
	cr_assert_eq(fl_timeout(0.1, outer_scope, NULL), -ETIMEDOUT);
	double dt = now_s() - t0;
	cr_assert(dt >= 0.1 && dt < 0.5, "outer scope ended after %.3f s", dt);
	cr_assert_eq(fl_timeout(1, quick, NULL), 0, "no timeout when the body is quick");
	cr_assert_eq(fl_sleep(0.03), 0, "an expired scope leaves later ops alone");
	return NULL;
}

Test(ops_time, nested_timeout_scopes, .timeout = 10)
{
	fl_test_run(scopes_main, NULL);
}

/* ---- the outer scope fires while an inner scope's op is pending ---------- */

static int inner_blocks(void *arg)
{
	(void)arg;
	return fl_sleep(10);
}

static int outer_fires_inside_inner(void *arg)
{
	(void)arg;
	int p[2];
	char c;
	/* the outer deadline (50 ms) interrupts the inner scope's op */
	cr_assert_eq(fl_timeout(10, inner_blocks, NULL), -ETIMEDOUT);
	/* the outer scope stays expired: before, its deadline was lost here
	 * and this sleep blocked for 10 s */
	cr_assert_eq(fl_sleep(10), -ETIMEDOUT);
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(fl_read(p[0], &c, 1), -ETIMEDOUT);
	cr_assert_eq(fl_timeout(5, inner_blocks, NULL), -ETIMEDOUT, "a scope opened after expiry");
	close(p[0]);
	close(p[1]);
	return -ETIMEDOUT;
}

static void *outer_inner_main(void *arg)
{
	(void)arg;
	double t0 = now_s();
	cr_assert_eq(fl_timeout(0.05, outer_fires_inside_inner, NULL), -ETIMEDOUT);
	double dt = now_s() - t0;
	cr_assert(dt >= 0.05 && dt < 0.25, "outer scope ended after %.3f s", dt);
	cr_assert_eq(fl_sleep(0.01), 0, "no expired scope left on the fiber");
	return NULL;
}

Test(ops_time, outer_scope_firing_inside_inner_stays_expired, .timeout = 30)
{
	fl_test_run(outer_inner_main, NULL);
}

/* ---- a timeout does not overwrite a pending cancel ------------------------ */

static int cancel_then_expire(void *arg)
{
	(void)arg;
	fl_cancel(fl_current()); /* pending for the next op */
	struct timespec ts = { 0, 40 * 1000 * 1000 };
	nanosleep(&ts, NULL); /* past the deadline, without an op */
	fl_snooze();          /* alone in the loop: polls, the scope fires */
	cr_assert_eq(fl_sleep(1), -ECANCELED, "the timeout overwrote the cancel");
	return fl_sleep(1);
}

static void *cancel_kept(void *arg)
{
	*(int *)arg = fl_timeout(0.02, cancel_then_expire, NULL);
	return NULL;
}

static void *cancel_timeout_main(void *arg)
{
	(void)arg;
	int res = 0;
	fl_fiber *f = fl_spin(cancel_kept, &res, NULL);
	fl_fiber_ref(f);
	fl_await(f, NULL);
	fl_fiber_unref(f);
	cr_assert_eq(res, -ETIMEDOUT, "after the cancel, the expired scope");
	return NULL;
}

Test(ops_time, timeout_keeps_a_pending_cancel, .timeout = 20)
{
	fl_test_run(cancel_timeout_main, NULL);
}

static void *long_sleeper(void *arg)
{
	*(int *)arg = fl_sleep(30);
	return NULL;
}

static void *late_main(void *arg)
{
	(void)arg;
	int res[100];
	fl_fiber *f[100];
	for (int i = 0; i < 100; i++)
		f[i] = fl_spin(long_sleeper, &res[i], NULL);
	fl_sleep(0.01);
	for (int i = 0; i < 100; i++)
		fl_cancel(f[i]);
	/* the cancelled fibers return at once; their timeouts' CQEs come
	 * later and only release op contexts (checked by the leak check) */
	fl_snooze();
	for (int i = 0; i < 100; i++)
		cr_assert_eq(res[i], -ECANCELED);
	fl_sleep(0.01);
	return NULL;
}

Test(ops_time, cancelled_sleep_late_completion_is_harmless, .timeout = 10)
{
	fl_test_run(late_main, NULL);
}
