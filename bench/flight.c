/*
 * flight — the flight recorder's memory against its printed bound (issue
 * 39): `loopstat record --ring` over 100 epoll loops sampled at 100 Hz,
 * its peak RSS read from /proc every 200 ms, beside a recorder with a 1-s
 * ring over the same loops in the same run (the baseline: the sampler,
 * the unwinder, the tables of a ring that holds next to nothing). The
 * ring's share is the difference. The run is 10 minutes of a
 * 60-s ring (FLIGHT_RUN_S=600 FLIGHT_RING=60s in the environment); make
 * bench's is scaled to 45 s of a 30-s ring (the ring is full after its
 * span + 2 s: a longer run only turns it over), once with the default
 * bound and once with a bound the ring fills first (it then holds less
 * than its span and evicts the oldest).
 *
 *   figure flight_bound_mb           the bound the recorder printed (default --ring-bytes)
 *   figure flight_ring_rss_mb        peak RSS over the baseline's
 *   figure flight_rss_vs_bound       that over the bound (<= 1)
 *   figure flight_small_bound_mb     the bound of --ring-bytes 32M
 *   figure flight_small_rss_vs_bound its ring's RSS over that bound (<= 1)
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "support/proc_rss.h"

#define LOOPS 100

static const char *ring_span = "30s";
static int run_s = 45;

static void *loop(void *arg)
{
	(void)arg;
	int ep = epoll_create1(0), p[2];
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || pipe(p) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0)
		return NULL;
	for (;;) {
		epoll_wait(ep, &ev, 1, 20);
		volatile double x = 1;
		for (int i = 0; i < 2000; i++)
			x = x * 1.0000001;
	}
	return NULL;
}

static pid_t spawn_loops(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pthread_t t;
		for (int i = 0; i < LOOPS; i++)
			pthread_create(&t, NULL, loop, NULL);
		for (;;)
			pause();
	}
	return pid;
}

struct rec {
	pid_t pid;
	int   out;
	long  peak_kb;
	double bound_mb;
};

static void start(struct rec *r, const char *bin, pid_t target, const char *ring, const char *bytes, const char *dir)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)target);
	char dur[16];
	snprintf(dur, sizeof(dur), "%d", run_s);
	char *argv[] = { (char *)bin, "record", "-p", p, "-r", "100", "--ring", (char *)ring, "--ring-bytes",
			 (char *)bytes, "--duration", dur, "-o", (char *)dir, NULL };
	r->pid = bench_spawn(argv, NULL, &r->out);
	r->peak_kb = 0;
}

static void finish(struct rec *r)
{
	char buf[4096];
	bench_slurp(r->out, buf, sizeof(buf));
	int st;
	waitpid(r->pid, &st, 0);
	const char *b = strstr(buf, "bound ");
	double bytes = 0;
	if (b)
		sscanf(b, "bound %lf bytes", &bytes);
	r->bound_mb = bytes / (1 << 20);
	printf("%s", buf);
}

int main(int argc, char **argv)
{
	(void)argc;
	const char *e = getenv("FLIGHT_RUN_S");
	if (e && atoi(e) > 0)
		run_s = atoi(e);
	if ((e = getenv("FLIGHT_RING")) && *e)
		ring_span = e;
	char build[512], bin[600];
	bench_build_dir(argv[0], build, sizeof(build));
	snprintf(bin, sizeof(bin), "%s/loopstat", build);
	char dir[] = "/tmp/loopstat-bench-flight-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	pid_t loops = spawn_loops();
	sleep(1);
	struct rec full, small, base;
	char d1[600], d2[600], d3[600];
	snprintf(d1, sizeof(d1), "%s/full", dir);
	snprintf(d2, sizeof(d2), "%s/small", dir);
	snprintf(d3, sizeof(d3), "%s/base", dir);
	start(&full, bin, loops, ring_span, "256M", d1);
	start(&small, bin, loops, ring_span, "32M", d2);
	start(&base, bin, loops, "1s", "8M", d3);
	struct rec *all[] = { &full, &small, &base };
	for (int t = 0; t < run_s * 5; t++) {
		usleep(200000);
		for (int i = 0; i < 3; i++) {
			long kb = proc_rss_kb(all[i]->pid);
			if (kb > all[i]->peak_kb)
				all[i]->peak_kb = kb;
		}
	}
	for (int i = 0; i < 3; i++)
		finish(all[i]);
	kill(loops, SIGKILL);
	waitpid(loops, NULL, 0);
	char rm[700];
	snprintf(rm, sizeof(rm), "rm -rf %s", dir);
	if (system(rm) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	double ring_full = (double)(full.peak_kb - base.peak_kb) / 1024, ring_small = (double)(small.peak_kb - base.peak_kb) / 1024;
	printf("peak RSS: %.1f MB (ring %s, bound %.1f MB), %.1f MB (bound %.1f MB), baseline %.1f MB (1-s ring)\n",
	       full.peak_kb / 1024.0, ring_span, full.bound_mb, small.peak_kb / 1024.0, small.bound_mb,
	       base.peak_kb / 1024.0);
	printf("%d loops at 100 Hz for %d s with a %s ring\n", LOOPS, run_s, ring_span);
	printf("figure flight_bound_mb %.1f MB\n", full.bound_mb);
	printf("figure flight_ring_rss_mb %.1f MB\n", ring_full);
	printf("figure flight_rss_vs_bound %.3f x\n", full.bound_mb > 0 ? ring_full / full.bound_mb : 0);
	printf("figure flight_small_bound_mb %.1f MB\n", small.bound_mb);
	printf("figure flight_small_rss_vs_bound %.3f x\n", small.bound_mb > 0 ? ring_small / small.bound_mb : 0);
	return 0;
}
