/*
 * probe_sample.c — cost of one syscall-probe sample (pread + parse +
 * probe_loop_classify, the sampler's path) against a bare pread of the same
 * file, in the same run, for a sleeping target (in epoll_wait), a running
 * one (busy loop), a poll-family one (poll on a pipe: its fds are read from
 * memory once per key, then one fstat of the fd directory per sample), and
 * a mixed fleet of those plus an EventMachine-style select on an epoll fd,
 * sampled in turn.
 *
 * The loops alternate in rounds so that machine noise hits both alike;
 * each ratio is the median over rounds of the per-round ratio. The figure
 * is the mixed fleet's; the single targets' ratios are raw figures.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <poll.h>
#include <sys/select.h>

#include "probe_classify.h"
#include "probe_loop.h"
#include "probe_syscall.h"

#define ROUNDS 15
#define ITERS  20000

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

enum target { EPOLL, BUSY, POLL, SELECT };

static pid_t spawn(enum target kind)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		int ep = epoll_create1(0), pp[2];
		struct epoll_event ev;
		if (pipe(pp) < 0 || write(fds[1], "r", 1) != 1)
			_exit(1);
		if (kind == BUSY)
			for (volatile unsigned long i = 0;; i++)
				;
		if (kind == POLL) {
			struct pollfd p = { .fd = pp[0], .events = POLLIN };
			for (;;)
				poll(&p, 1, -1);
		}
		if (kind == SELECT) {
			for (;;) {
				fd_set rd;
				FD_ZERO(&rd);
				FD_SET(ep, &rd);
				select(ep + 1, &rd, NULL, NULL, NULL);
			}
		}
		for (;;)
			epoll_wait(ep, &ev, 1, -1);
	}
	close(fds[1]);
	char c;
	if (pid < 0 || read(fds[0], &c, 1) != 1)
		pid = -1;
	close(fds[0]);
	return pid;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Samples n targets in turn; returns the median ratio, prints the raw figures. */
static double measure(const char *label, const pid_t *pid, int n, int old_path)
{
	struct probe_syscall p[8];
	struct probe_loop loop[8];
	struct probe_sc_sample s;
	struct probe_verdict v;
	char buf[256];
	double pread_ns[ROUNDS], sample_ns[ROUNDS], ratio[ROUNDS];
	unsigned long resampled = 0, total = 0;

	for (int t = 0; t < n; t++) {
		if (probe_syscall_open(&p[t], pid[t], pid[t]) < 0) {
			fprintf(stderr, "probe_sample: open: %s\n", strerror(-p[t].err));
			exit(1);
		}
		probe_loop_init(&loop[t], pid[t], pid[t]);
	}
	usleep(100000); /* let the targets settle into their state */
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_ns();
		for (int i = 0; i < ITERS; i++)
			if (pread(p[i % n].fd, buf, sizeof(buf), 0) <= 0)
				abort();
		double t1 = now_ns();
		for (int i = 0; i < ITERS; i++) {
			int t = i % n;
			if (probe_syscall_sample(&p[t], &s) < 0)
				abort();
			if (old_path)
				probe_classify(&s, -1, &v); /* the path before issue 17 */
			else
				resampled += probe_loop_classify(&loop[t], &s, -1, &v) == -EAGAIN;
			total++;
		}
		double t2 = now_ns();
		pread_ns[r] = (t1 - t0) / ITERS;
		sample_ns[r] = (t2 - t1) / ITERS;
		ratio[r] = sample_ns[r] / pread_ns[r];
	}
	uint64_t reads = 0, hits = 0;
	for (int t = 0; t < n; t++) {
		reads += loop[t].key_reads;
		hits += loop[t].key_hits;
		probe_loop_done(&loop[t]);
		probe_syscall_close(&p[t]);
	}
	double mp = median(pread_ns, ROUNDS), ms = median(sample_ns, ROUNDS), mr = median(ratio, ROUNDS);
	printf("%s: pread %.0f ns, sample+classify %.0f ns, ratio %.3f (median of %d rounds x %d), "
	       "fd-set reads %llu, key hits %llu, resampled %lu of %lu\n", label, mp, ms, mr, ROUNDS, ITERS,
	       (unsigned long long)reads, (unsigned long long)hits, resampled, total);
	return mr;
}

int main(void)
{
	pid_t t[4];
	for (int i = 0; i < 4; i++)
		if ((t[i] = spawn((enum target)i)) < 0) {
			fprintf(stderr, "probe_sample: cannot start targets\n");
			return 1;
		}
	double r_sleep = measure("sleeping target (epoll_wait)", &t[EPOLL], 1, 0);
	double r_run = measure("running target (busy loop)", &t[BUSY], 1, 0);
	double r_poll = measure("poll-family target (poll on a pipe)", &t[POLL], 1, 0);
	double r_mixed = measure("mixed fleet (epoll_wait, busy, poll, select on epoll fd)", t, 4, 0);
	double r_old = measure("mixed fleet, probe_classify only (before issue 17)", t, 4, 1);
	for (int i = 0; i < 4; i++) {
		kill(t[i], SIGKILL);
		waitpid(t[i], NULL, 0);
	}
	printf("ratio sleeping %.3f, running %.3f, poll-family %.3f, mixed %.3f, mixed with probe_classify %.3f\n",
	       r_sleep, r_run, r_poll, r_mixed, r_old);
	printf("raw poll_sample_cost_vs_pread %.2f x\n", r_poll);
	printf("figure sample_cost_vs_pread %.2f x\n", r_mixed);
	return 0;
}
