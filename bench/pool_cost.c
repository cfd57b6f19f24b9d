/*
 * pool_cost.c — what following a helper pool of 64 threads costs the
 * monitor's sampler, against what one loop thread costs it.
 *
 * Four targets, each sampled alone by the monitor's own sampler
 * (monitor/collect/sampler.c at 100 Hz, all its duties), its CPU% of a core
 * from getrusage over SECONDS after a warm-up, REPS times interleaved so
 * that the host's load hits all alike, medians kept:
 *   none      a -p target that does not exist: the sampler's own ticks
 *   loops     LOOP_N plain epoll loop threads in one process (uninstrumented,
 *             each a worker sampled at the loop rate): LOOP_N times the
 *             cost of one, so that one stands out of the noise
 *   instr     POOL_PROCS libfiberloop loops, one a process, no other thread
 *   instr+64  the same beside 64 pthreads each waiting on one condvar, a
 *             pool (sampler_pools.c samples them at its lower rate; an
 *             instrumented process's other threads are not loop workers,
 *             so the pool module is all that reads them)
 * One loop thread costs (loops − none) / LOOP_N; a pool ((instr+64) −
 * instr) / POOL_PROCS; each the median of the differences within a rep
 * (the cases of a rep run one after another, so they share its load).
 * Headline: figure pool64_cost_vs_one_loop (issue 27: at most 2 x).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fiberloop.h"
#include "collect/sampler.h"
#include "collect/targets.h"

#define HZ        100
#define SECONDS   4
#define WARMUP_S  2
#define REPS      5
#define POOL_N    64
#define LOOP_N    16
#define POOL_PROCS 4

enum { NONE, LOOPS, INSTR, INSTR_POOL, NCASES };
static const char *const names[NCASES] = { "none", "loops", "instr", "instr+64" };

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;

static void *pool_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&never, &lock);
	return NULL;
}

static void *epoll_thread(void *arg)
{
	(void)arg;
	int ep = epoll_create1(0);
	struct epoll_event ev;
	for (;;)
		epoll_wait(ep, &ev, 1, -1);
	return NULL;
}

static void *idle_main(void *arg)
{
	(void)arg;
	fl_sleep(3600);
	return NULL;
}

/* A child: nloops plain epoll loops, or a libfiberloop loop with npool pool threads. */
static pid_t spawn(int instrumented, int n)
{
	pid_t parent = getpid(), pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (int i = instrumented ? 0 : 1; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, &a, instrumented ? pool_thread : epoll_thread, NULL) != 0)
			_exit(1);
	}
	if (!instrumented)
		epoll_thread(NULL);
	_exit(fl_run(idle_main, NULL, NULL, NULL) == 0 ? 0 : 1);
}

/* The sampler on n target pids: its CPU% of a core. */
static double measure(const pid_t *pid, int n)
{
	static struct targets t;
	targets_init(&t);
	for (int i = 0; i < n; i++)
		t.pids[t.npids++] = pid[i];
	struct sampler_opts o = { .rate_hz = HZ, .targets = &t };
	struct sampler *s;
	if (sampler_new(&o, &s) < 0 || sampler_start(s) < 0) {
		fprintf(stderr, "pool_cost: cannot start the sampler\n");
		exit(1);
	}
	sleep(WARMUP_S);
	double w0 = now_s(), c0 = cpu_s();
	sleep(SECONDS);
	double pct = 100.0 * (cpu_s() - c0) / (now_s() - w0);
	sampler_delete(s);
	targets_done(&t);
	return pct;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	pid_t pid[NCASES][POOL_PROCS] = { { 0x3fffffff }, { spawn(0, LOOP_N) } };
	int npid[NCASES] = { 1, 1, POOL_PROCS, POOL_PROCS };
	for (int i = 0; i < POOL_PROCS; i++) {
		pid[INSTR][i] = spawn(1, 0);
		pid[INSTR_POOL][i] = spawn(1, POOL_N);
	}
	double v[NCASES][REPS], loop_d[REPS], pool_d[REPS];
	sleep(1);   /* the loops up, their segments published */
	for (int r = 0; r < REPS; r++) {
		for (int c = 0; c < NCASES; c++) {
			v[c][r] = measure(pid[c], npid[c]);
			printf("rep %d %-9s %.3f %%\n", r, names[c], v[c][r]);
			fflush(stdout);
		}
		loop_d[r] = (v[LOOPS][r] - v[NONE][r]) / LOOP_N;
		pool_d[r] = (v[INSTR_POOL][r] - v[INSTR][r]) / POOL_PROCS;
	}
	for (int c = 0; c < NCASES; c++) {
		qsort(v[c], REPS, sizeof(double), cmp_double);
		printf("median %-9s %.3f %% of a core\n", names[c], v[c][REPS / 2]);
	}
	for (int c = 1; c < NCASES; c++)
		for (int i = 0; i < npid[c]; i++)
			kill(pid[c][i], SIGKILL);
	while (wait(NULL) > 0)
		;
	qsort(loop_d, REPS, sizeof(double), cmp_double);
	qsort(pool_d, REPS, sizeof(double), cmp_double);
	double loop = loop_d[REPS / 2], pool = pool_d[REPS / 2];
	printf("one loop thread %.3f %%, a pool of %d threads %.3f %%\n", loop, POOL_N, pool);
	if (!(loop > 0)) {
		/* no baseline: a ratio against it would be a made-up figure */
		printf("one loop thread measured %.3f %%: no baseline, no figure\n", loop);
		return 1;
	}
	printf("figure pool64_cpu_pct_100hz %.3f %%\n", pool);
	printf("figure one_loop_cpu_pct_100hz %.3f %%\n", loop);
	printf("figure pool64_cost_vs_one_loop %.2f x\n", pool / loop);
	return 0;
}
