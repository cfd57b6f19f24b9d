/*
 * worker_fair — issue 35 item 3 at its full size: a root `loopstat serve`
 * (the default cap of 4,096) while one user (uid 60000) floods the host
 * with 4,300 threads parked in epoll_wait. A root loop and another user's
 * loop (uid 60001) start once the flood is in place; the bench times how
 * long until both are in /metrics, reads the exposition's size, series and
 * drop, and serve's RSS (/proc/PID/status) before, at the flood's peak and
 * after it ended.
 *
 *   figure worker_fair_found_s        the slower of the two loops to appear in /metrics (s)
 *   figure worker_fair_metrics_kb     /metrics during the flood (KB)
 *   figure worker_fair_series         its series (lines that are not comments)
 *   figure worker_fair_dropped        series_dropped during the flood
 *   figure worker_fair_rss_peak_x     serve's RSS at the flood's peak over its baseline (x)
 *   figure worker_fair_rss_after_x    serve's RSS 20 s after the flood ended over its baseline (x)
 *   figure worker_fair_list_found     of the two loops, how many a `list --all --duration 4` beside the flood shows
 */
#include <errno.h>
#include <grp.h>
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

#define FLOOD       4300
#define FLOOD_UID   60000
#define OTHER_UID   60001
#define FOUND_MAX_S 60

static void *park(void *arg)
{
	struct epoll_event ev;
	for (;;)
		epoll_wait(*(int *)arg, &ev, 1, -1);
	return NULL;
}

/* A child as uid (0: stays root) that dies with us: `threads` threads
 * parked in epoll_wait, or (threads 0) one loop waking every 20 ms. */
static pid_t child(uid_t uid, int threads)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid != 0) {
		close(p[1]);
		char c;
		ssize_t r = read(p[0], &c, 1);   /* every thread made */
		close(p[0]);
		return r == 1 ? pid : -1;
	}
	close(p[0]);
	if (uid && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0))
		_exit(120);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	static int ep;
	ep = epoll_create1(0);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (int i = 0; i < threads; i++) {
		pthread_t t;
		if (pthread_create(&t, &a, park, &ep) != 0)
			_exit(121);
	}
	if (write(p[1], "x", 1) != 1)
		_exit(122);
	close(p[1]);
	struct epoll_event ev;
	for (;;)
		epoll_wait(ep, &ev, 1, threads ? -1 : 20);
}

/* GET /metrics into a malloc'd string (NULL on failure). */
static char *get_metrics(int port)
{
	int fd = bench_connect(port, 5);
	if (fd < 0)
		return NULL;
	const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	if (write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		close(fd);
		return NULL;
	}
	size_t len = 0, cap = 1 << 20;
	char *buf = malloc(cap);
	for (ssize_t k; buf && (k = read(fd, buf + len, cap - len - 1)) > 0;) {
		len += (size_t)k;
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	close(fd);
	if (buf)
		buf[len] = '\0';
	return buf;
}

static int mentions(const char *body, pid_t pid)
{
	char key[32];
	snprintf(key, sizeof(key), "pid=\"%d\"", (int)pid);
	return body && strstr(body, key) != NULL;
}

static void stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* `list --json --all --duration 4` beside the flood: how many of a, b it lists. */
static int list_finds(const char *bin, pid_t a, pid_t b)
{
	char *argv[] = { (char *)bin, "list", "--json", "--all", "--duration", "4", NULL };
	int out = -1;
	pid_t pid = bench_spawn(argv, NULL, &out);
	static char doc[8 << 20];
	if (pid < 0)
		return -1;
	bench_slurp(out, doc, sizeof(doc));
	waitpid(pid, NULL, 0);
	int n = 0;
	char key[32];
	snprintf(key, sizeof(key), "\"pid\":%d,", (int)a);
	n += strstr(doc, key) != NULL;
	snprintf(key, sizeof(key), "\"pid\":%d,", (int)b);
	n += strstr(doc, key) != NULL;
	return n;
}

int main(int argc, char **argv)
{
	(void)argc;
	if (geteuid() != 0) {
		printf("worker_fair: needs root (a root loopstat against other users' threads); skipped\n");
		return 0;
	}
	char build[512], bin[600];
	bench_build_dir(argv[0], build, sizeof(build));
	snprintf(bin, sizeof(bin), "%s/loopstat", build);
	char *sargv[] = { bin, "serve", "--listen", "127.0.0.1:0", "--all", "--interval", "0.5", "--window", "2", NULL };
	int port;
	pid_t serve = bench_serve_start(sargv, &port, "worker_fair");
	if (serve < 0)
		return 1;
	sleep(4);
	long base = proc_rss_kb(serve);
	double t0 = bench_now_us();
	pid_t flood = child(FLOOD_UID, FLOOD);
	printf("flood of %d threads made in %.1f s\n", FLOOD, (bench_now_us() - t0) / 1e6);
	sleep(3);
	pid_t root_loop = child(0, 0), theirs = child(OTHER_UID, 0);
	t0 = bench_now_us();
	double found = -1;
	char *body = NULL;
	long peak = proc_rss_kb(serve);
	while ((bench_now_us() - t0) / 1e6 < FOUND_MAX_S) {
		free(body);
		body = get_metrics(port);
		long r = proc_rss_kb(serve);
		peak = r > peak ? r : peak;
		if (mentions(body, root_loop) && mentions(body, theirs)) {
			found = (bench_now_us() - t0) / 1e6;
			break;
		}
		usleep(250000);
	}
	for (int i = 0; i < 8; i++) {   /* the flood's steady state */
		usleep(500000);
		long r = proc_rss_kb(serve);
		peak = r > peak ? r : peak;
	}
	free(body);
	body = get_metrics(port);
	size_t series = 0;
	double dropped = -1;
	for (const char *l = body; l && *l;) {
		const char *nl = strchr(l, '\n');
		if (*l != '#')
			series++;
		if (!strncmp(l, "loopstat_series_dropped", 23))
			dropped = atof(strchr(l, ' ') + 1);
		l = nl ? nl + 1 : l + strlen(l);
	}
	double kb = body ? (double)strlen(body) / 1024 : 0;
	int listed = list_finds(bin, root_loop, theirs);
	stop(flood);
	sleep(20);
	long after = proc_rss_kb(serve);
	printf("serve RSS: %ld KB before, %ld KB at the flood's peak, %ld KB 20 s after it ended\n", base, peak, after);
	printf("/metrics beside the flood: %.0f KB, %zu series, %.0f dropped\n", kb, series, dropped);
	printf("figure worker_fair_found_s %.1f s\n", found);
	printf("figure worker_fair_metrics_kb %.0f KB\n", kb);
	printf("figure worker_fair_series %zu\n", series);
	printf("figure worker_fair_dropped %.0f\n", dropped);
	printf("figure worker_fair_rss_peak_x %.2f x\n", (double)peak / (double)base);
	printf("figure worker_fair_rss_after_x %.2f x\n", (double)after / (double)base);
	printf("figure worker_fair_list_found %d\n", listed);
	free(body);
	stop(root_loop);
	stop(theirs);
	stop(serve);
	return 0;
}
