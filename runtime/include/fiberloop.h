/*
 * fiberloop.h — libfiberloop: fibers, a per-thread scheduler and I/O ops on
 * io_uring (or libev), publishing live counters for loopstat.
 *
 * Model (after Polyphony's C backend): each thread that calls fl_run() owns
 * one loop; fibers of that loop run one at a time and switch only at ops,
 * fl_snooze(), fl_suspend() and fl_await(). Every op blocks the calling
 * fiber, not the thread, and returns >= 0 or -errno, like liburing. A fiber
 * that is cancelled (fl_cancel) or whose timeout scope expires (fl_timeout)
 * sees its pending op return -ECANCELED or -ETIMEDOUT.
 *
 * Ops may only be called from a fiber (inside fl_run); outside they return
 * -EPERM.
 */
#ifndef FIBERLOOP_H
#define FIBERLOOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fiberloop_stats.h" /* FL_API, the stats writer */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fl_fiber fl_fiber;
typedef void *(*fl_fn)(void *arg);

/* ---- loop ---------------------------------------------------------------- */

struct fl_options {
	const char *backend;     /* "io_uring" or "libev"; NULL: $FL_BACKEND, else io_uring,
	                          * or libev (said once on stderr) if the ring cannot be made */
	size_t      stack_size;  /* bytes per fiber stack; 0: $FL_STACK_SIZE or 256 KiB */
	unsigned    sqe_limit;   /* prepared SQEs before a forced submit; 0: 64 */
	unsigned    ring_entries;/* io_uring SQ size; 0: 1024 */
	const char *tag;         /* thread tag in the stats slot; NULL: none */
};

/*
 * Runs a loop on the calling thread: spins main(arg) as the first fiber and
 * returns when every fiber of the loop has finished. *result (if not NULL)
 * gets main's return value. Returns 0, -EINVAL (unknown backend), -EBUSY
 * (a loop already runs on this thread) or the backend's setup error.
 */
FL_API int fl_run(fl_fn main, void *arg, const struct fl_options *opts, void **result);

/* Name of the backend of the calling thread's loop, or NULL outside fl_run. */
FL_API const char *fl_backend_name(void);

/* 1 if a backend of that name is compiled in and could be selected; for
 * io_uring, if the kernel also lets this process set up a ring (probed
 * once per process: kernel.io_uring_disabled and seccomp can refuse it). */
FL_API int fl_backend_available(const char *name);

/* ---- fibers -------------------------------------------------------------- */

/*
 * Creates a fiber running fn(arg) and schedules it (FIFO). tag (may be NULL;
 * copied by pointer: must outlive the fiber, e.g. a string literal) is
 * published as the current fiber's tag. Returns the fiber, or NULL with errno.
 * The fiber struct is freed when the fiber finishes unless a reference is
 * held (fl_fiber_ref); fl_await() needs the fiber alive or referenced.
 */
FL_API fl_fiber *fl_spin(fl_fn fn, void *arg, const char *tag);

/* Yields: the current fiber goes to the back of the runqueue. */
FL_API void fl_snooze(void);

/* Parks the current fiber until fl_schedule() it; returns the value passed. */
FL_API void *fl_suspend(void);

/*
 * Makes f runnable with `value` (returned by its fl_suspend()). Thread-safe:
 * from another thread it queues the fiber to its loop and wakes the loop's
 * poll. Scheduling an already runnable fiber does nothing; scheduling a
 * fiber blocked in an op interrupts the op (-EINTR). A cross-thread schedule
 * that reaches a loop already tearing down (every fiber finished) is
 * dropped; the loop itself is freed when fl_run() returns, so other threads
 * must stop scheduling its fibers by then (join them, or hold the loop
 * open with a fiber waiting for their last schedule).
 */
FL_API void fl_schedule(fl_fiber *f, void *value);

/* Like fl_schedule() but puts f at the front of the runqueue (priority). */
FL_API void fl_schedule_first(fl_fiber *f, void *value);

/*
 * Waits until f finishes; *result (if not NULL) gets its return value.
 * Returns 0, -EDEADLK when f is the current fiber, -EINVAL on a foreign loop.
 */
FL_API int fl_await(fl_fiber *f, void **result);

/*
 * Cancels f's pending op (it returns -ECANCELED); if f is not in an op, its
 * next op returns -ECANCELED at once. Returns 0, or -ESRCH if f finished.
 */
FL_API int fl_cancel(fl_fiber *f);

FL_API fl_fiber   *fl_current(void);                 /* NULL outside a fiber */
FL_API const char *fl_fiber_tag(const fl_fiber *f);  /* borrowed, may be NULL */
FL_API void        fl_fiber_set_tag(fl_fiber *f, const char *tag);
FL_API uint64_t    fl_fiber_id(const fl_fiber *f);   /* unique per process, >= 1 */
FL_API int         fl_fiber_done(const fl_fiber *f);
FL_API void        fl_fiber_ref(fl_fiber *f);
FL_API void        fl_fiber_unref(fl_fiber *f);
/* Lowest address of f's guard page (PROT_NONE, just below its stack). */
FL_API void       *fl_fiber_guard_page(const fl_fiber *f);

