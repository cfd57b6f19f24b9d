/*
 * probe_discover.h — which processes and threads to sample.
 *
 * Processes by pid list or by a name pattern (POSIX extended regex on comm
 * and/or the command line); threads of a process. Shared-memory segments
 * are discovered by the shm reader (probe_shm.h), not here.
 *
 * The pattern scan uses libproc2's pids API on the real /proc; with a
 * fixture proc root ($LOOPSTAT_PROC_ROOT) it reads the tree directly, since
 * libproc2 always reads /proc. Threads are listed by reading
 * <root>/PID/task directly: it is one getdents per process, cheaper than a
 * libproc2 reap of every thread on the system.
 *
 * Nothing here is per sample; results go into caller-provided arrays.
 */
#ifndef PROBE_DISCOVER_H
#define PROBE_DISCOVER_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe_stat.h"

struct probe_proc_info {
	pid_t    pid;
	uint64_t start_time;           /* stat field 22, clock ticks after boot: (pid, start_time) names a process */
	int      threads;              /* number of threads when discovered */
	char     comm[PROBE_COMM_LEN]; /* process name (may hold spaces and parentheses) */
};

/* Which text a pattern is matched against. */
#define PROBE_MATCH_COMM    1u /* the process name (comm) */
#define PROBE_MATCH_CMDLINE 2u /* argv joined by spaces */

struct probe_matcher {
	regex_t  re;
	unsigned what; /* PROBE_MATCH_* bits */
};

/* Compiles pattern (REG_EXTENDED). Returns 0, or -EINVAL for a bad pattern
 * or an empty `what`. */
int probe_matcher_init(struct probe_matcher *m, const char *pattern, unsigned what);
void probe_matcher_done(struct probe_matcher *m);
/* The same, with regerror's reason (or another) in why on -EINVAL. */
int probe_matcher_init_why(struct probe_matcher *m, const char *pattern, unsigned what, char *why, size_t len);

/* Every process (not thread) whose comm or cmdline matches, except the
 * caller's own process (its command line holds the pattern) and kernel
 * threads (no event loop, and a syscall file of zeros). Fills up to
 * cap entries of out, in pid order. Returns the number of matches, which
 * may exceed cap, or -errno. */
int probe_discover_match(const struct probe_matcher *m, struct probe_proc_info *out, size_t cap);

/* The processes of pids[0..n) that exist and are not kernel threads, in
 * the given order. Returns the
 * number filled (<= n, into out) or -errno. */
int probe_discover_pids(const pid_t *pids, size_t n, struct probe_proc_info *out);

/* Thread ids of pid, ascending. Fills up to cap; returns the number of
 * threads (may exceed cap), -ESRCH when the process is gone, or -errno. */
int probe_discover_threads(pid_t pid, pid_t *tids, size_t cap);

/* LeakSanitizer suppressions for libproc2's never-freed per-thread buffers
 * (procps 4.0.x readproc.c); the ASan build of libprobes installs them
 * itself unless the program defines __lsan_default_suppressions. */
#define PROBE_LSAN_SUPPRESSIONS "leak:libproc2.so\n"

#endif /* PROBE_DISCOVER_H */
