/*
 * backend_uring.c — the io_uring backend (liburing 2.3).
 *
 * Submission is deferred: an op only prepares its SQE and parks the fiber;
 * SQEs go to the kernel in one io_uring_enter at the next poll (or the
 * flush before a blocking one), or earlier when sqe_limit of them are
 * waiting. io_uring_sq_ready() is the count of prepared SQEs: it also
 * covers those a short submit left behind. Each SQE carries a pooled op context
 * holding two references, the kernel's (dropped at its CQE) and the
 * fiber's (dropped when the op returns), so that:
 *  - an op whose memory is the op context's own (sleep, wait_io, connect,
 *    accept without an address) can return at once when interrupted: it
 *    sends IORING_OP_ASYNC_CANCEL and detaches; the late CQE only drops
 *    the kernel's reference (a late accepted fd is closed);
 *  - an op that borrows the caller's buffers waits for its CQE after the
 *    cancel, because the kernel may still write to them until then.
 * Cross-thread wakeups: an eventfd is kept read by one internal SQE.
 */
#include "fl_internal.h"

#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
/* The kernel fills read buffers behind valgrind's back: tell it. */
#define MARK_DEFINED(buf, n) ((n) > 0 ? (void)VALGRIND_MAKE_MEM_DEFINED((buf), (size_t)(n)) : (void)0)
#endif
#endif
#ifndef MARK_DEFINED
#define MARK_DEFINED(buf, n) ((void)0)
#endif

#define FL__DEFAULT_ENTRIES   1024
#define FL__DEFAULT_SQE_LIMIT 64
#define FL__CHAIN_MAX         32

enum uop_kind { UOP_IO = 1, UOP_ACCEPT, UOP_WAKE };

struct uop {
	uint8_t        kind;       /* enum uop_kind */
	uint8_t        done;       /* CQE seen */
	int            refs;       /* kernel + fiber */
	int            res;        /* cqe->res */
	fl_fiber      *fiber;      /* to resume; NULL once detached */
	unsigned      *chain_left; /* chain: ops of the chain still in flight */
	struct uop    *next_free;
	struct uop    *retry_next; /* in uring.cancels */
	union {                    /* memory the kernel reads, owned by the op */
		struct __kernel_timespec ts;
		struct sockaddr_storage  addr;
		uint64_t                 evbuf;
	} u;
};

struct uring {
	struct io_uring ring;
	struct fl_loop *loop;      /* borrowed: the owner (op context counts) */
	unsigned        sqe_limit; /* prepared SQEs (io_uring_sq_ready) that force a submit */
	unsigned        inflight;  /* op contexts the kernel still holds */
	struct uop     *free;      /* pool */
	int             efd;       /* cross-thread wakeup eventfd */
	struct uop     *wake;
	int             stopping;
	/* SQ full and the kernel took nothing: retried at the next poll */
	struct uop     *cancels;   /* ops whose cancel SQE did not fit (each holds a ref) */
	int             wake_lost; /* the wake read could not be re-armed */
};

static inline struct uring *U(struct fl_loop *l)
{
	return l->be_data;
}

/* ---- op contexts ---------------------------------------------------------- */

static struct uop *uop_get(struct uring *u, struct fl_loop *l, uint8_t kind)
{
	struct uop *op = u->free;
	if (FL__LIKELY(op))
		u->free = op->next_free;
	else if (!(op = malloc(sizeof(*op))))
		return NULL;
	op->kind = kind;
	op->done = 0;
	op->refs = 2;
	op->res = 0;
	op->fiber = l->current;
	op->chain_left = NULL;
	fl__opctx_add(l, 1);
	return op;
}

static inline void uop_put(struct uring *u, struct uop *op)
{
	if (--op->refs)
		return;
	op->next_free = u->free;
	u->free = op;
	fl__opctx_add(u->loop, -1);
}

/* ---- submission ----------------------------------------------------------- */

/*
 * Hands the prepared SQEs to the kernel. The kernel may take fewer (-EBUSY
 * or -EAGAIN while the CQ overflows or memory is short, or a short count):
 * what it left stays counted by io_uring_sq_ready() and goes with the next
 * submission or poll, never lost. Returns what io_uring_submit did.
 */
static int submit(struct uring *u)
{
	return io_uring_submit(&u->ring);
}

