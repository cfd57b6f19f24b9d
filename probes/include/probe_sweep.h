/*
 * probe_sweep.h — finding the event loops on the host: a sweep lists every
 * process and its threads and looks at what each thread waits in (one read
 * of its /proc syscall file); a thread seen in an event wait is a loop.
 *
 * Event waits (the loop-poll rule of design.md): epoll_wait, epoll_pwait,
 * epoll_pwait2; io_uring_enter waiting for completions; poll, ppoll,
 * select and pselect6 with fds. Kernel threads are never looked at.
 *
 * A sweep keeps what it learned, so the next one reads only what it must:
 * a process is judged once in its life (pid and start time), a loop is
 * reported once, and a thread seen blocked in anything else is looked at
 * again after 1, 2, 4 ... up to SWEEP_BACKOFF_MAX sweeps; one seen running
 * (perhaps a loop too busy to be caught in its poll) at the next sweep.
 * State per thread is a fixed 24-byte record (48 bytes of table at most).
 */
#ifndef PROBE_SWEEP_H
#define PROBE_SWEEP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe_stat.h"

struct probe_sweep;

struct probe_sweep_proc {
	pid_t    pid;
	uid_t    uid;                  /* owner of /proc/PID: the effective uid */
	uint64_t start_time;
	char     comm[PROBE_COMM_LEN];
};

struct probe_sweep_ops {
	/* Whether to look at the process's threads: asked once per process
	 * (pid and start time). NULL: every process. */
	int (*want)(const struct probe_sweep_proc *p, void *arg);
	/* A thread of p seen in an event wait: 1 when taken (it is not
	 * reported again), 0 when there is no room for it (it is counted in
	 * ignored_limit, and reported again at a later sweep). */
	int (*found)(const struct probe_sweep_proc *p, pid_t tid, void *arg);
	/* Called now and then during a long sweep (NULL: never). */
	void (*tick)(void *arg);
};

struct probe_sweep_counts {
	unsigned procs;            /* processes listed (kernel threads not counted) */
	unsigned threads;          /* their threads */
	unsigned loops;            /* threads known to be loops */
	unsigned reads;            /* syscall files read in this sweep */
	unsigned ignored_access;   /* processes whose threads this user may not look at */
	unsigned ignored_limit;    /* processes or threads past the tables' bounds */
};

/* 0 or -ENOMEM. */
int probe_sweep_new(struct probe_sweep **out);
void probe_sweep_delete(struct probe_sweep *sw);

/* One sweep of <proc root>: 0 (counts filled) or -errno when the root
 * cannot be listed. */
int probe_sweep_run(struct probe_sweep *sw, const struct probe_sweep_ops *ops, void *arg,
		    struct probe_sweep_counts *counts);

/* A second look at (some of) the threads the last sweep found on a CPU,
 * once: a loop busy at its look (or waiting for a CPU on a loaded host)
 * is in its poll a moment later, and would otherwise wait a sweep (1 to
 * 10 s) to be found. Call it well after the sweep (the sampler: 100 ms).
 * The loops it found, each reported to found() as by the sweep. */
int probe_sweep_relook(struct probe_sweep *sw, const struct probe_sweep_ops *ops, void *arg);

/* The loop tid was taken and is no longer (it lost its place at a cap):
 * looked at again at the next sweep, and counted in ignored_limit while
 * found() has no room for it. */
void probe_sweep_forget(struct probe_sweep *sw, pid_t tid);

/* Bytes the sweep's tables take now (for the memory figure). */
size_t probe_sweep_memory(const struct probe_sweep *sw);

/* Whether a sample shows an event wait, as the sweep judges it. */
struct probe_sc_sample;
int probe_sweep_is_event_wait(const struct probe_sc_sample *s);

#endif /* PROBE_SWEEP_H */
