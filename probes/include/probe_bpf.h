/*
 * probe_bpf.h — exact loop figures from kernel tracepoints (eBPF), beside
 * /proc sampling.
 *
 * The kernel side (probes/bpf/loopstat.bpf.c) counts, per thread of each
 * watched thread group: its loop poll's time, returns and returned events
 * (the loop poll chosen by probe_loop.h's rule: the epoll/ring fd it waits
 * on most; a plain poll loop's sets otherwise), busy spans (the loop
 * poll's exit to its next entry) in a histogram, time on a CPU, run-queue
 * wait and off-CPU time by syscall; spans passing a stall threshold come
 * through a ring buffer with the user stack. The figures are cumulative
 * counts the kernel measured: an interval's figure is the difference of two
 * reads, exact to the clock, with no sampling error.
 *
 *     char why[256];
 *     struct probe_bpf *b;
 *     if (probe_bpf_open(&b, why, sizeof(why)) < 0)   fall back, say why
 *     probe_bpf_watch(b, pid);
 *     n = probe_bpf_read(b, pid, threads, cap);         once a second
 *     probe_bpf_drain(b, on_stall, arg);                stalls since the last drain
 *     probe_bpf_close(b);
 *
 * Needs root, or CAP_BPF + CAP_PERFMON, and the kernel's BTF; the programs
 * are built in (a skeleton), so only libbpf is needed at run time. Built
 * without bpf (no clang/bpftool/libbpf-dev/BTF at build time), every call
 * returns -ENOSYS and probe_bpf_available() says so.
 *
 * Not locked: one handle belongs to one thread at a time.
 */
#ifndef PROBE_BPF_H
#define PROBE_BPF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROBE_BPF_HIST  512   /* span histogram buckets: probe_bpf_bucket_lo() */
#define PROBE_BPF_STACK 32

struct probe_bpf;

enum probe_bpf_loop {
	PROBE_BPF_LOOP_NONE = 0, /* no poll-family wait seen */
	PROBE_BPF_LOOP_EPOLL,    /* loop_fd is its epoll fd */
	PROBE_BPF_LOOP_RING,     /* loop_fd is its io_uring fd */
	PROBE_BPF_LOOP_SET,      /* a plain poll/select loop: loop_fd -1 */
};

/* One thread's cumulative figures as of now_ns, what is in progress included. */
struct probe_bpf_thread {
	pid_t    tid, tgid;
	uint64_t now_ns;            /* CLOCK_MONOTONIC of the read */
	enum probe_bpf_loop loop;
	int      loop_fd;
	uint64_t poll_ns;           /* inside the loop's poll */
	uint64_t poll_waits;        /* its entries */
	uint64_t poll_returns;      /* its returns */
	uint64_t poll_events;       /* events (fds) it returned; 0 for a ring */
	uint64_t other_wait_ns;     /* inside other poll-family waits (nested loops, sync waits) */
	uint64_t oncpu_ns;          /* on a CPU */
	uint64_t rq_ns, rq_count;   /* runnable, waiting for a CPU (woken or preempted) */
	uint64_t spans, span_ns;    /* completed busy spans and their sum */
	uint64_t span_max_ns;       /* the longest since the thread was first seen */
	uint64_t span_now_ns;       /* the span in progress, 0 when in the poll */
	long     cur_nr;            /* poll-family syscall in progress, -1 none */
	long     off_nr;            /* off a CPU now: as probe_bpf_off.nr */
	uint64_t off_now_ns;        /* for this long, not yet in probe_bpf_offcpu; 0 when on one */
	uint32_t hist[PROBE_BPF_HIST]; /* completed spans by bucket */
};

/* Off-CPU time of one thread in one syscall other than its loop's own
 * poll (asleep there is idle, not off-CPU time). probe_bpf_thread.off_nr
 * is also -1 (outside a syscall) or PROBE_BPF_OFF_LOOP (in the loop's poll). */
#define PROBE_BPF_OFF_LOOP (-2)
struct probe_bpf_off {
	pid_t    tid;
	long     nr;
	uint64_t ns, count;
};

