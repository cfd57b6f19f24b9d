/* schedstat: parsing, a busy and a sleeping child's CPU time, a task that is gone, fixture trees. */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe_schedstat.h"
#include "probe_proc.h"
#include "support/probe_child.h"

static int parse(const char *text, struct probe_schedstat *s)
{
	return probe_schedstat_parse(text, strlen(text), s);
}

Test(probe_schedstat, parse, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_schedstat s;
	cr_assert_eq(parse("123456789 42 7\n", &s), 0);
	cr_assert_eq(s.run_ns, 123456789);
	cr_assert_eq(s.wait_ns, 42);
	cr_assert_eq(s.timeslices, 7);
	cr_assert_eq(parse("18446744073709551615 0 0", &s), 0);
	cr_assert_eq(s.run_ns, UINT64_MAX);
	static const char *bad[] = {
		"", "\n", "1 2", "1 2 3 4", "1 2 x", "1  2 3", "-1 2 3", "1 2 3x",
		"18446744073709551616 0 0", " 1 2 3", "1 2 3\n\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s.run_ns = 99;
		cr_assert_eq(parse(bad[i], &s), -EINVAL, "accepted \"%s\"", bad[i]);
		cr_assert_eq(s.run_ns, 0);
	}
}

static uint64_t run_delta_over(pid_t pid, int ms)
{
	struct probe_schedstat_file f;
	struct probe_schedstat a, b;
	cr_assert_eq(probe_schedstat_open(&f, pid, pid), 0);
	cr_assert_eq(probe_schedstat_sample(&f, &a), 0);
	usleep((useconds_t)ms * 1000);
	cr_assert_eq(probe_schedstat_sample(&f, &b), 0);
	probe_schedstat_close(&f);
	cr_assert_geq(b.run_ns, a.run_ns);
	cr_assert_geq(b.wait_ns, a.wait_ns);
	return b.run_ns - a.run_ns;
}

Test(probe_schedstat, busy_child_accumulates_cpu, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t pid = tchild_fork(tchild_park_busy, NULL);
	cr_assert_gt(pid, 0);
	/* 300 ms of wall: even sharing two loaded cores it gets tens of ms */
	uint64_t d = run_delta_over(pid, 300);
	cr_assert_gt(d, 20 * 1000 * 1000ull, "busy child ran only %llu ns", (unsigned long long)d);
	tchild_reap(pid);
}

Test(probe_schedstat, sleeping_child_does_not, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t pid = tchild_fork(tchild_park_pause, NULL);
	cr_assert_gt(pid, 0);
	uint64_t d = run_delta_over(pid, 200);
	cr_assert_lt(d, 2 * 1000 * 1000ull, "sleeping child ran %llu ns", (unsigned long long)d);
	tchild_reap(pid);
}

Test(probe_schedstat, gone_task, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t pid = tchild_fork(tchild_park_pause, NULL);
	cr_assert_gt(pid, 0);
	struct probe_schedstat_file f;
	struct probe_schedstat s;
	cr_assert_eq(probe_schedstat_open(&f, pid, pid), 0);
	cr_assert_eq(probe_schedstat_sample(&f, &s), 0);
	tchild_reap(pid);
	cr_assert_eq(probe_schedstat_sample(&f, &s), -ESRCH);
	probe_schedstat_close(&f);
	cr_assert_eq(probe_schedstat_read(pid, pid, &s), -ESRCH);
}

Test(probe_schedstat, fixture_tree, .timeout = PROBE_TEST_TIMEOUT)
{
	char root[PATH_MAX];
	cr_assert_eq(tchild_fixture_dir(root, sizeof(root)), 0);
	cr_assert_eq(tchild_fixture_write(root, "10/task/11/schedstat", "5000 6000 7\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "10/task/12/schedstat", "5000 6000\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "10/task/13/schedstat", "5000 abc 7\n"), 0);
	setenv(PROBE_PROC_ROOT_ENV, root, 1);
	struct probe_schedstat s;
	cr_assert_eq(probe_schedstat_read(10, 11, &s), 0);
	cr_assert_eq(s.run_ns, 5000);
	cr_assert_eq(s.wait_ns, 6000);
	cr_assert_eq(s.timeslices, 7);
	cr_assert_eq(probe_schedstat_read(10, 12, &s), -EINVAL);
	cr_assert_eq(probe_schedstat_read(10, 13, &s), -EINVAL);
	cr_assert_eq(probe_schedstat_read(10, 14, &s), -ESRCH);
	unsetenv(PROBE_PROC_ROOT_ENV);
	tchild_fixture_remove(root);
}

/* ---- the unchanged-state test and whether it pays ---- */

