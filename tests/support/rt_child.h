/*
 * rt_child.h — the pooled-runtime servers of tests/programs (built into
 * build/programs beside the loopstat under test): starting them, and
 * reading the truths they print.
 */
#ifndef TESTS_RT_CHILD_H
#define TESTS_RT_CHILD_H

#include <sys/types.h>

/* build/programs/NAME beside $LOOPSTAT_BIN into buf; 0 when it exists,
 * else -1 (the caller skips: the toolchain was missing at build time). */
int rc_program(const char *name, char *buf, size_t len);
/* Skips the test (cr_skip_test) unless build/programs/NAME was built. */
void rc_need(const char *name);

/* Starts goserver (or goserver-stripped) with GOMAXPROCS=procs at busy
 * share busy; returns once it listens. *fd: its stdout. */
pid_t rc_spawn_go(const char *name, int procs, double busy, int *fd);
/* Starts tokioserver at busy; returns once it listens, with the
 * spawn_blocking sleeper's thread id in *blocking_tid. */
pid_t rc_spawn_tokio(double busy, int *fd, pid_t *blocking_tid);
/* Starts NettyServer on /usr/bin/java at busy; returns once it listens. */
pid_t rc_spawn_netty(double busy);

/* Starts FjpLoad (a ForkJoinPool of 2 workers) at busy; returns once its
 * pool runs. */
pid_t rc_spawn_fjp(double busy);

/* The next "key A wall_ns B" line on fd within timeout_ms: A and B. Fails
 * the test when none comes. */
void rc_read_pair(int fd, const char *key, double *a, double *wall_ns, int timeout_ms);

/* Seconds thread tid of pid (every thread of pid when tid is 0) ran on a
 * CPU, and waited for one, from schedstat. */
void rc_sched(pid_t pid, pid_t tid, double *run_s, double *wait_s);

/* The thread ids of pid whose comm starts with prefix, up to cap. */
int rc_threads_named(pid_t pid, const char *prefix, pid_t *tids, int cap);

#endif /* TESTS_RT_CHILD_H */