static struct io_uring_sqe *get_sqe(struct uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	if (FL__UNLIKELY(!sqe)) {
		/* SQ full: hand the batch to the kernel now */
		submit(u);
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

static void sqe_prepared(struct uring *u)
{
	if (io_uring_sq_ready(&u->ring) >= u->sqe_limit)
		submit(u);
}

/* Takes an op context and an SQE bound to it; NULL when out of memory. */
static struct io_uring_sqe *op_start(struct fl_loop *l, struct uop **out, uint8_t kind)
{
	struct uring *u = U(l);
	struct uop *op = uop_get(u, l, kind);
	if (!op)
		return NULL;
	struct io_uring_sqe *sqe = get_sqe(u);
	if (!sqe) {
		op->refs = 1;
		uop_put(u, op);
		return NULL;
	}
	io_uring_sqe_set_data(sqe, op);
	u->inflight++;
	fl__pending_inc(l);
	*out = op;
	return sqe;
}

static int prep_cancel(struct uring *u, struct uop *op)
{
	struct io_uring_sqe *sqe = get_sqe(u);
	if (FL__UNLIKELY(!sqe))
		return -EBUSY;
	io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)op, 0);
	io_uring_sqe_set_data(sqe, NULL); /* its own CQE is ignored */
	sqe_prepared(u);
	return 0;
}

/*
 * A lost cancel would park its fiber for ever (an op on the caller's
 * buffers waits for its CQE): when even a submit made no room, the op is
 * kept (with a reference) for the next poll to cancel.
 */
static void send_cancel(struct uring *u, struct uop *op)
{
	if (FL__LIKELY(prep_cancel(u, op) == 0))
		return;
	op->refs++;
	op->retry_next = u->cancels;
	u->cancels = op;
}

/*
 * Parks until the op completes and returns its result. detachable: the op
 * owns all memory the kernel touches, so an interrupt may return at once.
 */
static int op_wait(struct fl_loop *l, struct uop *op, int detachable)
{
	struct uring *u = U(l);
	sqe_prepared(u);
	fl__op_park(l);
	if (FL__LIKELY(op->done)) {
		int res = op->res;
		uop_put(u, op);
		return res;
	}
	int err = fl__take_interrupt(l);
	send_cancel(u, op);
	if (detachable) {
		op->fiber = NULL;
		uop_put(u, op);
		return err;
	}
	while (!op->done)
		fl__op_park(l);
	/* Completed anyway: report what happened, nothing was lost. A failure
	 * now is the cancel's doing, whatever the kernel called it (a splice
	 * interrupted in io-wq reports -ERESTARTSYS). */
	int res = op->res < 0 ? err : op->res;
	l->current->interrupt = fl__interrupt_rest(l->current);
	uop_put(u, op);
	return res;
}

/* ---- completions ---------------------------------------------------------- */

/* A lost wake read would lose every later cross-thread wakeup: when the SQ
 * has no room even after a submit, the next poll re-arms it. */
static void arm_wake(struct uring *u)
{
	struct io_uring_sqe *sqe = get_sqe(u);
	if (FL__UNLIKELY(!sqe)) {
		u->wake_lost = 1;
		return;
	}
	u->wake_lost = 0;
	io_uring_prep_read(sqe, u->efd, &u->wake->u.evbuf, sizeof(u->wake->u.evbuf), 0);
	io_uring_sqe_set_data(sqe, u->wake);
	u->wake->done = 0;
	u->inflight++;
	sqe_prepared(u);
}

static void complete(struct fl_loop *l, struct uring *u, struct uop *op, int res)
{
	u->inflight--;
	if (op->kind == UOP_WAKE) {
		op->done = 1;
		if (!u->stopping)
			arm_wake(u);
		fl__drain_xq(l);
		return;
	}
	op->res = res;
	op->done = 1;
	fl__pending_dec(l);
	FL__STAT_ADD(l, completions, 1);
	if (op->fiber) {
		if (!op->chain_left || --*op->chain_left == 0)
			fl__schedule(l, op->fiber, NULL, 0);
	} else if (op->kind == UOP_ACCEPT && res >= 0) {
		close(res); /* accepted after its fiber gave up: nobody owns it */
	}
	uop_put(u, op);
}

