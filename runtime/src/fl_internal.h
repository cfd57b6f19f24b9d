/*
 * fl_internal.h — libfiberloop internals shared by the scheduler, the
 * common op layer and the backends. Not installed.
 */
#ifndef FL_INTERNAL_H
#define FL_INTERNAL_H

#include "fiberloop.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#if defined(__SANITIZE_ADDRESS__)
#define FL__ASAN 1
#endif

#define FL__HIDDEN __attribute__((visibility("hidden")))
#define FL__LIKELY(x) __builtin_expect(!!(x), 1)
#define FL__UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- stats: compiled out with -DFL_NO_STATS ------------------------------ */

/* The segment's file mode from LOOPSTAT_SHM_MODE text (octal digits only)
 * or from fl_stats_options.mode: 0, -EINVAL (not a mode 0..0777 readable
 * by its owner) or -EPERM (group/other write bits). stats.c. */
FL__HIDDEN int fl__stats_parse_mode(const char *text, mode_t *out);
FL__HIDDEN int fl__stats_check_mode(mode_t mode, mode_t *out);

/*
 * A counter's increment in one instruction where the ISA has an add to
 * memory: a relaxed atomic load + store compiles to load, add, store. The
 * slot has a single writer, so the read-modify-write needs no lock; its
 * 8-byte aligned store is single-copy atomic, so readers never see a torn
 * value, exactly as with fl_stat_add().
 */
static inline void fl__stat_add(uint64_t *field, uint64_t n)
{
#if defined(__x86_64__)
	__asm__("addq %1, %0" : "+m"(*field) : "er"(n));
#else
	fl_stat_add(field, n);
#endif
}

static inline void fl__stat_inc(uint64_t *field)
{
	fl__stat_add(field, 1);
}

#ifdef FL_NO_STATS
#define FL__STAT_ADD(l, field, n) ((void)(l))
#define FL__STAT_SET(l, field, v) ((void)(l))
#else
#define FL__STAT_ADD(l, field, n) fl__stat_add(&(l)->slot->field, (n))
#define FL__STAT_SET(l, field, v) fl_stat_set(&(l)->slot->field, (v))
#endif

/*
 * Largest length one backend request asks for: io_uring's SQE length is
 * 32 bits (a 4 GiB request became 0) and its result an int, and the
 * kernel caps a transfer at MAX_RW_COUNT (INT_MAX & ~PAGE_MASK) anyway.
 * The common layer clamps every request; partial I/O is allowed.
 */
#define FL__IO_MAX ((size_t)(INT_MAX & ~4095))

static inline size_t fl__io_clamp(size_t len)
{
	return len < FL__IO_MAX ? len : FL__IO_MAX;
}

/* ---- context switch (switch.S: x86-64 and aarch64) ------------------------ */

/* Saves callee-saved registers (and on x86-64 MXCSR + x87 CW) on the current
 * stack, stores sp in *save_sp, loads to_sp and restores the same from it. */
FL__HIDDEN void fl__ctx_switch(void **save_sp, void *to_sp);
/* First return address of a new fiber: calls fl__fiber_entry(fiber). */
FL__HIDDEN void fl__ctx_trampoline(void);
FL__HIDDEN void fl__fiber_entry(fl_fiber *f) __attribute__((noreturn));

/* ---- fibers -------------------------------------------------------------- */

/* Two u64 moved as one 16-byte load or store (SSE / NEON q register):
 * aligned for the slot (its single-copy atomicity needs it), and an
 * 8-byte aligned variant for the fiber, whose allocator (malloc) need not
 * give 16 (ASan's does not promise it). */
typedef uint64_t fl__u64x2 __attribute__((vector_size(16), aligned(16), may_alias));
typedef uint64_t fl__u64x2u __attribute__((vector_size(16), aligned(8), may_alias));

enum fl__fiber_state {
	FL__FIBER_RUNNABLE = 1, /* in the runqueue, or about to run */
	FL__FIBER_RUNNING,
	FL__FIBER_WAITING,      /* parked: suspend, await, op */
	FL__FIBER_DONE,
};

enum fl__wait_kind {
	FL__WAIT_NONE = 0,
	FL__WAIT_SUSPEND,       /* fl_suspend: not interruptible */
	FL__WAIT_OP,            /* backend op or wait_event: interruptible */
};

