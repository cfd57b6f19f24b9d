/*
 * loop_child.h — the loop_truth scenario programs (examples/loop_truth.c)
 * as test children, and a sampler that applies probe_loop_classify the way
 * the monitor's model does (schedstat's runnable share is "running"; the
 * samples split the time off the CPU).
 */
#ifndef TEST_LOOP_CHILD_H
#define TEST_LOOP_CHILD_H

#include <stdio.h>
#include <sys/types.h>

#include "probe_loop.h"

/* Starts build/examples/loop_truth --case kase --block B --work W
 * --seconds S (found next to the test binary), waits for its "ready".
 * Returns the pid (*out: its stdout) or -1. Dies with the test. */
pid_t tloop_spawn(const char *kase, double block, double work, double seconds, FILE **out);

/* Waits for it and parses "self idle_pct X blocked_pct Y". Returns 0 or -1. */
int tloop_result(pid_t pid, FILE *out, double *idle_pct, double *blocked_pct);

#define TLOOP_KEYS 8

struct tloop_key {
	long nr;
	int  fd;
	enum probe_class cls;
	enum probe_wait_kind wait;
	uint64_t fd_ino;
	long n;
};

struct tloop_measure {
	double idle_pct, blocked_pct;  /* model shares of wall time */
	double cpu_wait_pct;           /* runnable, waiting for a CPU: the loop's own
	                                * clock counts it as waiting, schedstat as running */
	long   samples, resamples;
	enum probe_loop_basis basis;   /* at the last sample */
	int    loop_fd;
	struct tloop_key keys[TLOOP_KEYS]; /* (cls, nr, fd, wait) counts, largest first */
	int    nkeys;
};

/* Samples thread pid (its main thread) about every `period_us` for
 * `seconds` with probe_loop_classify. Returns 0 or -errno. */
int tloop_measure(pid_t pid, double seconds, int period_us, struct tloop_measure *m);

#endif /* TEST_LOOP_CHILD_H */
