// SPDX-License-Identifier: GPL-2.0
/*
 * loopstat.bpf.c — exact loop figures from kernel tracepoints.
 *
 * Programs on the poll-family syscalls' and close's tracepoints, and
 * tp_btf on sched_switch and process exit, keep, per thread of a watched
 * thread group (or, with watch_all, of any thread that enters a
 * poll-family wait):
 *   - each poll key's waits, returns, returned events and time (up to
 *     LSB_SLOTS keys: an epoll or ring fd each, one for all poll/select
 *     sets), and which key is the loop's (lead): the epoll/ring fd waited
 *     on most, the older on a tie; a thread with none is a plain poll loop
 *     whose sets are its poll (probe_loop.h's rule, without reading sets);
 *   - busy spans (the loop poll's exit to its next entry) in a log-linear
 *     histogram, their count, sum and max;
 *   - time on a CPU, run-queue wait (the scheduler's own count) and
 *     off-CPU time by the syscall it was in (asleep, or waiting for a CPU
 *     inside it), that syscall read from its saved user registers as
 *     /proc/PID/syscall reads it, when it leaves the CPU;
 *   - a stall event (ring buffer) once per span that passes stall_us, with
 *     the user stack where it was seen (the frame-pointer walk, and the
 *     registers with a copy of the stack's top for a DWARF unwind): at the
 *     exit of the syscall it blocked in, when preempted, on a CPU's clock
 *     tick, or at the next poll wait (over by then: no use for a stack).
 * A thread's entry is marked when it exits (sched_process_exit), made
 * anew when its tid is reused, and deleted by the user side once read.
 * The figures are cumulative; the user side adds what is in progress.
 * A thread's entry is written only where it runs (its syscalls, its
 * switches), so plain adds suffice.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "loopstat_bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_EXITING 0x00000004 /* include/linux/sched.h: not in BTF (a macro) */

__u32 watch_all = 0;  /* 1: every thread entering a poll-family wait */
__u32 stall_us = 0;   /* 0: no stall events */
/* Watched thread groups, one bit per tgid, written by the user side
 * through the mmap'd .bss: every syscall and switch on the host passes
 * this test first, and an array bit costs a fraction of a hash lookup
 * (the 1000-idle-loop bench: 1.3 % of a core host-wide with a hash). */
__u32 watched_bits[LSB_TGID_WORDS] = {};
/* Who waits in its loop's poll now (loopstat_bpf.h's LSB_IN_POLL): the
 * sampler counts such a thread idle without reading its syscall file. */
__u64 in_poll[LSB_IN_POLL] = {};

static __always_inline void in_poll_set(__u32 tid, __u64 stamp)
{
	in_poll[tid & (LSB_IN_POLL - 1)] = (__u64)tid << 32 | stamp;
}

/* Allocated as threads come: preallocated (an LRU map always is) its 8192
 * entries of 2.4 KB were 19.5 MB and a quarter of the load's CPU in every
 * run. Full, a new thread goes uncounted; the user side deletes exited
 * threads' entries once a full read has them (bpf_read.c). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, LSB_THREADS);
	__type(key, __u32);
	__type(value, struct lsb_thread);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4 * LSB_THREADS);
	__type(key, struct lsb_offkey);
	__type(value, struct lsb_offval);
} offcpu SEC(".maps");

/* a zeroed value to create thread entries from: too big for the stack */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lsb_thread);
} zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1024 * 1024); /* ~120 events of 8 KB between two drains */
} stalls SEC(".maps");

