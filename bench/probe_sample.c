/*
 * probe_sample.c — cost of one syscall-probe sample (pread + parse +
 * classify) against a bare pread of the same file, in the same run, for a
 * sleeping target (in epoll_wait) and a running one (busy loop).
 *
 * The two loops alternate in rounds so that machine noise hits both alike;
 * the figure is the median over rounds of the per-round ratio, the worse
 * of the two targets.
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

#include "probe_classify.h"
#include "probe_syscall.h"

#define ROUNDS 15
#define ITERS  20000

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pid_t spawn(int busy)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		int ep = epoll_create1(0);
		struct epoll_event ev;
		if (write(fds[1], "r", 1) != 1)
			_exit(1);
		if (busy)
			for (volatile unsigned long i = 0;; i++)
				;
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

/* Returns the median ratio; prints the raw figures. */
static double measure(const char *label, pid_t pid, enum probe_sc_state want)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	char buf[256];
	double pread_ns[ROUNDS], sample_ns[ROUNDS], ratio[ROUNDS];
	unsigned long matched = 0, total = 0;

	if (probe_syscall_open(&p, pid, pid) < 0) {
		fprintf(stderr, "probe_sample: open: %s\n", strerror(-p.err));
		exit(1);
	}
	/* let the target settle into its state */
	for (int i = 0; i < 5000 && (probe_syscall_sample(&p, &s) < 0 || s.state != want); i++)
		usleep(100);
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_ns();
		for (int i = 0; i < ITERS; i++)
			if (pread(p.fd, buf, sizeof(buf), 0) <= 0)
				abort();
		double t1 = now_ns();
		for (int i = 0; i < ITERS; i++) {
			if (probe_syscall_sample(&p, &s) < 0)
				abort();
			probe_classify(&s, -1, &v);
			matched += s.state == want;
			total++;
		}
		double t2 = now_ns();
		pread_ns[r] = (t1 - t0) / ITERS;
		sample_ns[r] = (t2 - t1) / ITERS;
		ratio[r] = sample_ns[r] / pread_ns[r];
	}
	probe_syscall_close(&p);
	double mp = median(pread_ns, ROUNDS), ms = median(sample_ns, ROUNDS), mr = median(ratio, ROUNDS);
	printf("%s: pread %.0f ns, sample+classify %.0f ns, ratio %.3f (median of %d rounds x %d), "
	       "in expected state %.1f%%\n", label, mp, ms, mr, ROUNDS, ITERS, 100.0 * matched / total);
	return mr;
}

int main(void)
{
	pid_t sleeping = spawn(0), running = spawn(1);
	if (sleeping < 0 || running < 0) {
		fprintf(stderr, "probe_sample: cannot start targets\n");
		return 1;
	}
	double r_sleep = measure("sleeping target (epoll_wait)", sleeping, PROBE_SC_IN_SYSCALL);
	double r_run = measure("running target (busy loop)", running, PROBE_SC_RUNNING);
	kill(sleeping, SIGKILL);
	kill(running, SIGKILL);
	waitpid(sleeping, NULL, 0);
	waitpid(running, NULL, 0);
	printf("ratio sleeping %.3f, running %.3f\n", r_sleep, r_run);
	printf("figure sample_cost_vs_pread %.2f x\n", r_sleep > r_run ? r_sleep : r_run);
	return 0;
}
