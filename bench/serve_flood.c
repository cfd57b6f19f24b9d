/*
 * serve_flood — `loopstat serve` under issue 35's connection flood, at its
 * full size: 4,100 slowloris and 10,000 idle connections from 50 loopback
 * addresses, each re-opened as soon as serve closes it, against serve run
 * with the systemd unit's open-file limit (8192). Ten scrapes of /metrics
 * with a 1-s deadline each, before the flood (the baseline, same run) and
 * during it.
 *
 *   figure serve_flood_scrapes_ok      scrapes answered within 1 s during the flood (of 10)
 *   figure serve_flood_slowest_ms      the slowest of them
 *   figure serve_flood_vs_quiet        median scrape during the flood over before it (x)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "support/flood.h"

#define SCRAPES 10

/* One GET /metrics on a new connection within 1 s: 1 when a 200 came. */
static int scrape(int port)
{
	int status;
	return bench_get(port, "/metrics", 1, &status) >= 0 && status == 200;
}

/* SCRAPES scrapes 300 ms apart: how many succeeded within 1 s, the median and slowest. */
static int round_of(int port, double *median, double *slowest)
{
	double t[SCRAPES];
	int ok = 0;
	for (int i = 0; i < SCRAPES; i++) {
		double t0 = bench_now_us();
		int good = scrape(port);
		t[i] = (bench_now_us() - t0) / 1e3;
		ok += good && t[i] <= 1000;
		usleep(300000);
	}
	qsort(t, SCRAPES, sizeof(t[0]), bench_cmp_double);
	*median = t[SCRAPES / 2];
	*slowest = t[SCRAPES - 1];
	return ok;
}

int main(int argc, char **argv)
{
	(void)argc;
	char build[512], bin[600];
	bench_build_dir(argv[0], build, sizeof(build));
	snprintf(bin, sizeof(bin), "%s/loopstat", build);
	struct rlimit rl, old;
	getrlimit(RLIMIT_NOFILE, &old);
	rl = old;
	rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;
	setrlimit(RLIMIT_NOFILE, &rl);
	/* the unit's limit for serve only: it is inherited at the fork */
	char *sargv[] = { bin, "serve", "--listen", "127.0.0.1:0", "--interval", "1", NULL };
	int port;
	pid_t serve = bench_serve_start(sargv, &port, "serve_flood");
	setrlimit(RLIMIT_NOFILE, &old);
	if (serve < 0)
		return 1;
	for (int i = 0; i < 100 && !scrape(port); i++)
		usleep(100000);
	double quiet_med, quiet_max, med, max;
	int quiet_ok = round_of(port, &quiet_med, &quiet_max);
	printf("quiet: %d of %d scrapes, median %.1f ms, slowest %.1f ms\n", quiet_ok, SCRAPES, quiet_med, quiet_max);
	struct flood f;
	struct flood_opts o = { .port = port, .slowloris = 4100, .idle = 10000, .addrs = 50 };
	if (flood_start(&f, &o) < 0) {
		fprintf(stderr, "serve_flood: the flood did not start\n");
		return 1;
	}
	int ok = round_of(port, &med, &max);
	unsigned open;
	unsigned long reopened;
	flood_status(&f, &open, &reopened);
	printf("flood: %d of %d scrapes, median %.1f ms, slowest %.1f ms; %u of 14100 connections open, %lu re-opened\n",
	       ok, SCRAPES, med, max, open, reopened);
	flood_stop(&f);
	kill(serve, SIGTERM);
	int st;
	waitpid(serve, &st, 0);
	printf("figure serve_flood_scrapes_ok %d of 10\n", ok);
	printf("figure serve_flood_slowest_ms %.0f ms\n", max);
	printf("figure serve_flood_vs_quiet %.2f x\n", med / quiet_med);
	return ok == SCRAPES ? 0 : 1;
}