struct fl_loop;

struct fl_fiber {
	void           *sp;          /* saved stack pointer while not running */
	struct fl_loop *loop;        /* borrowed: the owning loop */
	/* What the stats slot shows while the fiber runs, laid out as the
	 * slot's current_fiber, current_tag: a switch publishes both with one
	 * 16-byte copy (publish_switch in sched.c). */
	union {
		struct {
			uint64_t id;
			uint64_t tag_index;  /* fl_stats_tag_index() of tag */
		};
		fl__u64x2u pub;
	};
	fl_fn           fn;
	void           *arg;
	void           *result;
	void           *value;       /* value passed by the schedule that resumed it */
	uint8_t         state;       /* enum fl__fiber_state */
	uint8_t         in_rq;       /* 1 while in the runqueue */
	uint8_t         wait;        /* enum fl__wait_kind */
	int             interrupt;   /* -errno the pending/next op returns, 0 none */
	unsigned        expired;     /* fired timeout scopes still open on this fiber */
	int             refs;        /* 1 while alive + fl_fiber_ref()s */
	const char     *tag;         /* borrowed */
	void           *stack;       /* mapping base (guard page first); NULL for root */
	size_t          stack_size;  /* bytes mapped, guard page included */
	fl_fiber       *awaiters;    /* fibers in fl_await() on this one */
	fl_fiber       *next_awaiter;
	void           *asan_fake;   /* ASan fake stack handle while switched out */
	const void     *asan_bottom; /* stack bounds for ASan (root: filled lazily) */
	size_t          asan_size;
	unsigned        vg_id;       /* valgrind stack id */
};

/* ---- runqueue (runqueue.c) ----------------------------------------------- */

struct fl__rq_entry {
	fl_fiber *fiber;
	void     *value;
};

struct fl__runqueue {
	struct fl__rq_entry *buf;    /* owned ring of cap entries */
	unsigned head, len, cap;     /* cap is a power of two */
	unsigned hwm;                /* highest len seen */
	uint64_t *pub_hwm, *pub_cap; /* borrowed: the stats slot's gauges */
	uint64_t scratch;            /* their target before the slot exists */
};

/* A new high-water mark is rare: publishing it inside that branch keeps
 * the gauge exact at no cost to the common push. */
static inline void fl__rq_new_hwm(struct fl__runqueue *q)
{
	q->hwm = q->len;
#ifndef FL_NO_STATS
	fl_stat_set(q->pub_hwm, q->hwm);
#endif
}

FL__HIDDEN int  fl__rq_init(struct fl__runqueue *q, unsigned cap);
FL__HIDDEN void fl__rq_done(struct fl__runqueue *q);
FL__HIDDEN int  fl__rq_grow(struct fl__runqueue *q);
FL__HIDDEN int  fl__rq_delete(struct fl__runqueue *q, fl_fiber *f);

static inline int fl__rq_push(struct fl__runqueue *q, fl_fiber *f, void *value)
{
	if (FL__UNLIKELY(q->len == q->cap) && fl__rq_grow(q) < 0)
		return -ENOMEM;
	q->buf[(q->head + q->len) & (q->cap - 1)] = (struct fl__rq_entry){ f, value };
	if (FL__UNLIKELY(++q->len > q->hwm))
		fl__rq_new_hwm(q);
	return 0;
}

static inline int fl__rq_unshift(struct fl__runqueue *q, fl_fiber *f, void *value)
{
	if (FL__UNLIKELY(q->len == q->cap) && fl__rq_grow(q) < 0)
		return -ENOMEM;
	q->head = (q->head - 1) & (q->cap - 1);
	q->buf[q->head] = (struct fl__rq_entry){ f, value };
	if (FL__UNLIKELY(++q->len > q->hwm))
		fl__rq_new_hwm(q);
	return 0;
}

/* Returns 0 and fills *e, or -EAGAIN when empty. */
static inline int fl__rq_shift(struct fl__runqueue *q, struct fl__rq_entry *e)
{
	if (!q->len)
		return -EAGAIN;
	*e = q->buf[q->head];
	q->head = (q->head + 1) & (q->cap - 1);
	q->len--;
	return 0;
}

