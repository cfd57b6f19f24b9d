/*
 * children.c — child processes with known behaviour for sampler tests.
 */
#include "children.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die_with_parent(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static void epoll_cycle(double idle_frac, double seconds, int out)
{
	const uint64_t period = 10 * 1000 * 1000;
	int ep = epoll_create1(0);
	struct epoll_event ev;
	uint64_t start = now_ns(), idle = 0, end = start + (uint64_t)(seconds * 1e9);
	uint64_t next = start;
	while (now_ns() < end) {
		uint64_t busy_until = next + (uint64_t)((1.0 - idle_frac) * (double)period);
		next += period;
		while (now_ns() < busy_until)
			;
		for (;;) {
			uint64_t t0 = now_ns();
			if (t0 >= next)
				break;
			/* epoll_wait's timeout is in ms; the remainder is waited in
			 * the next call, so the loop stays in epoll_wait throughout */
			int ms = (int)((next - t0 + 999999) / 1000000);
			epoll_wait(ep, &ev, 1, ms > 1 ? ms - 1 : 1);
			idle += now_ns() - t0;
		}
	}
	double frac = (double)idle / (double)(now_ns() - start);
	if (write(out, &frac, sizeof(frac)) != sizeof(frac))
		_exit(1);
	_exit(0);
}

pid_t tc_spawn_epoll_cycle(double idle_frac, double seconds, int *report_fd)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		die_with_parent();
		close(p[0]);
		epoll_cycle(idle_frac, seconds, p[1]);
	}
	close(p[1]);
	*report_fd = p[0];
	return pid;
}

/* Returns once the child sits in syscall nr (bounded: fails the test after 5 s). */
static void wait_in_syscall(pid_t pid, long nr)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		long got = -2;
		if (f) {
			if (fgets(buf, sizeof(buf), f))
				got = strtol(buf, NULL, 10);
			fclose(f);
		}
		if (got == nr && strncmp(buf, "running", 7) != 0)
			return;
		usleep(10000);
	}
	cr_assert_fail("child %d never entered syscall %ld", (int)pid, nr);
}

pid_t tc_spawn_blocked_read(int *pipe_fd_in_child, int *write_end)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		die_with_parent();
		char c;
		close(p[1]);
		for (;;)
			if (read(p[0], &c, 1) <= 0)
				pause();
	}
	*pipe_fd_in_child = p[0];
	close(p[0]);
	wait_in_syscall(pid, SYS_read);
	*write_end = p[1]; /* kept open so that the child's read blocks */
	return pid;
}

void tc_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
