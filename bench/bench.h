/*
 * bench.h — what the benches that drive the built programs share: the
 * build directory they run from, starting a program with its stdout read
 * back, and a number out of loopstat's JSON.
 * Header-only (static inline): each bench is one file and links no
 * support library.
 */
#ifndef LOOPSTAT_BENCH_H
#define LOOPSTAT_BENCH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
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

#endif /* LOOPSTAT_BENCH_H */