/* ---- backend interface (loop.c selects; backend_*.c implement) ----------- */

/*
 * Every op blocks the current fiber (fl__op_park) until done and returns
 * >= 0 or -errno. An interrupt (fl_cancel, a timeout, a foreign schedule)
 * resumes the parked fiber early: the backend then cancels the op and
 * returns fl__take_interrupt(). Ops do one attempt: loops,
 * argument checks and stats of started ops live in the common layer.
 *
 * Contract for a backend (backend_uring.c, completions; backend_ev.c,
 * readiness on libev; both always linked: a weak reference would not pull
 * backend_ev.o out of libfiberloop.a):
 *  - fl__pending_inc() when an op starts waiting, fl__pending_dec() and
 *    FL__STAT_ADD(l, completions, 1) when its completion is processed;
 *    the scheduler's anti-starvation rule and the pending_ops gauge use it.
 *  - -EAGAIN may be returned: the common layer then waits with wait_io
 *    and retries (so a readiness backend can try the syscall first).
 *  - poll() schedules the fibers whose ops completed (fl__schedule), never
 *    switches, and calls fl__drain_xq() when woken by wakeup().
 *  - sleep returns 0 when the time is up; wait_io returns poll revents.
 *  - chain runs the ops in order and stops at the first failure; a
 *    backend without linked ops leaves it NULL (ops_misc.c then runs them
 *    through write/send/splice).
 *  - an op that completes without waiting may yield before returning
 *    (backend_ev.c does, as Polyphony's libev backend).
 *  - done() must not return while the kernel/loop may still touch memory
 *    of an op (io_uring: cancelled ops detached from their fiber).
 * The shared suite (tests/test_*.c through tests/support/fl_test.c) runs
 * every runtime test on each backend fl_backend_available() reports.
 */
struct fl__backend {
	const char *name;
	enum loopstat_backend kind;
	int     (*init)(struct fl_loop *l, const struct fl_options *o); /* sets l->be_data */
	void    (*done)(struct fl_loop *l);  /* waits for in-flight ops, frees */
	int     (*wait_fd)(struct fl_loop *l);
	/* timeout_ns < 0: block until an event; 0: do not block. Processes
	 * completions (scheduling fibers) and cross-thread wakeups. */
	void    (*poll)(struct fl_loop *l, int64_t timeout_ns);
	/* Before a blocking poll, outside its timing: hands prepared work to
	 * the kernel, so that poll_time_ns is time blocked waiting and not the
	 * kernel performing the batch (io_uring runs most SQEs inline at
	 * submission). NULL when poll() does no such work. */
	void    (*flush)(struct fl_loop *l);
	void    (*wakeup)(struct fl_loop *l);  /* thread-safe */
	ssize_t (*read)(struct fl_loop *l, int fd, void *buf, size_t len);
	ssize_t (*write)(struct fl_loop *l, int fd, const void *buf, size_t len);
	ssize_t (*writev)(struct fl_loop *l, int fd, const struct iovec *iov, int cnt);
	ssize_t (*recv)(struct fl_loop *l, int fd, void *buf, size_t len, int flags);
	ssize_t (*send)(struct fl_loop *l, int fd, const void *buf, size_t len, int flags);
	ssize_t (*sendmsg)(struct fl_loop *l, int fd, const struct msghdr *m, int flags);
	int     (*accept)(struct fl_loop *l, int fd, struct sockaddr *a, socklen_t *alen);
	int     (*connect)(struct fl_loop *l, int fd, const struct sockaddr *a, socklen_t alen);
	int     (*sleep)(struct fl_loop *l, uint64_t ns);
	int     (*wait_io)(struct fl_loop *l, int fd, int events);
	ssize_t (*splice)(struct fl_loop *l, int fd_in, int fd_out, size_t len);
	/* NULL: the common layer runs the ops one after another */
	ssize_t (*chain)(struct fl_loop *l, const struct fl_chain_op *ops, int n);
};

extern const struct fl__backend fl__backend_uring FL__HIDDEN;
extern const struct fl__backend fl__backend_ev FL__HIDDEN;

/* NULL name: $FL_BACKEND or io_uring. Returns NULL for an unknown name. */
FL__HIDDEN const struct fl__backend *fl__backend_find(const char *name);