static void reap(struct fl_loop *l, struct uring *u)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	io_uring_for_each_cqe(&u->ring, head, cqe) {
		struct uop *op = io_uring_cqe_get_data(cqe);
		n++;
		if (op)
			complete(l, u, op, cqe->res);
	}
	io_uring_cq_advance(&u->ring, n);
}

/* Sends what a full SQ refused earlier (see send_cancel, arm_wake). */
static void retry_lost(struct uring *u)
{
	if (u->wake_lost && !u->stopping)
		arm_wake(u);
	struct uop *list = u->cancels;
	u->cancels = NULL;
	while (list) {
		struct uop *op = list;
		list = op->retry_next;
		if (op->done || prep_cancel(u, op) == 0) {
			uop_put(u, op);
		} else {
			op->retry_next = u->cancels;
			u->cancels = op;
		}
	}
}

/*
 * A non-blocking poll enters the kernel only when it has something to do:
 * SQEs to submit (including those a short or -EBUSY submit left),
 * completions deferred as task work (COOP_TASKRUN, see uring_init), or CQEs
 * in the kernel's overflow list, which only an enter with GETEVENTS moves
 * into the CQ ring; a loop whose runqueue never empties would otherwise
 * never see them. Overflowed CQEs are flushed after a reap made room.
 */
static void uring_poll(struct fl_loop *l, int64_t timeout_ns)
{
	struct uring *u = U(l);
	struct io_uring_cqe *cqe;
	if (FL__UNLIKELY(u->cancels || u->wake_lost))
		retry_lost(u);
	if (timeout_ns == 0) {
		if (io_uring_sq_ready(&u->ring))
			submit(u); /* any entry runs the deferred completions too */
		else if (IO_URING_READ_ONCE(*u->ring.sq.kflags) & IORING_SQ_TASKRUN)
			io_uring_get_events(&u->ring);
	} else if (timeout_ns < 0) {
		io_uring_submit_and_wait(&u->ring, 1);
	} else {
		struct __kernel_timespec ts = { .tv_sec = timeout_ns / 1000000000,
						.tv_nsec = timeout_ns % 1000000000 };
		io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
	}
	reap(l, u);
	if (FL__UNLIKELY(io_uring_cq_has_overflow(&u->ring))) {
		io_uring_get_events(&u->ring);
		reap(l, u);
	}
}

/* Submission before a blocking poll, kept out of poll_time_ns: with it
 * the poll's io_uring_enter only waits. */
static void uring_flush(struct fl_loop *l)
{
	struct uring *u = U(l);
	if (FL__UNLIKELY(u->cancels || u->wake_lost))
		retry_lost(u);
	if (io_uring_sq_ready(&u->ring))
		submit(u);
}

/* ---- setup ---------------------------------------------------------------- */

static int uring_init(struct fl_loop *l, const struct fl_options *o)
{
	struct uring *u = calloc(1, sizeof(*u));
	int err;
	if (!u)
		return -ENOMEM;
	u->loop = l;
	unsigned entries = o && o->ring_entries ? o->ring_entries : FL__DEFAULT_ENTRIES;
	u->sqe_limit = o && o->sqe_limit ? o->sqe_limit : FL__DEFAULT_SQE_LIMIT;
	if (u->sqe_limit > entries)
		u->sqe_limit = entries;
	/* Completions run as task work. By default the kernel interrupts the
	 * loop's thread for each one (an IPI when it runs elsewhere: a VM exit
	 * here, paid by whoever completed the I/O, e.g. the peer's send).
	 * COOP_TASKRUN defers them to the loop's next kernel entry instead,
	 * and TASKRUN_FLAG says when one is waiting, so a poll that does not
	 * block enters only then. Measured on echo at 200 connections: 64 B
	 * +35 %, 4 KiB +15 % messages/s (docs/performance.md). Kernels before
	 * 5.19 refuse the flags: retry without them. */
	struct io_uring_params p = { .flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
						       IORING_SETUP_TASKRUN_FLAG };
	err = io_uring_queue_init_params(entries, &u->ring, &p);
	if (err == -EINVAL) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SUBMIT_ALL;
		err = io_uring_queue_init_params(entries, &u->ring, &p);
	}
	if (err < 0)
		goto fail_free;
	u->efd = eventfd(0, EFD_CLOEXEC); /* blocking: io_uring then polls it */
	if (u->efd < 0) {
		err = -errno;
		goto fail_ring;
	}
	l->be_data = u;
	u->wake = uop_get(u, l, UOP_WAKE);
	if (!u->wake) {
		err = -ENOMEM;
		goto fail_efd;
	}
	u->wake->fiber = NULL;
	arm_wake(u);
	return 0;