/* ---- hooks --------------------------------------------------------------- */

enum fl_trace_event {
	FL_TRACE_SWITCHPOINT = 1, /* the current fiber enters the scheduler */
	FL_TRACE_RUN,             /* fiber f is resumed */
	FL_TRACE_SCHEDULE,        /* fiber f is made runnable */
	FL_TRACE_POLL_ENTER,      /* the backend polls; arg != 0 when blocking */
	FL_TRACE_POLL_LEAVE,
};
typedef void (*fl_trace_fn)(enum fl_trace_event ev, fl_fiber *f, intptr_t arg, void *data);
typedef void (*fl_idle_fn)(void *data);

FL_API void fl_set_trace_hook(fl_trace_fn fn, void *data);

/*
 * Idle tasks (Polyphony 0.62's backend_run_idle_tasks): when the runqueue
 * empties, the loop runs them once, on the loop thread, then blocks in the
 * backend's poll (unless they made a fiber runnable). They must not switch
 * (no ops, no snooze); they may schedule fibers.
 *
 * fl_set_idle_hook: fn runs every time the loop goes idle. NULL removes it.
 *
 * fl_set_idle_period: fn runs when the loop goes idle and at least
 * `seconds` have passed since its last run, or since this call: at most
 * once per period, and never while the runqueue does not empty (a busy
 * loop is not idle). Meant for periodic housekeeping (Polyphony runs the GC
 * this way: idle_gc_period). seconds 0 or fn NULL disables it. The clock is
 * read only while going idle with a period set, never on the switch path.
 * Returns 0, -EPERM outside a loop, -EINVAL for a negative, NaN or huge
 * period (over 1e9 s).
 *
 * Both are per loop (per thread) and reset when the loop ends.
 */
FL_API void fl_set_idle_hook(fl_idle_fn fn, void *data);
FL_API int  fl_set_idle_period(double seconds, fl_idle_fn fn, void *data);

/* ---- ops: files, pipes, sockets ------------------------------------------ */

/* A growable buffer owned by the caller (free(data) when done). */
struct fl_buf {
	char  *data;
	size_t len;  /* bytes of valid data */
	size_t cap;  /* bytes allocated */
};

/*
 * One read of up to len bytes: > 0 bytes, 0 at EOF, or -errno. Like every
 * single-transfer op (read, recv, splice) it asks the kernel for at most
 * INT_MAX & ~4095 bytes at a time, as read(2) itself does.
 */
FL_API ssize_t fl_read(int fd, void *buf, size_t len);
/* Reads exactly len bytes unless EOF comes first: returns the bytes read. */
FL_API ssize_t fl_read_full(int fd, void *buf, size_t len);
/*
 * Reads into b at position pos (-1: append at b->len; the data after pos is
 * replaced), growing b as needed: one read of up to len bytes, or, when
 * to_eof, reads of len bytes until EOF. b->len = pos + bytes read. Returns
 * the bytes read or -errno (-EOVERFLOW when pos + len does not fit a
 * size_t, -ENOMEM when the buffer cannot grow that far).
 */
FL_API ssize_t fl_read_buf(int fd, struct fl_buf *b, size_t len, int to_eof, ssize_t pos);
/* Chunk callback of the *_loop ops: return 0 to go on, non-zero to stop. */
typedef int (*fl_chunk_fn)(void *arg, const char *data, size_t len);
/* Reads chunks of at most maxlen until EOF or cb stops: total bytes or -errno. */
FL_API ssize_t fl_read_loop(int fd, size_t maxlen, fl_chunk_fn cb, void *arg);

/* Writes all len bytes (looping on partial writes): len or -errno; -EIO
 * if the kernel accepts 0 bytes of a non-empty request. */
FL_API ssize_t fl_write(int fd, const void *buf, size_t len);
FL_API ssize_t fl_writev(int fd, const struct iovec *iov, int iovcnt);

FL_API ssize_t fl_recv(int fd, void *buf, size_t len, int flags);
FL_API ssize_t fl_recv_loop(int fd, size_t maxlen, fl_chunk_fn cb, void *arg);
/* Sends all len bytes (MSG_NOSIGNAL is added): len or -errno. */
FL_API ssize_t fl_send(int fd, const void *buf, size_t len, int flags);
FL_API ssize_t fl_sendv(int fd, const struct iovec *iov, int iovcnt, int flags);