/* ---- the loop ------------------------------------------------------------ */

struct fl__timeout_scope;

struct fl__xentry {               /* a cross-thread schedule request */
	fl_fiber *fiber;
	void     *value;
};

struct fl_loop {
	fl_fiber                 *current;   /* running fiber (root while in fl_run) */
	fl_fiber                 *zombie;    /* finished fiber whose stack awaits reaping */
#ifdef FL__ASAN
	fl_fiber                 *switch_from; /* the fiber the last switch left */
#endif
	struct fl__runqueue       rq;
	struct loopstat_shm_slot *slot;      /* shm slot, or &dummy_slot */
	const struct fl__backend *be;
	void                     *be_data;   /* owned by the backend */
	unsigned                  pending;   /* ops the loop waits for (switch rule) */
	uint64_t                  switches_at_poll; /* fl__switches() at the last poll */
	uint64_t                  poll_left_ns; /* CLOCK_MONOTONIC at the end of the last blocking poll, 0: none yet */
#ifdef FL_NO_STATS
	uint64_t                  switches;  /* switches done (with stats: the slot's `switches`) */
#endif
	int64_t                   opctx_live;/* op contexts in use; folded into the
					      * process-wide debug counter at exit:
					      * no atomic RMW per op */
	unsigned                  live;      /* fibers created and not finished */
	size_t                    stack_size;
	void                    **stack_cache; /* owned: free stacks for reuse */
	unsigned                  stack_cached, stack_cache_cap;
	struct fl__timeout_scope *timeouts;  /* armed timeout scopes, by deadline */
	fl_trace_fn               trace;
	void                     *trace_data;
	fl_idle_fn                idle;
	void                     *idle_data;
	fl_idle_fn                idle_period_fn; /* the periodic idle task, or NULL */
	void                     *idle_period_data;
	uint64_t                  idle_period_ns; /* its period; 0: disabled */
	uint64_t                  idle_period_last_ns; /* CLOCK_MONOTONIC ns of its last
					      * run (or of fl_set_idle_period) */
	pthread_mutex_t           xlock;     /* guards xq, xclosed, and the wakeup itself */
	struct fl__xentry        *xq;        /* owned */
	unsigned                  xlen, xcap;
	int                       xclosed;   /* teardown began: pushes are dropped */
	fl_fiber                  root;      /* the thread's own stack in fl_run */
	struct loopstat_shm_slot  dummy_slot;/* fallback when shm is unavailable */
};

extern __thread struct fl_loop *fl__tls_loop FL__HIDDEN __attribute__((tls_model("initial-exec")));

/* Scheduler core (sched.c). */
FL__HIDDEN void *fl__switch(struct fl_loop *l);      /* run the next fiber; returns my value */
FL__HIDDEN void  fl__schedule(struct fl_loop *l, fl_fiber *f, void *value, int first);
FL__HIDDEN void  fl__drain_xq(struct fl_loop *l);    /* backends call it on wakeup */
FL__HIDDEN void  fl__xq_close(struct fl_loop *l);    /* teardown: drop later pushes */
FL__HIDDEN void  fl__check_timeouts(struct fl_loop *l);
FL__HIDDEN int64_t fl__next_timeout_ns(struct fl_loop *l); /* -1: none armed */
FL__HIDDEN uint64_t fl__now_ns(void);

/* Fibers (fiber.c). */
FL__HIDDEN size_t    fl__page_size(void);   /* sysconf(_SC_PAGESIZE), cached */
FL__HIDDEN fl_fiber *fl__fiber_new(struct fl_loop *l, fl_fn fn, void *arg, const char *tag);
FL__HIDDEN void      fl__fiber_reap(struct fl_loop *l, fl_fiber *f);
FL__HIDDEN void      fl__stack_cache_done(struct fl_loop *l);
FL__HIDDEN void      fl__pending_inc(struct fl_loop *l);
FL__HIDDEN void      fl__pending_dec(struct fl_loop *l);

/*
 * The two ends of a switch, inline: they run on every switch, and as two
 * calls (to functions empty but for the zombie check) they cost ~3 % of a
 * switch (bench/switch). Only ASan has work for them: it must be told that
 * the stack changes.
 */
