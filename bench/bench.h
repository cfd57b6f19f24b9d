/*
 * bench.h — what the benches that drive the built programs share: the
 * build directory they run from, starting a program with its stdout read
 * back, and a number out of loopstat's JSON; for the serve benches, starting
 * `loopstat serve` and timing GETs of it over loopback.
 * Header-only (static inline): each bench is one file and links no
 * support library.
 */
#ifndef LOOPSTAT_BENCH_H
#define LOOPSTAT_BENCH_H

#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* BUILD/bench/NAME (argv[0]) -> BUILD, "." when argv[0] has no such path. */
static inline void bench_build_dir(const char *argv0, char *buf, size_t len)
{
	snprintf(buf, len, "%s", argv0);
	for (int i = 0; i < 2; i++) {
		char *slash = strrchr(buf, '/');
		if (slash)
			*slash = '\0';
		else
			snprintf(buf, len, ".");
	}
}

/* Runs argv (FL_BACKEND=backend when given), its stdout on *out; the pid
 * or -1. */
static inline pid_t bench_spawn(char *const argv[], const char *backend, int *out)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		if (backend)
			setenv("FL_BACKEND", backend, 1);
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

/* Reads fd to its end (at most len - 1 bytes, NUL-terminated), closes it. */
static inline void bench_slurp(int fd, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	while (got < len - 1 && (n = read(fd, buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
}

/* The first "key": number in doc; NaN when absent. No JSON parser: the
 * benches read loopstat's own flat output, one worker. */
static inline double bench_json_num(const char *doc, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(doc, pat);
	return p ? strtod(p + strlen(pat), NULL) : NAN;
}

/* Monotonic microseconds. */
static inline double bench_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* qsort's order of doubles, ascending. */
static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Runs argv with stdout on /dev/null and stderr on err_fd (-1: /dev/null
 * too); the pid or -1. */
static inline pid_t bench_spawn_quiet(char *const argv[], int err_fd)
{
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, STDOUT_FILENO);
		dup2(err_fd >= 0 ? err_fd : null, STDERR_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* Starts `loopstat serve --listen 127.0.0.1:0 ...` (argv, the binary
 * first) and reads the port it says it listens on into *port; the pid, or
 * -1 with what serve said on stderr (prefixed by who). The pipe's read end
 * stays open, so that serve's later messages never meet SIGPIPE. */
static inline pid_t bench_serve_start(char *const argv[], int *port, const char *who)
{
	int p[2];
	if (pipe(p) < 0)
		return -1;
	pid_t pid = bench_spawn_quiet(argv, p[1]);
	close(p[1]);
	/* its first line: stderr may come in pieces (a prefix, then the rest) */
	char line[512] = "";
	size_t got = 0;
	ssize_t k;
	while (!strchr(line, '\n') && got < sizeof(line) - 1 && (k = read(p[0], line + got, sizeof(line) - 1 - got)) > 0)
		line[got += (size_t)k] = '\0';
	const char *at = strstr(line, "(port ");
	*port = at ? atoi(at + 6) : 0;
	if (pid < 0 || !*port) {
		fprintf(stderr, "%s: loopstat serve said: %s\n", who, line);
		return -1;
	}
	return pid;
}

/* A connection to 127.0.0.1:port whose reads and writes give up after
 * timeout_s (0: never); the fd or -1. */
static inline int bench_connect(int port, int timeout_s)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (fd >= 0 && timeout_s > 0) {
		struct timeval tv = { timeout_s, 0 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One GET of path on a new connection (bench_connect's timeout_s), read to
 * the end: its bytes, or -1; *status the HTTP status (0: none came). */
static inline long bench_get(int port, const char *path, int timeout_s, int *status)
{
	*status = 0;
	int fd = bench_connect(port, timeout_s);
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
	while ((k = read(fd, buf, sizeof(buf))) > 0) {
		if (total == 0)
			sscanf(buf, "HTTP/1.1 %d", status);
		total += k;
	}
	close(fd);
	return total;
}

#endif /* LOOPSTAT_BENCH_H */
