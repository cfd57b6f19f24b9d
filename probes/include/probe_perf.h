/*
 * probe_perf.h — one user-space sample of a thread on a CPU, without
 * stopping it: a perf_event_open cpu-clock event on that thread with
 * PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER, read from its ring
 * buffer and closed. The kernel copies the registers and the top of the
 * user stack at the sample's interrupt; the thread runs on.
 *
 * Allowed to root (CAP_PERFMON) and, when kernel.perf_event_paranoid <= 1,
 * to the thread's owner; probe_perf_explain() says which and how to allow.
 */
#ifndef PROBE_PERF_H
#define PROBE_PERF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROBE_PERF_STACK 8192   /* bytes of user stack copied per sample */

struct probe_perf_sample {
	uint64_t time_ns;               /* when taken, CLOCK_MONOTONIC */
	uint64_t pc, sp, fp;            /* user registers at the sample */
	uint64_t stack_len;             /* bytes of stack valid from sp */
	unsigned char stack[PROBE_PERF_STACK];
};

/*
 * Samples thread tid of pid once, waiting up to timeout_ms for it to run
 * period_us of CPU time. Returns 0, -EAGAIN (it did not run long enough:
 * off the CPU), -EACCES/-EPERM (refused: see probe_perf_explain), -ESRCH
 * (gone), -ENOSYS/-ENOENT (no perf events here), or another -errno.
 */
int probe_perf_sample_thread(pid_t pid, pid_t tid, unsigned period_us, int timeout_ms, struct probe_perf_sample *out);

/*
 * A stream of such samples, one per period_ns of the thread's CPU time
 * (a profile's rate), kept in a ring the caller drains. NULL with errno
 * set (as probe_perf_sample_thread's errors).
 */
struct probe_perf_stream;
struct probe_perf_stream *probe_perf_open(pid_t tid, uint64_t period_ns, unsigned ring_pages);
void probe_perf_close(struct probe_perf_stream *ps);
/* Drains the ring; the newest user-space sample into out. 0, or -EAGAIN
 * when there was none since the last drain. */
int probe_perf_latest(struct probe_perf_stream *ps, struct probe_perf_sample *out);
/* Its fd, to poll for a first sample. */
int probe_perf_fd(const struct probe_perf_stream *ps);

/* One line on why perf_event_open is refused for another process and how
 * to allow it (the current perf_event_paranoid level named). */
void probe_perf_explain(char *buf, size_t len);

/*
 * A probe_unwind memory accessor (probe_unwind.h) for unwinding a perf
 * sample: reads inside the sample's stack copy come from it, the rest
 * (the target's other memory) through process_vm_readv. ctx points to a
 * `const struct probe_perf_sample *` the caller sets to the sample it
 * unwinds.
 */
ssize_t probe_perf_mem(void *ctx, pid_t pid, uint64_t addr, void *buf, size_t len);

#endif /* PROBE_PERF_H */
