/*
 * loopstat_bpf.h — the layout the kernel programs (loopstat.bpf.c) and the
 * user side (probes/src/bpf/) share: per-thread figures in the `threads`
 * map, off-CPU time by syscall in `offcpu`, stall events in `stalls`.
 *
 * Only __u32/__u64/__s32 types: the BPF side takes them from vmlinux.h,
 * the user side from <linux/types.h>, included before this header.
 * Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns).
 */
#ifndef LOOPSTAT_BPF_H
#define LOOPSTAT_BPF_H

#define LSB_SLOTS   4     /* poll keys kept per thread: epoll/ring fds, or a poll/select set */
#define LSB_HIST    512   /* busy-span histogram buckets (lsb_bucket_of) */
#define LSB_SUB_BITS 4
#define LSB_SUB     (1 << LSB_SUB_BITS) /* buckets per octave */
#define LSB_STACK   32    /* user frames in a stall event */
#define LSB_STACK_COPY 8192 /* bytes of user stack copied from sp into a stall event: the user
                             * side unwinds them by DWARF CFI, through code built without frame
                             * pointers (libc), where the kernel's own walk goes astray */
#define LSB_THREADS 8192  /* threads the kernel keeps figures for */
#define LSB_TGID_WORDS (1 << 17) /* the watched bitmap: every pid up to PID_MAX_LIMIT (2^22) */
/* Which threads wait in their loop's poll now, by tid modulo this: the
 * tid in the high half, the wait's start (>> 10, odd) in the low, 0 there
 * when out of it. Read through the mmap'd .bss, no syscall a thread. */
#define LSB_IN_POLL (1 << 16)

#define LSB_FD_NONE (-2)  /* a free slot */
#define LSB_FD_SET  (-1)  /* poll/ppoll/select/pselect6 with fds: one slot for all sets */
/* io_uring_enter on a registered ring passes an index, not an fd */
#define LSB_RING_REGISTERED 0x40000000

enum lsb_kind { LSB_KIND_EPOLL = 1, LSB_KIND_RING = 2, LSB_KIND_SET = 3 };

struct lsb_slot {
	__s32 fd;       /* epoll or ring fd (| LSB_RING_REGISTERED), LSB_FD_SET, LSB_FD_NONE */
	__u32 kind;     /* enum lsb_kind; 0 when free */
	__u64 born;     /* the thread's wait sequence number when first seen: ties go to the older */
	__u64 waits;    /* entries */
	__u64 returns;  /* exits */
	__u64 events;   /* sum of positive returns (epoll, poll, select: ready events or fds) */
	__u64 wait_ns;  /* time inside these waits, completed ones only */
};

struct lsb_thread {
	__u32 tgid;
	__s32 lead;          /* slot of the loop's poll, -1 none (the loop-poll rule, probe_loop.h) */
	__s32 cur_nr;        /* poll-family syscall in progress, -1 none */
	__s32 cur_slot;      /* slot of its wait, -1 none (or a sleep: no fds) */
	__u64 enter_ns;      /* its entry */
	__u64 seq;           /* poll-family waits seen (slot ages) */
	__u64 span_start;    /* the loop poll's last exit, 0 outside a span */
	__u32 stall_sent;    /* this span already reported */
	__s32 off_nr;        /* where it last left the CPU: its syscall, LSB_OFF_LOOP, -1 none */
	__u32 dead;          /* it exited: its figures stay readable until its tid is reused */
	__u32 rq_based;      /* rq_base and rq_count_base are set */
	__u64 off_start;     /* left the CPU voluntarily, 0 when not */
	__u64 rq_start;      /* preempted, waiting for a CPU; 0 when not */
	__u64 oncpu_start;   /* switched in, 0 when off */
	__u64 oncpu_ns;      /* time on a CPU, completed stints */
	__u64 rq_ns;         /* run-queue wait, completed, as of its last switch out */
	__u64 rq_count;      /* stints on a CPU after a wait, as of the same */
	__u64 rq_base, rq_count_base; /* the scheduler's counts when first seen */
	__u64 spans;         /* completed busy spans of the loop poll */
	__u64 span_ns;       /* their sum */
	__u64 span_max;
	__u64 gone_wait_ns;  /* wait_ns of slots forgotten (closed) or evicted: not the loop's */
	struct lsb_slot slot[LSB_SLOTS];
	__u32 hist[LSB_HIST]; /* busy spans, log-linear: lsb_bucket() */
};

/* lsb_thread.off_nr inside the loop's own poll: idle, not blocked, never an lsb_offkey */
#define LSB_OFF_LOOP (-2)

struct lsb_offkey {
	__u32 tid;
	__s32 nr;            /* the syscall (not the loop's own poll: that is idle) */
};

struct lsb_offval {
	__u64 ns;
	__u64 count;
};

/* lsb_stall.nr of a stall first seen at the loop poll's entry: over, its stack the poll's */
#define LSB_STALL_ENDED (-2)

