/*
 * probe_syscall_batch.h — sampling many open syscall probes at once.
 *
 * On a machine where a syscall is expensive, reading 1000 syscall files one
 * pread at a time costs 1000 kernel entries per tick. A batch submits all
 * the reads in one io_uring_enter: each probe's file is registered once as
 * a fixed file (re-registered only when the probe at that index changes),
 * each read is IOSQE_ASYNC because procfs reads cannot be done without
 * blocking (io_uring would try inline, fail, and punt to io-wq anyway), and
 * each result goes through the same code as probe_syscall_sample.
 *
 * When io_uring cannot be used (kernel without it, io_uring_disabled,
 * seccomp, too little locked memory), the same calls do plain preads: a
 * caller never has to care which path ran, and both give the same samples
 * and the same errors.
 *
 * The reads run on io-wq threads of this process ("iou-wrk-<tid>", where
 * tid is the submitting thread). They inherit the submitting thread's
 * scheduling policy when they are created, and keep it afterwards; their
 * CPU time is not in the submitting thread's CLOCK_THREAD_CPUTIME_ID.
 * probe_sc_batch_iowq_cpu_ns() and probe_sc_batch_iowq_setsched() exist
 * for callers that judge or set the sampler's own cost and priority.
 *
 * The ring belongs to the first thread that samples with the batch (its
 * single issuer, which lets its completions wait until that thread
 * collects them); sampled from any other thread, the batch reads with
 * pread. Like a probe, a batch is used by one thread at a time.
 */
#ifndef PROBE_SYSCALL_BATCH_H
#define PROBE_SYSCALL_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "probe_syscall.h"

struct probe_sc_batch;

/* Creates a batch whose ring takes up to sq_hint reads per io_uring_enter
 * (more probes are sampled in several rounds); falls back to pread when
 * the ring cannot be set up. Returns 0 or -ENOMEM. */
int probe_sc_batch_new(unsigned sq_hint, struct probe_sc_batch **out);
void probe_sc_batch_delete(struct probe_sc_batch *b);

/* 1 when samples are read through io_uring, else the -errno that ruled the
 * ring out (-ENOSYS, -EPERM, ...): samples are then read with pread. */
int probe_sc_batch_ring(const struct probe_sc_batch *b);

/*
 * Samples probes[0..n) once each; NULL entries are skipped (their out and
 * rc are left alone). out[i] and rc[i] are what probe_syscall_sample would
 * have given for probes[i]: GONE / NO_ACCESS states, or -EINVAL, ...
 * Keep a probe at the same index from call to call: its file stays
 * registered there. The probes must stay open during the call.
 * Returns 0 (when the ring's buffers cannot grow, that call uses pread).
 */
int probe_sc_batch_sample(struct probe_sc_batch *b, struct probe_syscall *const *probes, size_t n,
			  struct probe_sc_sample *out, int *rc);

/* CPU time, in ns, used so far by the io-wq threads that read for this
 * batch (cumulative; a thread that exited keeps what was last seen of it).
 * 0 on the pread path. Reads /proc/self/task: call it about once a second,
 * not per sample. Returns 0 or -errno. */
int probe_sc_batch_iowq_cpu_ns(struct probe_sc_batch *b, uint64_t *ns);

/* Gives the io-wq threads that read for this batch the scheduling policy
 * and priority (as sched_setscheduler); new ones inherit the submitting
 * thread's instead, so change that thread first. Returns 0 or the first
 * -errno. */
int probe_sc_batch_iowq_setsched(struct probe_sc_batch *b, int policy, int priority);

#endif /* PROBE_SYSCALL_BATCH_H */
