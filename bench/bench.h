/*
 * bench.h — what the benches that drive the built programs share: the
 * build directory they run from, and a number out of loopstat's JSON.
 * Header-only (static inline): each bench is one file and links no
 * support library.
 */
#ifndef LOOPSTAT_BENCH_H
#define LOOPSTAT_BENCH_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
