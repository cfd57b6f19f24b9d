/* The bpf source's cost: the host's other syscalls run no program, no tracefs mount is left behind, and the raw fallback counts a loop's waits as exactly. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_bpf.h"
#include "support/children.h"
#include "support/support.h"

TestSuite(bpf_cost, .timeout = 60);

static struct probe_bpf *open_or_skip(void)
{
	char why[256];
	struct probe_bpf *b = NULL;
	if (probe_bpf_open(&b, why, sizeof(why)) < 0)
		cr_skip_test("bpf unavailable: %s", why);
	return b;
}

#define CALLS 200000

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The programs' runs (host-wide) over CALLS getppid() of this process,
 * which no program watches, into *calls, and over as long asleep right
 * after into *asleep: what the host ran meanwhile. */
static void runs_over_calls(struct probe_bpf *b, int64_t *calls, int64_t *asleep)
{
	uint64_t ns, r0, r1, r2;
	cr_assert_eq(probe_bpf_kernel_ns(b, &ns, &r0), 0);   /* switches the statistics on */
	cr_assert_eq(probe_bpf_kernel_ns(b, &ns, &r0), 0);
	uint64_t t0 = now_ns();
	for (int i = 0; i < CALLS; i++)
		syscall(SYS_getppid);
	uint64_t took = now_ns() - t0;
	cr_assert_eq(probe_bpf_kernel_ns(b, &ns, &r1), 0);
	usleep((useconds_t)(took / 1000));
	cr_assert_eq(probe_bpf_kernel_ns(b, &ns, &r2), 0);
	*calls = (int64_t)(r1 - r0);
	*asleep = (int64_t)(r2 - r1);
}

/* A syscall outside the poll family and close runs no program: over the
 * calls the programs run about as often as over the same time asleep
 * (the least of 3 tries: a burst of the host's polls or switches, this
 * suite's other tests among them, may fall in one). */
Test(bpf_cost, other_syscalls_run_no_program)
{
	unsetenv("LOOPSTAT_BPF_RAW");
	struct probe_bpf *b = open_or_skip();
	int64_t calls, asleep, least = INT64_MAX, least_calls = 0, least_asleep = 0;
	for (int i = 0; i < 3; i++) {
		runs_over_calls(b, &calls, &asleep);
		if (calls - asleep < least) {
			least = calls - asleep;
			least_calls = calls;
			least_asleep = asleep;
		}
	}
	cr_expect_lt(least, CALLS / 20, "%ld program runs over %d getppid calls, %ld over as long asleep",
		     (long)least_calls, CALLS, (long)least_asleep);
	probe_bpf_close(b);
}

/* The fallback (no syscall tracepoints) runs its programs at every
 * syscall: the same count sees two a call, so the test above can fail.
 * (Only a floor: its programs also run at the other tests' syscalls.) */
Test(bpf_cost, raw_fallback_runs_at_every_syscall)
{
	setenv("LOOPSTAT_BPF_RAW", "1", 1);
	struct probe_bpf *b = open_or_skip();
	int64_t calls, asleep;
	runs_over_calls(b, &calls, &asleep);
	cr_expect_geq(calls, 2 * (int64_t)CALLS, "%ld program runs over %d getppid calls", (long)calls, CALLS);
	probe_bpf_close(b);
}

static int tracefs_mounts(void)
{
	char *s = ts_read_file("/proc/self/mountinfo");
	cr_assert(s, "/proc/self/mountinfo");
	int n = 0;
	for (const char *p = s; (p = strstr(p, " - tracefs ")) != NULL; p++)
		n++;
	free(s);
	return n;
}

/* The tracepoints' ids are read under a private mount: none is left on
 * the host, and the programs still load and close cleanly. */
Test(bpf_cost, no_tracefs_mount_left)
{
	unsetenv("LOOPSTAT_BPF_RAW");
	int before = tracefs_mounts();
	struct probe_bpf *b = open_or_skip();
	cr_expect_eq(tracefs_mounts(), before, "a tracefs mount was left behind");
	probe_bpf_close(b);
}

#define WAITS 50000

/* An epoll loop whose eventfd is always ready, WAITS waits of one event
 * each, watched from before its first: waits, returns and events exact,
 * and a span between each two. */
static void exact_waits(void)
{
	struct probe_bpf *b = open_or_skip();
	int go[2];
	cr_assert_eq(pipe(go), 0);
	pid_t pid = tc_fork();
	if (pid == 0) {
		char c;
		int ep = epoll_create1(0), e = eventfd(1, 0);
		struct epoll_event ev = { .events = EPOLLIN };
		if (read(go[0], &c, 1) != 1 || ep < 0 || e < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, e, &ev) < 0)
			_exit(1);
		for (int i = 0; i < WAITS; i++)
			if (epoll_wait(ep, &ev, 1, -1) != 1)
				_exit(2);
		_exit(0);
	}
	cr_assert_eq(probe_bpf_watch(b, pid), 0);
	cr_assert_eq(write(go[1], "x", 1), 1);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the loop failed: %d", st);
	struct probe_bpf_thread t[4];
	int n = probe_bpf_read(b, pid, t, 4);
	cr_assert_eq(n, 1, "%d threads read", n);
	cr_expect_eq(t[0].loop, PROBE_BPF_LOOP_EPOLL);
	cr_expect_eq(t[0].poll_waits, WAITS);
	cr_expect_eq(t[0].poll_returns, WAITS);
	cr_expect_eq(t[0].poll_events, WAITS);
	cr_expect_eq(t[0].spans, WAITS - 1);
	close(go[0]);
	close(go[1]);
	probe_bpf_close(b);
}

Test(bpf_cost, syscall_tracepoints_count_exactly)
{
	unsetenv("LOOPSTAT_BPF_RAW");
	exact_waits();
}

Test(bpf_cost, raw_fallback_counts_exactly)
{
	setenv("LOOPSTAT_BPF_RAW", "1", 1);
	exact_waits();
}
