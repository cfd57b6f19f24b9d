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
 *
 * Which path is cheaper depends on the machine: the ring saves a kernel
 * entry per read, but costs an enter, io-wq wakeups and switches per tick
 * (cheaper on a VM whose null syscall costs ~1 us, dearer where it costs
 * ~0.1 us). So by default (PROBE_SC_PATH_AUTO) the batch measures both on
 * the caller's own probes: a few ticks each way at the start, two each way
 * again every PROBE_SC_RECHECK_NS or when the number of probes halves or
 * doubles, costed as CPU time of the calling thread plus its io-wq threads,
 * and uses the cheaper one in between.
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

enum probe_sc_path {
	PROBE_SC_PATH_AUTO = 0, /* chosen by measurement (the default) */
	PROBE_SC_PATH_PREAD,
	PROBE_SC_PATH_RING,     /* when the ring works; else pread */
};

/* Forces a path, or gives the choice back to measurement (AUTO). */
void probe_sc_batch_set_path(struct probe_sc_batch *b, enum probe_sc_path p);

/* The path the last probe_sc_batch_sample read with (PREAD or RING). */
enum probe_sc_path probe_sc_batch_last_path(const struct probe_sc_batch *b);

/* What a tick cost on path p for nreads reads, in ns, in place of the
 * measured CPU time: for tests of the choice. */
typedef uint64_t (*probe_sc_cost_fn)(void *arg, enum probe_sc_path p, size_t nreads);

/* Replaces the measurement by fn (NULL: measure again) and the re-check
 * interval by recheck_ns (0: PROBE_SC_RECHECK_NS). */
void probe_sc_batch_set_cost_model(struct probe_sc_batch *b, probe_sc_cost_fn fn, void *arg, uint64_t recheck_ns);

/* ---- the choice itself, separate so that it can be tested on made-up costs ---- */

#define PROBE_SC_RECHECK_NS  10000000000ull /* re-measure both paths this often */
#define PROBE_SC_START_TICKS 3u /* measured ticks each way at the start */
#define PROBE_SC_CHECK_TICKS 2u /* and at each re-check: the first ring tick may
				 * pay for io-wq threads that idled out */

struct probe_sc_choice {
	enum probe_sc_path chosen;    /* PREAD or RING, between checks */
	uint64_t best[2];             /* least ns per read seen this check: pread, ring */
	unsigned left[2];             /* measured ticks still to run each way */
	uint64_t recheck_ns;
	uint64_t next_check_ns;
	size_t   n_at_check;          /* reads per tick when the last check began */
	unsigned checks, switches;    /* checks completed; changes of path they made */
};

void probe_sc_choice_init(struct probe_sc_choice *c, uint64_t recheck_ns);

/* The path for a tick of nreads reads at now_ns; *measure is 1 when its
 * cost must be given to probe_sc_choice_record. */
enum probe_sc_path probe_sc_choice_next(struct probe_sc_choice *c, uint64_t now_ns, size_t nreads, int *measure);

/* A measured tick's cost on path p (as returned by probe_sc_choice_next). */
void probe_sc_choice_record(struct probe_sc_choice *c, enum probe_sc_path p, uint64_t cost_ns, size_t nreads);

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
