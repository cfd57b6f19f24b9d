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
