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
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "support/flood.h"

#define SCRAPES 10

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One GET /metrics on a new connection within 1 s: 1 when a 200 came. */
static int scrape(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return 0;
	}
	const char *req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	int status = 0;
	char buf[1 << 16];
	ssize_t k;
	long total = 0;
	if (write(fd, req, strlen(req)) == (ssize_t)strlen(req))
		while ((k = read(fd, buf, sizeof(buf))) > 0) {
			if (total == 0)
				sscanf(buf, "HTTP/1.1 %d", &status);
			total += k;
		}
	close(fd);
	return status == 200;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* SCRAPES scrapes 300 ms apart: how many succeeded within 1 s, the median and slowest. */
static int round_of(int port, double *median, double *slowest)
{
	double t[SCRAPES];
	int ok = 0;
	for (int i = 0; i < SCRAPES; i++) {
		double t0 = now_ms();
		int good = scrape(port);
		t[i] = now_ms() - t0;
		ok += good && t[i] <= 1000;
		usleep(300000);
	}
	qsort(t, SCRAPES, sizeof(t[0]), cmp);
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
	int p[2];
	if (pipe(p) < 0)
		return 1;
	pid_t serve = fork();
	if (serve == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, STDOUT_FILENO);
		dup2(p[1], STDERR_FILENO);
		execl(bin, bin, "serve", "--listen", "127.0.0.1:0", "--interval", "1", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	setrlimit(RLIMIT_NOFILE, &old);
	char line[512] = "";
	ssize_t got = read(p[0], line, sizeof(line) - 1);
	const char *at = got > 0 ? strstr(line, "(port ") : NULL;
	int port = at ? atoi(at + 6) : 0;
	if (!port) {
		fprintf(stderr, "serve_flood: loopstat serve said: %s\n", line);
		return 1;
	}
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