#ifdef FL__ASAN
FL__HIDDEN void fl__asan_before(struct fl_loop *l, fl_fiber *from, fl_fiber *to);
FL__HIDDEN void fl__asan_after(struct fl_loop *l, fl_fiber *self);
#else
static inline void fl__asan_before(struct fl_loop *l, fl_fiber *from, fl_fiber *to)
{
	(void)l, (void)from, (void)to;
}

static inline void fl__asan_after(struct fl_loop *l, fl_fiber *self)
{
	(void)l, (void)self;
}
#endif

/* First thing after any switch, on the resumed fiber's stack: a fiber that
 * finished can only be reaped once the switch has left its stack. */
static inline void fl__after_switch(struct fl_loop *l, fl_fiber *self)
{
	fl__asan_after(l, self);
	if (FL__UNLIKELY(l->zombie)) {
		fl_fiber *z = l->zombie;
		l->zombie = NULL;
		fl__fiber_reap(l, z);
	}
}

/*
 * The loop's switch count, which the anti-starvation rule runs on, is the
 * slot's `switches` counter itself: a private count for the rule beside
 * the published one was a store more per switch in the stats build. When
 * the slot is replaced (fl_stats_close() maps zeroes over it) the count
 * restarts below switches_at_poll; the unsigned difference wraps, and the
 * rule polls early once, which is harmless.
 */
static inline uint64_t *fl__switches(struct fl_loop *l)
{
#ifndef FL_NO_STATS
	return &l->slot->switches;
#else
	return &l->switches;
#endif
}

/* Debug counters (fiber.c): process-wide, atomic; for the slow paths
 * (stacks mapped, fibers, loops). Op contexts count per loop. */
FL__HIDDEN void fl__debug_add(int which, int64_t n);
enum { FL__DBG_FIBERS, FL__DBG_STACKS, FL__DBG_OPCTX, FL__DBG_LOOPS };

static inline void fl__opctx_add(struct fl_loop *l, int64_t n)
{
	l->opctx_live += n;
}

/* Common op entry: the loop of the calling fiber, or NULL (-EPERM). */
static inline struct fl_loop *fl__op_loop(void)
{
	struct fl_loop *l = fl__tls_loop;
	return l && l->current != &l->root ? l : NULL;
}

/* The common opening of every op taking an fd: ops run only inside a
 * loop's fiber (-EPERM elsewhere), and a negative fd is -EBADF at once. */
#define FL__OP_PROLOGUE(l, fd)             \
	struct fl_loop *l = fl__op_loop(); \
	if (!l)                            \
		return -EPERM;             \
	if ((fd) < 0)                      \
		return -EBADF

/*
 * Before an op starts: counts it; if the fiber has a pending interrupt the
 * op must not start and its value is returned (consumed).
 */
/*
 * What the interrupt becomes once consumed: an expired timeout scope stays
 * expired (every op inside it fails with -ETIMEDOUT) until it closes, even
 * when an inner scope or a cancel consumed the interrupt first.
 */
static inline int fl__interrupt_rest(const fl_fiber *f)
{
	return f->expired ? -ETIMEDOUT : 0;
}

static inline int fl__op_begin(struct fl_loop *l)
{
	fl_fiber *f = l->current;
	if (FL__UNLIKELY(f->interrupt)) {
		int e = f->interrupt;
		f->interrupt = fl__interrupt_rest(f);
		return e;
	}
	FL__STAT_ADD(l, ops, 1);
	return 0;
}

/*
 * Parks the current fiber until something schedules it; returns the
 * schedule's value. FL__WAIT_OP is interruptible (fl_cancel, a timeout):
 * the backend tells a completion from an interrupt by its own op state.
 * FL__WAIT_SUSPEND is not (fl_suspend, fl_await).
 */
FL__HIDDEN void *fl__park(struct fl_loop *l, enum fl__wait_kind wait);

static inline void *fl__op_park(struct fl_loop *l)
{
	return fl__park(l, FL__WAIT_OP);
}

/* The interrupt that resumed the current fiber (consumed), -EINTR if none. */
static inline int fl__take_interrupt(struct fl_loop *l)
{
	int e = l->current->interrupt;
	l->current->interrupt = fl__interrupt_rest(l->current);
	return e ? e : -EINTR;
}

#endif /* FL_INTERNAL_H */
