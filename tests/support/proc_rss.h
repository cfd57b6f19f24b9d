/*
 * proc_rss.h — a process's resident set, for the suites and the benches
 * that bound memory (header-only: the benches link no Criterion).
 */
#ifndef TESTS_PROC_RSS_H
#define TESTS_PROC_RSS_H

#include <stdio.h>
#include <sys/types.h>

/* pid's resident set in kB (VmRSS of /proc/PID/status), -1 when gone. */
static inline long proc_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

#endif /* TESTS_PROC_RSS_H */
