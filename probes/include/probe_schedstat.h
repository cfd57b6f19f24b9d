/*
 * probe_schedstat.h — /proc/PID/task/TID/schedstat: CPU time and time spent
 * waiting for a CPU, in nanoseconds, with the open-once/pread-per-sample
 * pattern of the syscall probe.
 *
 * The monitor derives cpu% from Δrun_ns / Δwall and waiting-for-CPU% from
 * Δwait_ns / Δwall (pidstat's %wait).
 */
#ifndef PROBE_SCHEDSTAT_H
#define PROBE_SCHEDSTAT_H

#include <stdint.h>
#include <sys/types.h>

struct probe_schedstat {
	uint64_t run_ns;     /* sum_exec_runtime: time on a CPU, ns */
	uint64_t wait_ns;    /* run_delay: time runnable but waiting for a CPU, ns */
	uint64_t timeslices; /* pcount: times the task was scheduled in */
};

/* An open schedstat file; embedded by the caller (_open/_close). */
struct probe_schedstat_file {
	int   fd;  /* -1 when not open */
	pid_t pid;
	pid_t tid;
	int   err; /* -errno of the open when fd is -1 */
};

/* Opens <root>/PID/task/TID/schedstat. Returns 0 or -errno (-ENOENT when
 * the task does not exist). f is always filled. */
int probe_schedstat_open(struct probe_schedstat_file *f, pid_t pid, pid_t tid);

void probe_schedstat_close(struct probe_schedstat_file *f);

/* One pread + parse, no allocation. Returns 0, -ESRCH when the task is
 * gone, -EINVAL when the content is malformed, or another -errno. */
int probe_schedstat_sample(struct probe_schedstat_file *f, struct probe_schedstat *out);

/* Parses "RUN WAIT SLICES\n" (len bytes, need not be NUL-terminated).
 * Returns 0 or -EINVAL. */
int probe_schedstat_parse(const char *buf, size_t len, struct probe_schedstat *out);

/* Open, sample, close: for one-off reads. */
int probe_schedstat_read(pid_t pid, pid_t tid, struct probe_schedstat *out);

#endif /* PROBE_SCHEDSTAT_H */