/* Returns the new fd (SOCK_CLOEXEC) or -errno. addr/len may be NULL. */
FL_API int fl_accept(int fd, struct sockaddr *addr, socklen_t *addrlen);
/* Accepts until cb returns non-zero or an error: cb owns each fd. */
typedef int (*fl_accept_fn)(void *arg, int fd);
FL_API int fl_accept_loop(int fd, fl_accept_fn cb, void *arg);
FL_API int fl_connect(int fd, const struct sockaddr *addr, socklen_t addrlen);

/* ---- ops: time, events, processes ---------------------------------------- */

FL_API int fl_sleep(double seconds);
/*
 * Calls cb(arg) every `interval` seconds on a fixed schedule (start + k *
 * interval); ticks missed while the fiber was late are skipped, not
 * bunched. Stops when cb returns non-zero (returns 0) or an op fails.
 */
FL_API int fl_timer_loop(double interval, int (*cb)(void *arg), void *arg);
/*
 * Runs fn(arg) in the current fiber; if it has not returned after `seconds`,
 * its pending op (or the next one) returns -ETIMEDOUT, and so does every
 * later op inside the scope (it stays expired until fn returns). Returns
 * fn's result. Scopes nest: an outer scope that expires while an inner one
 * runs fails the inner scope's ops too. A pending fl_cancel is reported
 * (-ECANCELED) before the timeout.
 */
FL_API int fl_timeout(double seconds, int (*fn)(void *arg), void *arg);

#define FL_READABLE 1
#define FL_WRITABLE 2
/* Waits until fd is readable/writable: returns the poll revents or -errno. */
FL_API int fl_wait_io(int fd, int events);
/* Waits for child pid to exit (pidfd), reaps it: returns pid or -errno. */
FL_API int fl_waitpid(pid_t pid, int *status);
/* Parks until fl_schedule(): an op (counted, cancellable). *value gets the value. */
FL_API int fl_wait_event(void **value);

/* ---- ops: splice --------------------------------------------------------- */

/* One splice of up to len bytes (one side must be a pipe): bytes or -errno. */
FL_API ssize_t fl_splice(int fd_in, int fd_out, size_t len);
/* Splices chunks of up to chunk bytes until EOF: total bytes or -errno. */
FL_API ssize_t fl_splice_to_eof(int fd_in, int fd_out, size_t chunk);

/* Writes the per-chunk prefix/postfix for a chunk of chunk_len bytes into
 * out (capacity cap); returns its length, < cap. A length >= cap (text cut
 * short, as snprintf reports it) fails fl_splice_chunks with -ENOBUFS. */
typedef size_t (*fl_chunk_affix_fn)(void *arg, size_t chunk_len, char *out, size_t cap);
struct fl_splice_chunks {
	const char *prefix, *postfix;               /* once, before/after; may be NULL */
	const char *chunk_prefix, *chunk_postfix;   /* around every chunk; may be NULL */
	fl_chunk_affix_fn chunk_prefix_fn;          /* used instead of the string if set */
	fl_chunk_affix_fn chunk_postfix_fn;
	void  *arg;                                 /* for the callbacks */
	size_t chunk_size;                          /* 0: 64 KiB */
};
/* Copies fd_in to fd_out through a pipe with the affixes: bytes written or -errno. */
FL_API ssize_t fl_splice_chunks(int fd_in, int fd_out, const struct fl_splice_chunks *o);

/* ---- ops: chain ---------------------------------------------------------- */

enum fl_chain_kind { FL_CHAIN_WRITE = 1, FL_CHAIN_SEND, FL_CHAIN_SPLICE };
struct fl_chain_op {
	enum fl_chain_kind kind;
	int         fd;      /* WRITE/SEND: target; SPLICE: output */
	int         fd_in;   /* SPLICE: input */
	const void *buf;     /* WRITE/SEND */
	size_t      len;
	int         flags;   /* SEND: msg flags */
};
/*
 * Runs ops in order as linked SQEs (IOSQE_IO_LINK): an op starts only after
 * the previous one succeeded. Returns the last op's result, or the first
 * failing op's -errno (later ops are not run). n <= 32; each len at most
 * INT_MAX & ~4095 (-EINVAL), as a linked op is one kernel request.
 */
FL_API ssize_t fl_chain(const struct fl_chain_op *ops, int n);

/* ---- introspection ------------------------------------------------------- */

/* Process-wide live-object counters, for leak checks in tests. op_ctx
 * counts per loop (no atomic per op) and reaches these counters when the
 * loop's fl_run() returns: check it after fl_run(). */
struct fl_debug_counters {
	int64_t fibers;     /* fiber structs allocated and not freed */
	int64_t stacks;     /* stacks mapped (including the loops' stack caches) */
	int64_t op_ctx;     /* backend op contexts in use */
	int64_t loops;      /* loops running */
};
FL_API void fl_debug_counters(struct fl_debug_counters *out);

/* The calling thread's stats slot (the shm slot or a private fallback). */
FL_API struct loopstat_shm_slot *fl_stats_slot(void);

#ifdef __cplusplus
}
#endif
#endif /* FIBERLOOP_H */
