/*
 * serve_scrape — what a Prometheus scrape of `loopstat serve` costs, through
 * the real binary over loopback: 8 instrumented workers (examples/counters),
 * serve publishing every second, then 300 scrapes of /metrics, each on a new
 * connection as a scraper without keep-alive makes them, against 300 of
 * /healthz (a few bytes, the same HTTP path: the baseline measured in the
 * same run), then again with 1000 connections held open that never send.
 *
 *   figure serve_scrape_us                 median /metrics scrape, microseconds
 *   figure serve_scrape_vs_healthz         its ratio to the /healthz median (x)
 *   figure serve_scrape_slowdown_1000_idle median with 1000 idle clients over without (x)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define WORKERS 8
#define SCRAPES 300
#define IDLE_CLIENTS 1000

/* Median microseconds of SCRAPES GETs of path; *bytes gets a response's size. */
static double median_us(int port, const char *path, long *bytes)
{
	static double t[SCRAPES];
	for (int i = 0; i < SCRAPES; i++) {
		int status;
		double t0 = bench_now_us();
		*bytes = bench_get(port, path, 0, &status);
		t[i] = bench_now_us() - t0;
		if (*bytes < 0 || status != 200) {
			fprintf(stderr, "serve_scrape: GET %s: status %d\n", path, status);
			exit(1);
		}
	}
	qsort(t, SCRAPES, sizeof(t[0]), bench_cmp_double);
	printf("%-9s median %.0f us, p90 %.0f us, max %.0f us, %ld bytes\n", path, t[SCRAPES / 2], t[SCRAPES * 9 / 10],
	       t[SCRAPES - 1], *bytes);
	return t[SCRAPES / 2];
}

int main(int argc, char **argv)
{
	(void)argc;
	char build[512], bin[600], ex[600], pids[WORKERS * 12] = "";
	bench_build_dir(argv[0], build, sizeof(build));
	snprintf(bin, sizeof(bin), "%s/loopstat", build);
	snprintf(ex, sizeof(ex), "%s/examples/counters", build);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);

	pid_t workers[WORKERS];
	for (int i = 0; i < WORKERS; i++) {
		char *wargv[] = { ex, "-s", "120", "-b", "10", NULL };
		workers[i] = bench_spawn_quiet(wargv, -1);
		snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%d", i ? "," : "", (int)workers[i]);
	}
	usleep(300000);
	char *sargv[] = { bin, "serve", "--listen", "127.0.0.1:0", "--interval", "1", "-p", pids, NULL };
	int port;
	pid_t serve = bench_serve_start(sargv, &port, "serve_scrape");
	if (serve < 0)
		return 1;
	int status = 0;
	for (int i = 0; i < 100 && (bench_get(port, "/metrics", 0, &status), status != 200); i++)
		usleep(50000);
	usleep(1100000);   /* every worker in the window */

	long bytes;
	double health = median_us(port, "/healthz", &bytes);
	double metrics = median_us(port, "/metrics", &bytes);
	static int idle[IDLE_CLIENTS];
	int held = 0;
	for (int i = 0; i < IDLE_CLIENTS; i++)
		held += (idle[i] = bench_connect(port, 0)) >= 0;
	usleep(200000);
	printf("%d idle connections held\n", held);
	double crowded = median_us(port, "/metrics", &bytes);
	for (int i = 0; i < IDLE_CLIENTS; i++)
		if (idle[i] >= 0)
			close(idle[i]);

	kill(serve, SIGTERM);
	int st;
	waitpid(serve, &st, 0);
	for (int i = 0; i < WORKERS; i++) {
		kill(workers[i], SIGTERM);
		waitpid(workers[i], NULL, 0);
	}
	printf("figure serve_scrape_us %.0f us\n", metrics);
	printf("figure serve_scrape_vs_healthz %.2f x\n", metrics / health);
	printf("figure serve_scrape_slowdown_1000_idle %.2f x\n", crowded / metrics);
	return held == IDLE_CLIENTS && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