static __always_inline __u32 msb64(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

static __always_inline int is_watched(__u32 tgid)
{
	return watched_bits[(tgid >> 5) & (LSB_TGID_WORDS - 1)] & (1U << (tgid & 31));
}

/* The thread's entry; create 1: made for a watched tgid, 2: made anyway. */
static __always_inline struct lsb_thread *thread_get(__u32 tid, __u32 tgid, int create)
{
	int w = is_watched(tgid);
	if (!w && !watch_all)
		return NULL; /* the fast path of every other thread on the host */
	struct lsb_thread *t = bpf_map_lookup_elem(&threads, &tid);
	/* an exited thread's entry, or one of another thread group (the tid
	 * reused): its figures are not this thread's */
	int stale = t && (t->dead || t->tgid != tgid);
	if ((t && !stale) || !create)
		return stale ? NULL : t;
	if (!w && create < 2)
		return NULL;
	__u32 z = 0;
	struct lsb_thread *tmpl = bpf_map_lookup_elem(&zero, &z);
	if (!tmpl)
		return NULL;
	bpf_map_update_elem(&threads, &tid, tmpl, stale ? BPF_ANY : BPF_NOEXIST);
	t = bpf_map_lookup_elem(&threads, &tid);
	if (!t)
		return NULL;
	if (t->tgid == 0)
		lsb_thread_init(t, tgid);
	return t;
}

static __always_inline void off_add(__u32 tid, __s32 nr, __u64 ns)
{
	struct lsb_offkey k = { .tid = tid, .nr = nr };
	struct lsb_offval *v = bpf_map_lookup_elem(&offcpu, &k);
	if (v) {
		v->ns += ns;
		v->count++;
		return;
	}
	struct lsb_offval nv = { .ns = ns, .count = 1 };
	bpf_map_update_elem(&offcpu, &k, &nv, BPF_ANY);
}

#define LSB_ENOSYS 38 /* ENOSYS: a macro, not in BTF */

/* The syscall p is in, from its saved user registers, as /proc/PID/syscall
 * reads it; -1 outside one. x86-64's syscall entry leaves -ENOSYS in ax
 * until the call returns, where a fault's or an interrupt's entry leaves
 * the user's rax (and a fault's error code in orig_ax). */
static __always_inline __s32 task_nr(struct task_struct *p)
{
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(p);
	long nr = BPF_CORE_READ(r, orig_ax), ax = BPF_CORE_READ(r, ax);
	return nr >= 0 && ax == -LSB_ENOSYS ? (__s32)nr : -1;
}

/* The loop's poll: the epoll/ring slot with the most waits (older on a
 * tie); with none, the set slot. */
static __always_inline __s32 leader(struct lsb_thread *t)
{
	__s32 best = -1, set = -1;
	for (int i = 0; i < LSB_SLOTS; i++) {
		struct lsb_slot *s = &t->slot[i];
		if (s->kind == LSB_KIND_SET) {
			set = i;
			continue;
		}
		if (!s->kind)
			continue;
		if (best < 0) {
			best = i;
			continue;
		}
		struct lsb_slot *b = &t->slot[best & (LSB_SLOTS - 1)];
		if (s->waits > b->waits || (s->waits == b->waits && s->born < b->born))
			best = i;
	}
	return best >= 0 ? best : set;
}

/* The slot for (fd, kind): found, a free one, or the least-waited one
 * that is not the loop's. */
static __always_inline __s32 slot_get(struct lsb_thread *t, __s32 fd, __u32 kind)
{
	__s32 freei = -1, victim = -1;
	for (int i = 0; i < LSB_SLOTS; i++) {
		struct lsb_slot *s = &t->slot[i];
		if (s->kind == kind && s->fd == fd)
			return i;
		if (!s->kind) {
			if (freei < 0)
				freei = i;
		} else if (i != t->lead &&
			   (victim < 0 || s->waits < t->slot[victim & (LSB_SLOTS - 1)].waits)) {
			victim = i;
		}
	}
	__s32 i = freei >= 0 ? freei : victim;
	if (i < 0)
		return -1;
	struct lsb_slot *s = &t->slot[i & (LSB_SLOTS - 1)];
	t->gone_wait_ns += s->wait_ns;
	__builtin_memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->kind = kind;
	s->born = t->seq;
	return i;
}

/* A closed epoll/ring fd is forgotten, as the sampler forgets a closed
 * candidate: a nested loop that creates, waits on and closes an epoll fd
 * under the same number each time never accumulates waits against the loop's. */
static __always_inline void slot_forget(struct lsb_thread *t, __s32 fd)
{
	for (int i = 0; i < LSB_SLOTS; i++) {
		struct lsb_slot *s = &t->slot[i];
		if (s->kind && s->kind != LSB_KIND_SET && s->fd == fd) {
			t->gone_wait_ns += s->wait_ns;
			__builtin_memset(s, 0, sizeof(*s));
			s->fd = LSB_FD_NONE;
			if (t->lead == i)
				t->lead = leader(t);
		}
	}
}

#define SET_POLLFDS 16 /* pollfd entries looked at for a known epoll fd */

/* The slot of an epoll fd this thread waits on that a poll/select set
 * holds (the EventMachine shape: select() on the epoll fd, then
 * epoll_wait(0)): that wait is on the loop's epoll fd, as the sampler
 * reads the sets. -1 when the sets hold none of its epoll fds. */
static __always_inline __s32 set_epoll(struct lsb_thread *t, long nr, __u64 a0, __u64 a1)
{
	for (int i = 0; i < LSB_SLOTS; i++) {
		struct lsb_slot *sl = &t->slot[i];
		if (sl->kind != LSB_KIND_EPOLL || sl->fd < 0 || sl->fd >= 1024)
			continue;
		__u32 ufd = (__u32)sl->fd;
		if (nr == LSB_NR_select || nr == LSB_NR_pselect6) {
			__u64 word = 0;
			if (a1 && ufd < a0 && bpf_probe_read_user(&word, sizeof(word), (void *)(a1 + (ufd / 64) * 8)) == 0 &&
			    (word >> (ufd % 64) & 1))
				return i;
			continue;
		}
		for (int k = 0; k < SET_POLLFDS && k < (int)a1; k++) {
			__s32 fd = -1;
			if (bpf_probe_read_user(&fd, sizeof(fd), (void *)(a0 + (__u64)k * 8)) == 0 && fd == sl->fd)
				return i;
		}
	}
	return -1;
}

/* A stall event is due: t's span passed the threshold, none sent for it. */
static __always_inline int stall_due(struct lsb_thread *t, __u64 now)
{
	__u32 lim = stall_us;
	return lim && t->span_start && !t->stall_sent && now - t->span_start >= (__u64)lim * 1000;
}

/* The stall event of the current task, t, in syscall nr (-1 none,
 * LSB_STALL_ENDED), once stall_due(). */
static __always_inline void stall_emit(void *ctx, struct lsb_thread *t, __u32 tid, __s32 nr, __u64 now)
{
	t->stall_sent = 1;
	struct lsb_stall *e = bpf_ringbuf_reserve(&stalls, sizeof(*e), 0);
	if (!e)
		return;
	e->tid = tid;
	e->tgid = t->tgid;
	e->nr = nr;
	e->span_ns = now - t->span_start;
	e->ts = now;
	e->stack_len = bpf_get_stack(ctx, e->stack, sizeof(e->stack), BPF_F_USER_STACK);
	/* the registers and the top of the stack, as a perf sample has them */
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	e->arg0 = BPF_CORE_READ(r, di);   /* saved at the syscall's entry: its first argument */
	e->pc = BPF_CORE_READ(r, ip);
	e->sp = BPF_CORE_READ(r, sp);
	e->fp = BPF_CORE_READ(r, bp);
	e->pad = 0;
	/* page by page: near its top (a fiber's stack) the copy would cross
	 * the mapping's end, and a read that fails copies nothing */
	__u32 first = 4096 - (__u32)(e->sp & 4095), more;
	e->copy_len = 0;
	if (first > 4096)
		first = 4096;
	if (bpf_probe_read_user(e->copy, first, (void *)e->sp) == 0) {
		e->copy_len = first;
		more = LSB_STACK_COPY - first;
		if (more > 4096)
			more = 4096;
		if (bpf_probe_read_user(e->copy + first, more, (void *)(e->sp + first)) == 0)
			e->copy_len = first + more;
	}
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void span_end(struct lsb_thread *t, __u64 now)
{
	if (!t->span_start)
		return;
	__u64 v = now - t->span_start;
	__u32 idx = lsb_bucket_of(msb64(v), v);
	t->hist[idx & (LSB_HIST - 1)]++;
	t->spans++;
	t->span_ns += v;
	if (v > t->span_max)
		t->span_max = v;
	t->span_start = 0;
}

/*
 * The poll-family syscalls and close are seen by their own tracepoints
 * (syscalls:sys_enter_epoll_wait, ...: perf events the user side opens,
 * probe_bpf_open), so the host's other syscalls run no program: one at
 * every syscall's entry and exit was most of the source's cost on a busy
 * host (bench/bpf cpu, docs/performance.md). Where those tracepoints'
 * ids cannot be read, raw_polls: ls_sys_enter and ls_sys_exit see every
 * syscall and pass the same calls on. ls_sys_exit also sees stalls in a
 * blocking syscall as it returns, attached for that only while stalls
 * are asked for.
 */
__u32 raw_polls = 0;  /* 1: the raw programs carry the poll-family calls */

static __always_inline int poll_enter(void *ctx, long id, __u64 a0, __u64 a1, __u64 a2, __u64 a3)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pt, tgid = pt >> 32;
	struct lsb_thread *t = thread_get(tid, tgid, watch_all ? 2 : 1);
	if (!t)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	t->cur_nr = id;
	t->cur_slot = -1;
	t->enter_ns = now;
	__s32 fd = 0;
	__u32 kind = lsb_poll_key(id, a0, a1, a2, a3, &fd);
	if (!kind)
		return 0;
	if (kind == LSB_KIND_SET) {
		__s32 e = set_epoll(t, id, a0, a1);
		if (e >= 0) {
			fd = t->slot[e & (LSB_SLOTS - 1)].fd;
			kind = LSB_KIND_EPOLL;
		}
	}
	__s32 i = slot_get(t, fd, kind);
	if (i < 0)
		return 0;
	t->slot[i & (LSB_SLOTS - 1)].waits++;
	t->seq++;
	t->cur_slot = i;
	t->lead = leader(t);
	if (i == t->lead) {
		if (stall_due(t, now))
			stall_emit(ctx, t, tid, LSB_STALL_ENDED, now);
		span_end(t, now);
		in_poll_set(tid, (__u32)(now >> 10) | 1);
	}
	return 0;
}

/* The wait's time, its return and events (ret > 0); a span starts if it
 * was the loop's. */
static __always_inline int poll_exit(long ret)
{
	__u64 pt = bpf_get_current_pid_tgid();
	struct lsb_thread *t = thread_get((__u32)pt, pt >> 32, 0);
	if (!t)
		return 0;
	__s32 i = t->cur_slot;
	if (i == t->lead)
		in_poll_set((__u32)pt, 0);
	if (i >= 0 && i < LSB_SLOTS) {
		__u64 now = bpf_ktime_get_ns();
		struct lsb_slot *s = &t->slot[i];
		s->wait_ns += now - t->enter_ns;
		s->returns++;
		if (ret > 0 && s->kind != LSB_KIND_RING)
			s->events += ret;
		if (i == t->lead) {
			t->span_start = now;
			t->stall_sent = 0;
		}
	}
	t->cur_nr = -1;
	t->cur_slot = -1;
	return 0;
}

static __always_inline int close_enter(__u64 fd)
{
	__u64 pt = bpf_get_current_pid_tgid();
	struct lsb_thread *t = thread_get((__u32)pt, pt >> 32, 0);
	if (t)
		slot_forget(t, (__s32)fd);
	return 0;
}

/* One program each at the entries and the returns of the poll-family
 * syscalls and one at close's entry, each attached to those syscalls'
 * tracepoints (bpf_attach.c: the record says which syscall): one
 * verification each, not one per syscall. */
SEC("tracepoint")
int ls_poll_in(struct trace_event_raw_sys_enter *ctx)
{
	long id = (__s32)ctx->id;   /* the record's syscall_nr is an int: its padding is no part of it */
	if (!lsb_is_poll_nr(id))
		return 0;
	/* the arguments from the saved registers: a program may read no
	 * further into the record than its shortest tracepoint's (poll: 3) */
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	return poll_enter(ctx, id, BPF_CORE_READ(r, di), BPF_CORE_READ(r, si), BPF_CORE_READ(r, dx),
			  BPF_CORE_READ(r, r10));
}

SEC("tracepoint")
int ls_poll_out(struct trace_event_raw_sys_exit *ctx)
{
	return poll_exit(ctx->ret);
}

SEC("tracepoint")
int ls_close_in(struct trace_event_raw_sys_enter *ctx)
{
	return close_enter(ctx->args[0]);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(ls_sys_enter, struct pt_regs *regs, long id)
{
	if (id == LSB_NR_close)
		return close_enter(BPF_CORE_READ(regs, di));
	if (!lsb_is_poll_nr(id))
		return 0;
	return poll_enter(ctx, id, BPF_CORE_READ(regs, di), BPF_CORE_READ(regs, si), BPF_CORE_READ(regs, dx),
			  BPF_CORE_READ(regs, r10));
}

SEC("tp_btf/sys_exit")
int BPF_PROG(ls_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pt;
	struct lsb_thread *t = thread_get(tid, pt >> 32, 0);
	if (!t)
		return 0;   /* the fast path of every other thread on the host */
	long nr = BPF_CORE_READ(regs, orig_ax);
	if (lsb_is_poll_nr(nr))
		return raw_polls ? poll_exit(ret) : 0;
	__u64 now = bpf_ktime_get_ns();
	if (stall_due(t, now))   /* blocked past the threshold: seen as it returns, with the stack there */
		stall_emit(ctx, t, tid, (__s32)nr, now);
	return 0;
}

/* Run-queue wait from the scheduler's own count (CONFIG_SCHED_INFO, as
 * /proc/PID/schedstat's second field), read as p leaves the CPU: it holds
 * every wait before this stint. A program at every wake-up on the host
 * cost more than the switches' (most of a watched thread's wake-up was its
 * map entry's cache misses); the wait still in progress is added only
 * when preempted (rq_start). */
static __always_inline void rq_read(struct lsb_thread *t, struct task_struct *p)
{
	if (!bpf_core_field_exists(p->sched_info))
		return;
	__u64 delay = p->sched_info.run_delay, count = p->sched_info.pcount;
	if (!t->rq_based) {   /* counted from the first switch seen */
		t->rq_base = delay;
		t->rq_count_base = count;
		t->rq_based = 1;
	}
	/* never below a preempted wait added at its switch-in */
	if (delay - t->rq_base > t->rq_ns)
		t->rq_ns = delay - t->rq_base;
	t->rq_count = count - t->rq_count_base;
}

/* Where prev (t's task) waits as it leaves the CPU: LSB_OFF_LOOP in the
 * loop's own poll (its registers not read), its syscall, -1 outside one. */
static __always_inline __s32 off_key(struct lsb_thread *t, struct task_struct *prev)
{
	if (t->cur_nr >= 0)
		return t->cur_slot >= 0 && t->cur_slot == t->lead ? LSB_OFF_LOOP : t->cur_nr;
	return task_nr(prev);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ls_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	/* every switch on the host passes here: the task pointers are read
	 * directly (tp_btf's are trusted; a helper call each costs more than
	 * the test), and the clock only once a watched thread is involved */
	__u64 now = 0;
	__u32 ptid = prev->pid, ntid = next->pid;
	/* an exiting thread's switches (it may sleep on its way out) would
	 * make its entry anew */
	int pexit = prev->flags & PF_EXITING, nexit = next->flags & PF_EXITING;
	struct lsb_thread *t = ptid && !pexit ? thread_get(ptid, prev->tgid, 1) : NULL;
	if (t) {
		now = bpf_ktime_get_ns();
		if (t->oncpu_start)
			t->oncpu_ns += now - t->oncpu_start;
		t->oncpu_start = 0;
		t->off_nr = off_key(t, prev);
		rq_read(t, prev);
		if (prev->__state == 0) { /* TASK_RUNNING: preempted, queued again */
			t->rq_start = now;
			if (stall_due(t, now))
				stall_emit(ctx, t, ptid, t->off_nr == LSB_OFF_LOOP ? -1 : t->off_nr, now);
		} else {
			t->off_start = now;
		}
	}
	t = ntid && !nexit ? thread_get(ntid, next->tgid, 1) : NULL;
	if (t) {
		if (!now)
			now = bpf_ktime_get_ns();
		t->oncpu_start = now;
		/* off-CPU time counts where a syscall other than the loop's poll
		 * held it: asleep there, and waiting for a CPU inside it once
		 * woken or preempted (its own clock around the call counts that
		 * too), so no wake-up need be seen */
		__u64 since = t->rq_start ? t->rq_start : t->off_start;   /* preempted, or asleep */
		if (since && t->off_nr >= 0)
			off_add(ntid, t->off_nr, now - since);
		/* the preempted wait, until the scheduler's count has it
		 * (rq_read): the reading it was in never goes back */
		if (t->rq_start)
			t->rq_ns += now - t->rq_start;
		t->rq_start = 0;
		t->off_start = 0;
	}
	return 0;
}

/* A thread's end: its entry is marked, so that a thread given its tid
 * later (in the same thread group too: a pid reused by clone3 with
 * set_tid, a restarted service) starts from nothing, not from a dead
 * thread's poll and span in progress; its last figures stay readable. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(ls_sched_process_exit, struct task_struct *p)
{
	struct lsb_thread *t = thread_get(p->pid, p->tgid, 0);
	if (t) {
		t->dead = 1;
		t->span_start = 0;   /* no span goes on past its end */
		in_poll_set(p->pid, 0);
	}
	return 0;
}

/* A CPU's clock tick (a perf event per CPU, 100 Hz, attached while stalls
 * are asked for): a thread on a CPU past the threshold in a span is seen
 * there, at the moment, with its stack. Without it a span spent on a CPU
 * with neither a syscall nor a preemption would be seen only at its end. */
SEC("perf_event")
int ls_tick(struct bpf_perf_event_data *ctx)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pt;
	if (!tid)
		return 0;
	struct lsb_thread *t = thread_get(tid, pt >> 32, 0);
	__u64 now = bpf_ktime_get_ns();
	if (t && stall_due(t, now))
		stall_emit(ctx, t, tid, task_nr(bpf_get_current_task_btf()), now);
	return 0;
}