static void two_readings(pid_t pid, int ms, struct probe_schedstat *a, struct probe_schedstat *b)
{
	struct probe_schedstat_file f;
	cr_assert_eq(probe_schedstat_open(&f, pid, pid), 0);
	cr_assert_eq(probe_schedstat_sample(&f, a), 0);
	usleep((useconds_t)ms * 1000);
	cr_assert_eq(probe_schedstat_sample(&f, b), 0);
	probe_schedstat_close(&f);
}

Test(probe_schedstat, a_parked_thread_is_unchanged_a_woken_one_is_not, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t pid = tchild_fork(tchild_park_pause, NULL);
	cr_assert_gt(pid, 0);
	usleep(50000);
	struct probe_schedstat a, b, c;
	two_readings(pid, 100, &a, &b);
	cr_expect(probe_schedstat_unchanged(&a, &b), "parked in pause: %llu/%llu then %llu/%llu",
		  (unsigned long long)a.timeslices, (unsigned long long)a.run_ns, (unsigned long long)b.timeslices,
		  (unsigned long long)b.run_ns);
	/* stopped and continued: it runs to stop, and again to go back into pause */
	kill(pid, SIGSTOP);
	usleep(20000);
	kill(pid, SIGCONT);
	usleep(50000);
	cr_assert_eq(probe_schedstat_read(pid, pid, &c), 0);
	cr_expect(!probe_schedstat_unchanged(&b, &c), "a thread put on a CPU in between has changed");
	tchild_reap(pid);

	pid = tchild_fork(tchild_park_busy, NULL);
	cr_assert_gt(pid, 0);
	two_readings(pid, 100, &a, &b);
	cr_expect(!probe_schedstat_unchanged(&a, &b), "a busy thread's CPU time moves");
	tchild_reap(pid);

	struct probe_schedstat none = { 0 };
	cr_expect(!probe_schedstat_unchanged(&none, &none), "no sched_info (pcount 0): never unchanged");
}

Test(probe_schedstat, the_check_pays_only_when_what_it_saves_exceeds_it, .timeout = PROBE_TEST_TIMEOUT)
{
	const uint64_t wall = 1000000000ull, ticks = 100;
	struct probe_schedstat a = { .run_ns = 1000, .timeslices = 10 };
	struct probe_schedstat idle = a, half = { .run_ns = 1000, .timeslices = 60 },
			       oncpu = { .run_ns = 1000 + wall * 6 / 10, .timeslices = 11 }, busy = { .run_ns = 1000, .timeslices = 110 };
	/* the costs measured here: 2.1 us a schedstat read, 5.6 us a syscall file */
	cr_expect(probe_schedstat_check_pays(2100, 5600, &a, &idle, ticks, wall), "an idle thread: it pays");
	cr_expect(!probe_schedstat_check_pays(5100, 5600, &a, &idle, ticks, wall), "a check nearly as dear as the read");
	cr_expect(probe_schedstat_check_pays(2100, 5600, &a, &half, ticks, wall), "woken at half the ticks: 2.8 us saved");
	cr_expect(!probe_schedstat_check_pays(3000, 5600, &a, &half, ticks, wall), "but not for 3 us");
	cr_expect(!probe_schedstat_check_pays(2100, 5600, &a, &oncpu, ticks, wall),
		  "on a CPU 60 %% of the time: 2.2 us saved, against 2.1 us and an eighth");
	cr_expect(!probe_schedstat_check_pays(100, 5600, &a, &busy, ticks, wall), "woken at every tick: never");
	cr_expect(!probe_schedstat_check_pays(0, 5600, &a, &idle, ticks, wall), "a cost not measured yet: no");
	cr_expect(!probe_schedstat_check_pays(2100, 0, &a, &idle, ticks, wall), "a cost not measured yet: no");
	cr_expect(!probe_schedstat_check_pays(2100, 5600, &a, &idle, 0, wall), "no ticks: nothing to judge on");
	struct probe_schedstat waited = { .run_ns = 1000, .wait_ns = wall / 100, .timeslices = 11 },
			       barely = { .run_ns = 1000, .wait_ns = wall / 1000, .timeslices = 11 };
	cr_expect(!probe_schedstat_check_pays(2100, 5600, &a, &waited, ticks, wall),
		  "a thread that waited 1 %% of the time for a CPU: its reuse could hide that wait, so no");
	cr_expect(probe_schedstat_check_pays(2100, 5600, &a, &barely, ticks, wall), "0.1 %%: within the bound");
	struct probe_schedstat none = { 0 };
	cr_expect(!probe_schedstat_check_pays(2100, 5600, &none, &none, ticks, wall), "no sched_info: no");
	cr_expect(!probe_schedstat_check_pays(2100, 5600, &busy, &a, ticks, wall), "counters that went back (a new thread): no");
}
