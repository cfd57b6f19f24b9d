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
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define WORKERS 8
#define SCRAPES 300
#define IDLE_CLIENTS 1000

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int connect_to(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One GET on a new connection, read to the end; its bytes, or -1. */
static long get(int port, const char *path, int *status)
{
	int fd = connect_to(port);
	if (fd < 0)
		return -1;
	char req[256], buf[1 << 16];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path);
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	long total = 0;
	ssize_t k;
	*status = 0;
	while ((k = read(fd, buf, sizeof(buf))) > 0) {
		if (total == 0)
			sscanf(buf, "HTTP/1.1 %d", status);
		total += k;
	}
	close(fd);
	return total;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median microseconds of SCRAPES GETs of path; *bytes gets a response's size. */
static double median_us(int port, const char *path, long *bytes)
{
	static double t[SCRAPES];
	for (int i = 0; i < SCRAPES; i++) {
		int status;
		double t0 = now_us();
		*bytes = get(port, path, &status);
		t[i] = now_us() - t0;
		if (*bytes < 0 || status != 200) {
			fprintf(stderr, "serve_scrape: GET %s: status %d\n", path, status);
			exit(1);
		}
	}
	qsort(t, SCRAPES, sizeof(t[0]), cmp);
	printf("%-9s median %.0f us, p90 %.0f us, max %.0f us, %ld bytes\n", path, t[SCRAPES / 2], t[SCRAPES * 9 / 10],
	       t[SCRAPES - 1], *bytes);
	return t[SCRAPES / 2];
}

static pid_t spawn(char *const argv[], int err_pipe)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, STDOUT_FILENO);
		dup2(err_pipe >= 0 ? err_pipe : null, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
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
		workers[i] = spawn(wargv, -1);
		snprintf(pids + strlen(pids), sizeof(pids) - strlen(pids), "%s%d", i ? "," : "", (int)workers[i]);
	}
	usleep(300000);
	int p[2];
	if (pipe(p) < 0)
		return 1;
	char *sargv[] = { bin, "serve", "--listen", "127.0.0.1:0", "--interval", "1", "-p", pids, NULL };
	pid_t serve = spawn(sargv, p[1]);
	close(p[1]);
	char line[512] = "";
	ssize_t got = read(p[0], line, sizeof(line) - 1);
	const char *at = got > 0 ? strstr(line, "(port ") : NULL;
	int port = at ? atoi(at + 6) : 0;
	if (!port) {
		fprintf(stderr, "serve_scrape: loopstat serve said: %s\n", line);
		return 1;
	}
	int status = 0;
	for (int i = 0; i < 100 && (get(port, "/metrics", &status), status != 200); i++)
		usleep(50000);
	usleep(1100000);   /* every worker in the window */

	long bytes;
	double health = median_us(port, "/healthz", &bytes);
	double metrics = median_us(port, "/metrics", &bytes);
	static int idle[IDLE_CLIENTS];
	int held = 0;
	for (int i = 0; i < IDLE_CLIENTS; i++)
		held += (idle[i] = connect_to(port)) >= 0;
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