struct lsb_stall {
	__u32 tid, tgid;
	__s32 nr;            /* syscall at the time, -1 running (preempted), LSB_STALL_ENDED */
	__s32 stack_len;     /* bytes of stack[] filled, or -errno */
	__u64 span_ns;       /* the span so far */
	__u64 ts;            /* CLOCK_MONOTONIC */
	__u64 stack[LSB_STACK];
	__u64 arg0;          /* the syscall's first argument, when nr >= 0 */
	__u64 pc, sp, fp;    /* the user registers */
	__u32 copy_len;      /* bytes of copy[] read from sp, 0 when unreadable */
	__u32 pad;
	__u8  copy[LSB_STACK_COPY];
};

/* x86-64 syscall numbers (the Makefile builds the bpf source there only) */
#define LSB_NR_close          3
#define LSB_NR_poll           7
#define LSB_NR_select         23
#define LSB_NR_epoll_wait     232
#define LSB_NR_pselect6       270
#define LSB_NR_ppoll          271
#define LSB_NR_epoll_pwait    281
#define LSB_NR_io_uring_enter 426
#define LSB_NR_epoll_pwait2   441
#define LSB_IORING_GETEVENTS  (1U << 0)
#define LSB_IORING_REGISTERED (1U << 4)

/* A thread's entry as first made, on either side (the programs, and the
 * monitor seeding one it finds in a syscall): of tgid, nothing seen yet. */
static inline void lsb_thread_init(struct lsb_thread *t, __u32 tgid)
{
	t->tgid = tgid;
	t->lead = -1;
	t->cur_nr = -1;
	t->cur_slot = -1;
	t->off_nr = -1;
	for (int i = 0; i < LSB_SLOTS; i++)
		t->slot[i].fd = LSB_FD_NONE;
}

static inline int lsb_is_poll_nr(long nr)
{
	return nr == LSB_NR_epoll_wait || nr == LSB_NR_epoll_pwait || nr == LSB_NR_epoll_pwait2 ||
	       nr == LSB_NR_io_uring_enter || nr == LSB_NR_poll || nr == LSB_NR_ppoll || nr == LSB_NR_select ||
	       nr == LSB_NR_pselect6;
}

/* The poll key of syscall nr with argument registers a0..a3: its fd (or
 * LSB_FD_SET) and kind, or 0 when it waits for no events (a sleep: poll
 * or select on no fds; an io_uring_enter that only submits). Shared by the
 * programs and the user side's seeding of threads parked before attach. */
static inline __u32 lsb_poll_key(long nr, __u64 a0, __u64 a1, __u64 a2, __u64 a3, __s32 *fd)
{
	switch (nr) {
	case LSB_NR_epoll_wait:
	case LSB_NR_epoll_pwait:
	case LSB_NR_epoll_pwait2:
		*fd = (__s32)a0;
		return LSB_KIND_EPOLL;
	case LSB_NR_io_uring_enter:
		if (!((__u32)a3 & LSB_IORING_GETEVENTS) || (__u32)a2 == 0)
			return 0;
		*fd = (__s32)a0 | (((__u32)a3 & LSB_IORING_REGISTERED) ? LSB_RING_REGISTERED : 0);
		return LSB_KIND_RING;
	case LSB_NR_poll:
	case LSB_NR_ppoll:
		if (a1 == 0)
			return 0;
		*fd = LSB_FD_SET;
		return LSB_KIND_SET;
	case LSB_NR_select:
	case LSB_NR_pselect6:
		if (a0 == 0)
			return 0;
		*fd = LSB_FD_SET;
		return LSB_KIND_SET;
	}
	return 0;
}

/*
 * Bucket of a span of v ns (msb: its highest set bit): 16 linear
 * sub-buckets per power of two, 6.25 % wide, so that a bucket's middle is
 * within about 3 % of any span in it (a pure log2 histogram is a factor
 * of 2 wide: too coarse for a p99 within 5 %). Values below 16 ns index
 * themselves; spans past 2^35 ns (34 s) share the last bucket.
 */
static inline __u32 lsb_bucket_of(__u32 msb, __u64 v)
{
	if (v < LSB_SUB)
		return (__u32)v;
	__u32 idx = (msb - LSB_SUB_BITS + 1) * LSB_SUB + (__u32)((v >> (msb - LSB_SUB_BITS)) & (LSB_SUB - 1));
	return idx < LSB_HIST ? idx : LSB_HIST - 1;
}

/* The lower bound of bucket idx, in ns (the upper is that of idx + 1). */
static inline __u64 lsb_bucket_lo(__u32 idx)
{
	if (idx < LSB_SUB)
		return idx;
	__u32 msb = idx / LSB_SUB + LSB_SUB_BITS - 1;
	return (__u64)(LSB_SUB + idx % LSB_SUB) << (msb - LSB_SUB_BITS);
}

#endif /* LOOPSTAT_BPF_H */