struct probe_bpf_stall {
	pid_t    tid, tgid;
	long     nr;                /* syscall it was in, -1 running (preempted) */
	uint64_t arg0;              /* that syscall's first argument */
	int      ended;             /* first seen at the loop poll's entry: the stall is over and the
	                             * registers and stack are the poll's */
	uint64_t span_ns;           /* the span when seen */
	uint64_t ts_ns;             /* CLOCK_MONOTONIC */
	int      nframes;           /* 0 when the stack could not be read */
	uint64_t pc[PROBE_BPF_STACK]; /* user return addresses by the frame-pointer chain, innermost first */
	uint64_t regs_pc, sp, fp;   /* the user registers, to unwind the copy by DWARF CFI */
	size_t   stack_len;         /* bytes of stack from sp, 0 when unreadable */
	const unsigned char *stack; /* borrowed: valid during the drain's callback only */
};

/* 1 when the bpf source can load here, else 0 with the reason in why
 * ("not root and no CAP_BPF + CAP_PERFMON", "no kernel BTF", "load
 * refused: ..."). Loads the programs once per process to know. */
int probe_bpf_available(char *why, size_t len);

/* Loads and attaches the programs. Returns 0 or -errno, with the reason in why. */
int probe_bpf_open(struct probe_bpf **out, char *why, size_t len);
void probe_bpf_close(struct probe_bpf *b);

/* Thread groups to count. Watching seeds the threads already parked in a
 * syscall (from /proc/PID/task/TID/syscall), whose entry the kernel never
 * saw. Unwatching forgets its threads' figures. 0 or -errno. */
int probe_bpf_watch(struct probe_bpf *b, pid_t tgid);
int probe_bpf_unwatch(struct probe_bpf *b, pid_t tgid);
/* on: also every thread that enters a poll-family wait (host-wide discovery). */
int probe_bpf_watch_all(struct probe_bpf *b, int on);
/* Stall events for spans over ms (0: none). */
int probe_bpf_set_stall_ms(struct probe_bpf *b, double ms);
/* Whether thread tid (of a watched process) waits in its loop's poll now,
 * as the kernel saw its last entry and return: that wait's start, a
 * nonzero stamp that changes with each wait, or 0 when it is out of it or
 * unknown. A read of shared memory, no syscall. */
uint32_t probe_bpf_in_poll(const struct probe_bpf *b, pid_t tid);

/* The threads of tgid (0: all) into out[cap] (batch reads of the map).
 * Returns how many (at most cap) or -errno. */
int probe_bpf_read(struct probe_bpf *b, pid_t tgid, struct probe_bpf_thread *out, size_t cap);
/* Off-CPU time by syscall of every thread counted. Returns how many or -errno. */
int probe_bpf_offcpu(struct probe_bpf *b, struct probe_bpf_off *out, size_t cap);
/* Calls fn for each stall event waiting. Returns how many or -errno. */
int probe_bpf_drain(struct probe_bpf *b, void (*fn)(const struct probe_bpf_stall *, void *), void *arg);

/* The programs' own run time so far in ns and their runs, host-wide
 * (every event they filtered counts): the kernel's share of the source's
 * cost. Kernel run statistics are switched on (BPF_ENABLE_STATS, for this
 * handle's life) at the first call, which reads 0. 0 or -errno. */
int probe_bpf_kernel_ns(struct probe_bpf *b, uint64_t *ns, uint64_t *runs);

/* ---- spans: the histogram (no kernel needed) ---- */

/* Lower bound of bucket idx in ns; the upper is that of idx + 1. */
uint64_t probe_bpf_bucket_lo(int idx);
/* The q-quantile (0 < q <= 1, nearest rank) of the spans counted in
 * hist[] (an interval's: the difference of two reads), in ns: its place
 * among its bucket's spans, as if spread evenly, never above max_ns when
 * that falls in the bucket, and max_ns itself for the last rank (max_ns: 0
 * unknown). 0 when hist is empty. The bucket's bounds in lo and hi (either may be NULL). */
uint64_t probe_bpf_quantile(const uint32_t *hist, double q, uint64_t max_ns, uint64_t *lo, uint64_t *hi);
/* after -= before, bucket by bucket (an interval's histogram). */
void probe_bpf_hist_sub(uint32_t *after, const uint32_t *before);

#endif /* PROBE_BPF_H */