fail_efd:
	close(u->efd);
fail_ring:
	io_uring_queue_exit(&u->ring);
fail_free:
	free(u);
	l->be_data = NULL;
	return err;
}

static void uring_done(struct fl_loop *l)
{
	struct uring *u = U(l);
	u->stopping = 1;
	send_cancel(u, u->wake);
	/* detached ops and the wake read must complete before their
	 * contexts (and the ring) go away */
	while (u->inflight) {
		retry_lost(u);
		io_uring_submit_and_wait(&u->ring, 1);
		reap(l, u);
		if (io_uring_cq_has_overflow(&u->ring))
			io_uring_get_events(&u->ring);
	}
	retry_lost(u); /* every op is done now: drops their references */
	u->wake->refs = 1;
	uop_put(u, u->wake);
	for (struct uop *op = u->free, *next; op; op = next) {
		next = op->next_free;
		free(op);
	}
	close(u->efd);
	io_uring_queue_exit(&u->ring);
	free(u);
	l->be_data = NULL;
}

static int uring_wait_fd(struct fl_loop *l)
{
	return U(l)->ring.ring_fd;
}

static void uring_wakeup(struct fl_loop *l)
{
	eventfd_write(U(l)->efd, 1);
}

/* ---- ops ------------------------------------------------------------------ */

#define OP_START(kind)                                          \
	struct uop *op;                                         \
	struct io_uring_sqe *sqe = op_start(l, &op, (kind));    \
	if (!sqe)                                               \
		return -ENOMEM

static ssize_t uring_read(struct fl_loop *l, int fd, void *buf, size_t len)
{
	OP_START(UOP_IO);
	io_uring_prep_read(sqe, fd, buf, len, (uint64_t)-1);
	int res = op_wait(l, op, 0);
	MARK_DEFINED(buf, res);
	return res;
}

static ssize_t uring_write(struct fl_loop *l, int fd, const void *buf, size_t len)
{
	OP_START(UOP_IO);
	io_uring_prep_write(sqe, fd, buf, len, (uint64_t)-1);
	return op_wait(l, op, 0);
}

static ssize_t uring_writev(struct fl_loop *l, int fd, const struct iovec *iov, int cnt)
{
	OP_START(UOP_IO);
	io_uring_prep_writev(sqe, fd, iov, cnt, (uint64_t)-1);
	return op_wait(l, op, 0);
}

static ssize_t uring_recv(struct fl_loop *l, int fd, void *buf, size_t len, int flags)
{
	OP_START(UOP_IO);
	io_uring_prep_recv(sqe, fd, buf, len, flags);
	int res = op_wait(l, op, 0);
	MARK_DEFINED(buf, res);
	return res;
}

static ssize_t uring_send(struct fl_loop *l, int fd, const void *buf, size_t len, int flags)
{
	OP_START(UOP_IO);
	io_uring_prep_send(sqe, fd, buf, len, flags);
	return op_wait(l, op, 0);
}

static ssize_t uring_sendmsg(struct fl_loop *l, int fd, const struct msghdr *m, int flags)
{
	OP_START(UOP_IO);
	io_uring_prep_sendmsg(sqe, fd, m, (unsigned)flags);
	return op_wait(l, op, 0);
}

static int uring_accept(struct fl_loop *l, int fd, struct sockaddr *a, socklen_t *alen)
{
	OP_START(UOP_ACCEPT);
	io_uring_prep_accept(sqe, fd, a, alen, SOCK_CLOEXEC);
	int res = op_wait(l, op, a == NULL);
	if (a && res >= 0) {
		MARK_DEFINED(alen, sizeof(*alen));
		MARK_DEFINED(a, *alen);
	}
	return res;
}

static int uring_connect(struct fl_loop *l, int fd, const struct sockaddr *a, socklen_t alen)
{
	if (alen > sizeof(struct sockaddr_storage))
		return -EINVAL;
	OP_START(UOP_IO);
	memcpy(&op->u.addr, a, alen);
	io_uring_prep_connect(sqe, fd, (struct sockaddr *)&op->u.addr, alen);
	return op_wait(l, op, 1);
}

