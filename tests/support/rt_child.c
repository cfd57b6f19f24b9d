/*
 * rt_child.c — the pooled-runtime servers of tests/programs.
 */
#include "rt_child.h"
#include "children.h"
#include "support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define NETTY_JARS "common buffer transport codec handler resolver"

void rc_need(const char *name)
{
	char path[600];
	if (rc_program(name, path, sizeof(path)) < 0)
		cr_skip_test("%s was not built (its toolchain was missing at build time)", path);
}

int rc_program(const char *name, char *buf, size_t len)
{
	char bin[512];
	snprintf(bin, sizeof(bin), "%s", ts_loopstat_bin());
	char *slash = strrchr(bin, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(bin, sizeof(bin), ".");
	snprintf(buf, len, "%s/programs/%s", bin, name);
	if (access(buf, R_OK) == 0)
		return 0;
	/* the sanitizer build (build/asan) uses the plain build's programs */
	snprintf(buf, len, "%s/../programs/%s", bin, name);
	return access(buf, R_OK) == 0 ? 0 : -1;
}

/* One line of fd into line (without its newline) within the deadline;
 * byte by byte, so that nothing after it is consumed. */
static int read_line(int fd, char *line, size_t len, long long end)
{
	size_t n = 0;
	while (ts_now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		char c;
		if (read(fd, &c, 1) != 1)
			return -1;
		if (c == '\n') {
			line[n] = '\0';
			return 0;
		}
		if (n < len - 1)
			line[n++] = c;
	}
	return -1;
}

/*
 * tc_spawn_argv at nice RC_NICE (inherited by every thread it makes): on a
 * machine shared with builds, a server at nice 0 waits for a CPU so long
 * that its CPU time is no longer its busy time. Unchanged where lowering
 * nice is refused; the suites check the wait themselves.
 */
#define RC_NICE -15
static pid_t spawn_favoured(const char *const argv[], int *fd)
{
	errno = 0;
	int old = getpriority(PRIO_PROCESS, 0);
	int lowered = errno == 0 && setpriority(PRIO_PROCESS, 0, RC_NICE) == 0;
	pid_t pid = tc_spawn_argv(argv, fd);
	if (lowered)
		setpriority(PRIO_PROCESS, 0, old);
	return pid;
}

/* Reads lines until one starts with key; its text after the key. */
static void wait_key(int fd, const char *key, char *rest, size_t len, int timeout_ms)
{
	char line[256];
	long long end = ts_now_ms() + timeout_ms;
	size_t k = strlen(key);
	while (read_line(fd, line, sizeof(line), end) == 0)
		if (!strncmp(line, key, k) && line[k] == ' ') {
			snprintf(rest, len, "%s", line + k + 1);
			return;
		}
	cr_assert_fail("no \"%s\" line within %d ms", key, timeout_ms);
}

pid_t rc_spawn_go(const char *name, int procs, double busy, int *fd)
{
	char path[600], b[32], p[16], port[32];
	cr_assert_eq(rc_program(name, path, sizeof(path)), 0);
	snprintf(b, sizeof(b), "%.3f", busy);
	snprintf(p, sizeof(p), "%d", procs);
	setenv("GOMAXPROCS", p, 1);
	const char *argv[] = { path, "-busy", b, NULL };
	pid_t pid = spawn_favoured(argv, fd);
	unsetenv("GOMAXPROCS");
	wait_key(*fd, "port", port, sizeof(port), 10000);
	return pid;
}

pid_t rc_spawn_tokio(double busy, int *fd, pid_t *blocking_tid)
{
	char path[600], b[32], rest[64];
	cr_assert_eq(rc_program("tokioserver", path, sizeof(path)), 0);
	snprintf(b, sizeof(b), "%.3f", busy);
	const char *argv[] = { path, "-busy", b, NULL };
	pid_t pid = spawn_favoured(argv, fd);
	wait_key(*fd, "port", rest, sizeof(rest), 10000);
	wait_key(*fd, "blocking", rest, sizeof(rest), 10000);
	*blocking_tid = (pid_t)atoi(rest);
	return pid;
}

pid_t rc_spawn_netty(double busy)
{
	char cls[600], cp[2048], b[32], rest[64];
	cr_assert_eq(rc_program("netty/NettyServer.class", cls, sizeof(cls)), 0);
	*strrchr(cls, '/') = '\0';
	size_t n = (size_t)snprintf(cp, sizeof(cp), "%s", cls);
	char jars[] = NETTY_JARS;
	for (char *save = NULL, *j = strtok_r(jars, " ", &save); j; j = strtok_r(NULL, " ", &save))
		n += (size_t)snprintf(cp + n, sizeof(cp) - n, ":/usr/share/java/netty-%s.jar", j);
	snprintf(b, sizeof(b), "%.3f", busy);
	const char *argv[] = { "/usr/bin/java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", cp, "NettyServer", "-busy", b, NULL };
	int fd;
	pid_t pid = spawn_favoured(argv, &fd);
	wait_key(fd, "port", rest, sizeof(rest), 30000);
	close(fd);
	return pid;
}

pid_t rc_spawn_fjp(double busy)
{
	char cls[600], b[32];
	cr_assert_eq(rc_program("netty/FjpLoad.class", cls, sizeof(cls)), 0);
	*strrchr(cls, '/') = '\0';
	snprintf(b, sizeof(b), "%.3f", busy);
	const char *argv[] = { "/usr/bin/java", "-Xmx128m", "-XX:+UseSerialGC", "-cp", cls, "FjpLoad", "-busy", b, NULL };
	int fd;
	pid_t pid = spawn_favoured(argv, &fd);
	/* "ready" alone on its line: wait_key wants a key and a value */
	char line[64];
	long long end = ts_now_ms() + 30000;
	while (read_line(fd, line, sizeof(line), end) == 0 && strcmp(line, "ready"))
		;
	cr_assert_str_eq(line, "ready", "FjpLoad did not start");
	close(fd);
	return pid;
}

void rc_read_pair(int fd, const char *key, double *a, double *wall_ns, int timeout_ms)
{
	char rest[128];
	wait_key(fd, key, rest, sizeof(rest), timeout_ms);
	cr_assert_eq(sscanf(rest, "%lf wall_ns %lf", a, wall_ns), 2, "bad line: %s %s", key, rest);
}

static void add_sched(pid_t pid, const char *tid, double *run_s, double *wait_s)
{
	char path[400];
	snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, tid);
	char *text = ts_read_file(path);
	unsigned long long run = 0, wait = 0;
	if (text && sscanf(text, "%llu %llu", &run, &wait) == 2) {
		*run_s += (double)run / 1e9;
		*wait_s += (double)wait / 1e9;
	}
	free(text);
}

void rc_sched(pid_t pid, pid_t tid, double *run_s, double *wait_s)
{
	char path[128];
	*run_s = *wait_s = 0;
	if (tid > 0) {
		snprintf(path, sizeof(path), "%d", (int)tid);
		add_sched(pid, path, run_s, wait_s);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			add_sched(pid, e->d_name, run_s, wait_s);
	if (d)
		closedir(d);
}

int rc_threads_named(pid_t pid, const char *prefix, pid_t *tids, int cap)
{
	char path[400];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) && n < cap) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)pid, e->d_name);
		char *c = ts_read_file(path);
		if (c && !strncmp(c, prefix, strlen(prefix)))
			tids[n++] = (pid_t)atoi(e->d_name);
		free(c);
	}
	if (d)
		closedir(d);
	return n;
}
