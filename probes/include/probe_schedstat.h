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
	unsigned fdb; /* its entry in the fd budget (probe_fdbudget.h), 0 none */
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

/* The times the task went to sleep of its own accord (voluntary_ctxt_switches
 * of <root>/PID/task/TID/status: for a loop, each wait in its poll that
 * blocked), unlike pcount, which preemptions also count. One open + read
 * (~10 us): not a per-sample cost. Returns 0, -ESRCH, -EINVAL or -errno. */
int probe_schedstat_voluntary(pid_t pid, pid_t tid, uint64_t *n);

/*
 * The unchanged-state test. pcount counts the times a thread was put on a
 * CPU: if neither it nor the CPU time moved between a reading taken just
 * before a syscall sample and a later one, the thread has not run in
 * between. A thread off the CPU at that sample (in a syscall, or stopped)
 * is then still there, in the same syscall with the same arguments, and
 * reading its syscall file again would say what it said. Not so for a
 * thread sampled running: it can leave the CPU without being put back on.
 * A kernel without sched_info (pcount always 0) never gives "unchanged".
 * One change it cannot see: a thread woken but still waiting for a CPU
 * reads "running" in its syscall file (its state is TASK_RUNNING) while
 * its schedstat has not moved; probe_schedstat_check_pays keeps the check
 * to threads that hardly wait, which bounds that error.
 */
int probe_schedstat_unchanged(const struct probe_schedstat *before, const struct probe_schedstat *now);

/* The most a checked thread may wait for a CPU, as a share of wall time
 * since the last judgement: at most that share of its samples can be a
 * reused "still in its syscall" where a read would have said "running". */
#define PROBE_SCHEDSTAT_WAIT_MAX 0.005

/*
 * Whether reading schedstat first pays for a thread, judged on two
 * readings a and b taken wall_ns apart with `ticks` samples between them.
 * It costs check_ns at every tick and saves read_ns (a syscall-file read)
 * when the state is unchanged and reusable. It is not at a tick that
 * follows a put-on-CPU (at most one per switch) or one whose sample found
 * the thread running (about its share of time on a CPU), so at least
 * 1 - switches/ticks - run/wall of the ticks save. Both costs are measured
 * by the caller on this machine; 0 means not measured yet: no. Never for a
 * thread that waited for a CPU more than PROBE_SCHEDSTAT_WAIT_MAX of the time.
 */
int probe_schedstat_check_pays(uint64_t check_ns, uint64_t read_ns, const struct probe_schedstat *a,
			       const struct probe_schedstat *b, uint64_t ticks, uint64_t wall_ns);

#endif /* PROBE_SCHEDSTAT_H */