static int uring_sleep(struct fl_loop *l, uint64_t ns)
{
	OP_START(UOP_IO);
	op->u.ts.tv_sec = (long long)(ns / 1000000000u);
	op->u.ts.tv_nsec = (long long)(ns % 1000000000u);
	io_uring_prep_timeout(sqe, &op->u.ts, 0, 0);
	int res = op_wait(l, op, 1);
	return res == -ETIME ? 0 : res;
}

static int uring_wait_io(struct fl_loop *l, int fd, int events)
{
	OP_START(UOP_IO);
	unsigned mask = (events & FL_READABLE ? POLLIN : 0) | (events & FL_WRITABLE ? POLLOUT : 0);
	io_uring_prep_poll_add(sqe, fd, mask);
	return op_wait(l, op, 1);
}

static ssize_t uring_splice(struct fl_loop *l, int fd_in, int fd_out, size_t len)
{
	OP_START(UOP_IO);
	io_uring_prep_splice(sqe, fd_in, -1, fd_out, -1, (unsigned)len, SPLICE_F_MOVE);
	return op_wait(l, op, 0);
}

/* Linked SQEs: each starts only when the previous one succeeded. */
static ssize_t uring_chain(struct fl_loop *l, const struct fl_chain_op *ops, int n)
{
	struct uring *u = U(l);
	struct uop *uops[FL__CHAIN_MAX];
	unsigned left = 0;
	if (n < 1 || n > FL__CHAIN_MAX)
		return -EINVAL;
	/* a chain must not be split across two submissions */
	if (io_uring_sq_space_left(&u->ring) < (unsigned)n + 1)
		submit(u);
	for (int i = 0; i < n; i++) {
		const struct fl_chain_op *c = &ops[i];
		struct io_uring_sqe *sqe = op_start(l, &uops[i], UOP_IO);
		if (!sqe)
			abort(); /* cannot unprepare the linked SQEs before it */
		switch (c->kind) {
		case FL_CHAIN_WRITE:
			io_uring_prep_write(sqe, c->fd, c->buf, (unsigned)c->len, (uint64_t)-1);
			break;
		case FL_CHAIN_SEND:
			io_uring_prep_send(sqe, c->fd, c->buf, c->len, c->flags | MSG_NOSIGNAL);
			break;
		default:
			io_uring_prep_splice(sqe, c->fd_in, -1, c->fd, -1, (unsigned)c->len, SPLICE_F_MOVE);
			break;
		}
		if (i + 1 < n)
			io_uring_sqe_set_flags(sqe, IOSQE_IO_LINK);
		uops[i]->chain_left = &left;
		left++;
	}
	sqe_prepared(u);
	fl__op_park(l);
	if (left) {
		int err = fl__take_interrupt(l);
		/* cancelling the running op fails the rest of the chain */
		for (int i = 0; i < n; i++)
			if (!uops[i]->done)
				send_cancel(u, uops[i]);
		while (left)
			fl__op_park(l);
		l->current->interrupt = fl__interrupt_rest(l->current);
		for (int i = 0; i < n; i++)
			if (uops[i]->res < 0) /* see op_wait() */
				uops[i]->res = err;
	}
	/* the first failure decides; the ops after it report -ECANCELED */
	ssize_t res = uops[n - 1]->res;
	for (int i = 0; i < n; i++) {
		if (uops[i]->res < 0) {
			res = uops[i]->res;
			break;
		}
	}
	for (int i = 0; i < n; i++)
		uop_put(u, uops[i]);
	return res;
}

const struct fl__backend fl__backend_uring = {
	.name = "io_uring",
	.kind = LOOPSTAT_BACKEND_IO_URING,
	.init = uring_init,
	.done = uring_done,
	.wait_fd = uring_wait_fd,
	.poll = uring_poll,
	.flush = uring_flush,
	.wakeup = uring_wakeup,
	.read = uring_read,
	.write = uring_write,
	.writev = uring_writev,
	.recv = uring_recv,
	.send = uring_send,
	.sendmsg = uring_sendmsg,
	.accept = uring_accept,
	.connect = uring_connect,
	.sleep = uring_sleep,
	.wait_io = uring_wait_io,
	.splice = uring_splice,
	.chain = uring_chain,
};
