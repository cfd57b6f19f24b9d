/*
 * discover.c — what finding the host's loops costs (make bench B=discover).
 *
 * Builds a host of 10,000 threads that are no loops (20 processes of 500
 * threads asleep in nanosleep or a futex) and 100 loop threads (50 processes
 * with one thread in epoll_wait, 5 with ten), then runs `loopstat list` as a
 * user would: by default (the sweep finds the loops), and, the baseline in
 * the same run, with the 55 loop processes named by -p (every thread of
 * theirs sampled, no sweep). Each for 10 s and 20 s: the difference of
 * their CPU over 10 s is the steady state, the 10-s run's all of it
 * (start-up included). Also checks that the sweep found all 100 loops.
 *
 *   figure discover_cpu_pct_10k_threads_100_loops   steady CPU % of a core (goal <= 3)
 *   figure discover_list_10s_cpu_pct                a 10-s list, start-up included (goal <= 5)
 *   figure discover_vs_named_steady                 steady CPU against -p of the same loops
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLEEPER_PROCS   20
#define SLEEPER_THREADS 500     /* each: 10,000 in all */
#define LOOP_SINGLES    50
#define LOOP_MULTI      5
#define LOOP_MULTI_N    10      /* 50 + 5 x 10 = 100 loop threads */

static pid_t kids[SLEEPER_PROCS + LOOP_SINGLES + LOOP_MULTI];
static int nkids;

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *looper(void *arg)
{
	(void)arg;
	int ep = epoll_create1(0), p[2];
	if (ep < 0 || pipe(p) < 0)
		return NULL;
	struct epoll_event ev = { .events = EPOLLIN }, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
	for (;;)
		epoll_wait(ep, &out, 1, -1);
	return NULL;
}

/* A child with n threads running fn (the main thread one of them). */
static pid_t spawn(int n, void *(*fn)(void *))
{
	pid_t pid = fork();
	if (pid != 0)
		return kids[nkids++] = pid;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN + 16384);
	for (int i = 1; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, &a, fn, NULL) != 0)
			_exit(1);
	}
	fn(NULL);
	_exit(0);
}

/* CPU seconds of `loopstat list --duration d ARGS`, and how many of the
 * workers it lists are this bench's loops; NaN when list failed (its exit
 * status, kept through the shell) or its output could not be read. */
static double run_list(const char *bin, double d, const char *pids, int *workers)
{
	char cmd[16384];
	snprintf(cmd, sizeof(cmd), "%s list --duration %g %s%s > /tmp/loopstat-discover.$$ 2>/tmp/loopstat-discover.err; "
		 "rc=$?; awk '$3 == \"discover\"' /tmp/loopstat-discover.$$ | wc -l; rm -f /tmp/loopstat-discover.$$; "
		 "exit $rc",
		 bin, d, pids ? "-p " : "", pids ? pids : "");
	struct rusage r0, r1;
	getrusage(RUSAGE_CHILDREN, &r0);
	FILE *f = popen(cmd, "r");
	if (!f || fscanf(f, "%d", workers) != 1)
		*workers = -1;
	int st = f ? pclose(f) : -1;
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || *workers < 0) {
		fprintf(stderr, "discover: %s list --duration %g failed (status 0x%x; see /tmp/loopstat-discover.err)\n",
			bin, d, st);
		return NAN;
	}
	getrusage(RUSAGE_CHILDREN, &r1);
	double u = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6;
	double s = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
	return u + s;
}

int main(void)
{
	const char *bin = getenv("LOOPSTAT_BIN") ? getenv("LOOPSTAT_BIN") : "build/loopstat";
	unsetenv("LOOPSTAT_DISCOVER");
	static char pids[8192];
	size_t len = 0;
	for (int i = 0; i < SLEEPER_PROCS; i++)
		spawn(SLEEPER_THREADS, sleeper);
	for (int i = 0; i < LOOP_SINGLES + LOOP_MULTI; i++) {
		pid_t p = spawn(i < LOOP_SINGLES ? 1 : LOOP_MULTI_N, looper);
		len += (size_t)snprintf(pids + len, sizeof(pids) - len, "%s%d", len ? "," : "", (int)p);
	}
	sleep(2); /* every thread started and parked */

	int w10, w20, n10, n20;
	double d10 = run_list(bin, 10, NULL, &w10);
	double d20 = run_list(bin, 20, NULL, &w20);
	double p10 = run_list(bin, 10, pids, &n10);
	double p20 = run_list(bin, 20, pids, &n20);
	double steady = (d20 - d10) / 10 * 100, named = (p20 - p10) / 10 * 100;
	int loops = LOOP_SINGLES + LOOP_MULTI * LOOP_MULTI_N;
	/* a list that failed, or missed the loops it is timed on, measured
	 * something else: no figure */
	int failed = isnan(d10) || isnan(d20) || isnan(p10) || isnan(p20) || w10 < loops || w20 < loops ||
		     n10 < loops || n20 < loops || !(named > 0);
	printf("host: %d threads asleep in %d processes, %d loop threads in %d processes\n",
	       SLEEPER_PROCS * SLEEPER_THREADS, SLEEPER_PROCS, LOOP_SINGLES + LOOP_MULTI * LOOP_MULTI_N,
	       LOOP_SINGLES + LOOP_MULTI);
	printf("default list: %d of the bench's loop threads found; 10 s: %.2f s CPU, "
	       "20 s: %.2f s CPU\n", w10, d10, d20);
	printf("-p the loop processes: %d workers; 10 s: %.2f s CPU, 20 s: %.2f s CPU\n", n10, p10, p20);
	if (failed) {
		printf("a list failed or missed the bench's %d loop threads (found %d, %d, %d, %d): no figure\n", loops,
		       w10, w20, n10, n20);
	} else {
		printf("figure discover_cpu_pct_10k_threads_100_loops %.2f %%\n", steady);
		printf("figure discover_list_10s_cpu_pct %.2f %%\n", d10 / 10 * 100);
		printf("figure discover_vs_named_steady %.2f x\n", steady / named);
	}
	for (int i = 0; i < nkids; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	return failed;
}
