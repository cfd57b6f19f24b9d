/*
 * backend_ev.c — the libev backend (epoll), for kernels or containers that
 * refuse io_uring.
 *
 * Readiness, not completion: an op first tries its syscall without
 * blocking (RWF_NOWAIT, MSG_DONTWAIT or an O_NONBLOCK fd) and only on
 * -EAGAIN parks the fiber on an ev_io watcher, retrying when it fires. The
 * watcher and its op state live on the parked fiber's stack: nothing is
 * allocated per op, and an interrupted op just stops its watcher (the
 * kernel holds no buffer of ours), so every op may return at once.
 *
 * As in Polyphony's libev backend, an op that succeeded without waiting
 * yields (a snooze) before returning, so that a fiber whose fds are always
 * ready cannot starve the others; io_uring gets the same effect from its
 * park-until-CQE. Either way an op counts one op, one completion and one
 * switch.
 *
 * fds: the per-call flags leave the caller's file status alone. accept,
 * connect and splice have no such flag, so their fds are put in O_NONBLOCK
 * mode for good (as Polyphony does); the common layer already copes with
 * non-blocking fds on either backend. Regular files cannot be polled
 * (epoll refuses them): they are read and written synchronously.
 *
 * Every wait arms its watcher with ev_io_set, which makes libev confirm the
 * registration with the kernel (one epoll_ctl) at the next poll. That is
 * the price of safety: an fd number may have been closed and handed to a
 * new file since the last wait, and the kernel dropped the old file's
 * registration with it; a watcher re-armed without ev_io_set (ev_io_modify
 * semantics) would then never fire.
 */
#include "fl_internal.h"

#include <dirent.h>
#include <ev.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define FL__CONTAINER(p, T, m) ((T *)(void *)((char *)(p) - offsetof(T, m)))

struct evb {
	struct ev_loop *loop;      /* owned */
	ev_async        async;     /* cross-thread wakeups */
	ev_timer        ptimer;    /* bounds a blocking poll (timeout scopes) */
	int             epfd;      /* libev's epoll fd, published as wait_fd */
	int             progress;  /* a callback of ours ran in this poll */
};

/* One parked op: lives on the waiting fiber's stack. */
struct evop {
	union {
		ev_io    io;
		ev_timer tm;
	} w;
	fl_fiber *fiber;
	int       revents;  /* libev's, once fired */
	int       done;
};

static inline struct evb *B(struct fl_loop *l)
{
	return l->be_data;
}

/* ---- waiting ------------------------------------------------------------ */

static void fired(struct evop *op, int revents)
{
	struct fl_loop *l = op->fiber->loop;
	B(l)->progress = 1;
	op->revents = revents;
	op->done = 1;
	fl__pending_dec(l);
	fl__schedule(l, op->fiber, NULL, 0);
}

static void io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	ev_io_stop(loop, w); /* one shot: the next wait arms a fresh watcher */
	fired(FL__CONTAINER(w, struct evop, w.io), revents);
}

static void timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	fired(FL__CONTAINER(w, struct evop, w.tm), revents);
}

static void op_arm(struct fl_loop *l, struct evop *op)
{
	op->fiber = l->current;
	op->done = 0;
	fl__pending_inc(l);
	fl__opctx_add(l, 1);
}

/* Parks until the watcher fires (0) or an interrupt comes (-errno, the
 * watcher stopped by stop(), its op no longer pending). */
static int op_park(struct fl_loop *l, struct evop *op, void (*stop)(struct ev_loop *, struct evop *))
{
	fl__op_park(l);
	fl__opctx_add(l, -1);
	if (FL__LIKELY(op->done))
		return 0;
	stop(B(l)->loop, op);
	fl__pending_dec(l);
	return fl__take_interrupt(l);
}

static void stop_io(struct ev_loop *loop, struct evop *op)
{
	ev_io_stop(loop, &op->w.io);
}

static void stop_timer(struct ev_loop *loop, struct evop *op)
{
	ev_timer_stop(loop, &op->w.tm);
}

/* Waits until fd is ready for EV_READ/EV_WRITE: libev revents or -errno. */
static int wait_fd(struct fl_loop *l, int fd, int events)
{
	struct evop op;
	ev_io_init(&op.w.io, io_cb, fd, events);
	op_arm(l, &op);
	ev_io_start(B(l)->loop, &op.w.io);
	int err = op_park(l, &op, stop_io);
	if (err)
		return err;
	/* libev reports an fd epoll refused (closed, not pollable) as EV_ERROR */
	return op.revents & EV_ERROR ? -EBADF : op.revents;
}

/*
 * Ends an op: one completion, and when it did not wait and succeeded, a
 * yield so the other fibers run before this one goes on.
 */
static ssize_t finish(struct fl_loop *l, ssize_t res, int waited)
{
	FL__STAT_ADD(l, completions, 1);
	if (!waited && res >= 0) {
		fl__schedule(l, l->current, NULL, 0);
		fl__switch(l);
	}
	return res;
}

/* ---- fd modes (slow paths only) ----------------------------------------- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

/* 1 if epoll cannot watch fd (regular file, block device, directory). */
static int unpollable(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return 0;
	return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode);
}

/* ---- read / write ------------------------------------------------------- */

/*
 * One transfer. RWF_NOWAIT makes a single syscall non-blocking without
 * touching the fd's mode; fds that do not support it (some files and
 * character devices) fall back to plain calls: synchronous when epoll
 * cannot watch the fd, on an O_NONBLOCK fd otherwise.
 */
static ssize_t rw(struct fl_loop *l, int fd, const struct iovec *iov, int cnt, int is_write)
{
	int waited = 0, plain = 0, checked = 0;
	for (;;) {
		ssize_t n;
		if (FL__LIKELY(!plain))
			n = is_write ? pwritev2(fd, iov, cnt, -1, RWF_NOWAIT) : preadv2(fd, iov, cnt, -1, RWF_NOWAIT);
		else
			n = is_write ? writev(fd, iov, cnt) : readv(fd, iov, cnt);
		if (n >= 0)
			return finish(l, n, waited);
		int err = errno;
		if (err == EINTR)
			continue;
		if (err == EOPNOTSUPP && !plain) {
			plain = 1;
			if (!unpollable(fd) && (err = set_nonblock(fd)) < 0)
				return finish(l, err, waited);
			continue;
		}
		if (err != EAGAIN)
			return finish(l, -err, waited);
		/* a file whose data is not cached: readiness would never come,
		 * read it the blocking way (checked once, after a first wait) */
		if (waited && !checked) {
			checked = 1;
			if (unpollable(fd)) {
				plain = 1;
				continue;
			}
		}
		int r = wait_fd(l, fd, is_write ? EV_WRITE : EV_READ);
		if (r < 0)
			return finish(l, r, 1);
		waited = 1;
	}
}

static ssize_t evb_read(struct fl_loop *l, int fd, void *buf, size_t len)
{
	struct iovec v = { buf, len };
	return rw(l, fd, &v, 1, 0);
}

static ssize_t evb_write(struct fl_loop *l, int fd, const void *buf, size_t len)
{
	struct iovec v = { (void *)buf, len };
	return rw(l, fd, &v, 1, 1);
}

static ssize_t evb_writev(struct fl_loop *l, int fd, const struct iovec *iov, int cnt)
{
	return rw(l, fd, iov, cnt, 1);
}

/* ---- sockets ------------------------------------------------------------ */

enum sock_kind { S_RECV, S_SEND, S_SENDMSG };

static ssize_t sock_io(struct fl_loop *l, int fd, void *buf, size_t len, const struct msghdr *m, int flags,
		       enum sock_kind k)
{
	int waited = 0;
	flags |= MSG_DONTWAIT;
	for (;;) {
		ssize_t n = k == S_RECV ? recv(fd, buf, len, flags)
			  : k == S_SEND ? send(fd, buf, len, flags)
					: sendmsg(fd, m, flags);
		if (n >= 0)
			return finish(l, n, waited);
		int err = errno;
		if (err == EINTR)
			continue;
		if (err != EAGAIN)
			return finish(l, -err, waited);
		int r = wait_fd(l, fd, k == S_RECV ? EV_READ : EV_WRITE);
		if (r < 0)
			return finish(l, r, 1);
		waited = 1;
	}
}

static ssize_t evb_recv(struct fl_loop *l, int fd, void *buf, size_t len, int flags)
{
	return sock_io(l, fd, buf, len, NULL, flags, S_RECV);
}

static ssize_t evb_send(struct fl_loop *l, int fd, const void *buf, size_t len, int flags)
{
	return sock_io(l, fd, (void *)buf, len, NULL, flags, S_SEND);
}

static ssize_t evb_sendmsg(struct fl_loop *l, int fd, const struct msghdr *m, int flags)
{
	return sock_io(l, fd, NULL, 0, m, flags, S_SENDMSG);
}

static int evb_accept(struct fl_loop *l, int fd, struct sockaddr *a, socklen_t *alen)
{
	int waited = 0, err = set_nonblock(fd);
	if (err)
		return (int)finish(l, err, 0);
	for (;;) {
		int c = accept4(fd, a, alen, SOCK_CLOEXEC);
		if (c >= 0)
			return (int)finish(l, c, waited);
		err = errno;
		if (err == EINTR || err == ECONNABORTED)
			continue;
		if (err != EAGAIN)
			return (int)finish(l, -err, waited);
		int r = wait_fd(l, fd, EV_READ);
		if (r < 0)
			return (int)finish(l, r, 1);
		waited = 1;
	}
}

static int evb_connect(struct fl_loop *l, int fd, const struct sockaddr *a, socklen_t alen)
{
	int err = set_nonblock(fd);
	if (err)
		return (int)finish(l, err, 0);
	if (connect(fd, a, alen) == 0)
		return (int)finish(l, 0, 0);
	err = errno;
	if (err == EAGAIN) {
		/* unix socket with a full backlog: retry once writable */
		for (;;) {
			int r = wait_fd(l, fd, EV_WRITE);
			if (r < 0)
				return (int)finish(l, r, 1);
			if (connect(fd, a, alen) == 0)
				return (int)finish(l, 0, 1);
			if (errno != EAGAIN)
				return (int)finish(l, -errno, 1);
		}
	}
	if (err != EINPROGRESS && err != EINTR)
		return (int)finish(l, -err, 0);
	int r = wait_fd(l, fd, EV_WRITE);
	if (r < 0)
		return (int)finish(l, r, 1);
	int so = 0;
	socklen_t sl = sizeof(so);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0)
		so = errno;
	return (int)finish(l, -so, 1);
}

/* ---- readiness, time, splice -------------------------------------------- */

static int evb_wait_io(struct fl_loop *l, int fd, int events)
{
	int r = wait_fd(l, fd, (events & FL_READABLE ? EV_READ : 0) | (events & FL_WRITABLE ? EV_WRITE : 0));
	FL__STAT_ADD(l, completions, 1);
	if (r < 0)
		return r;
	return (r & EV_READ ? POLLIN : 0) | (r & EV_WRITE ? POLLOUT : 0);
}

static int evb_sleep(struct fl_loop *l, uint64_t ns)
{
	struct evb *b = B(l);
	struct evop op;
	/* libev's clock is cached at the last poll: a fiber that ran for a
	 * while would otherwise wake early */
	ev_now_update(b->loop);
	ev_timer_init(&op.w.tm, timer_cb, (ev_tstamp)ns / 1e9, 0.);
	op_arm(l, &op);
	ev_timer_start(b->loop, &op.w.tm);
	int err = op_park(l, &op, stop_timer);
	FL__STAT_ADD(l, completions, 1);
	return err;
}

/*
 * One splice. SPLICE_F_NONBLOCK covers the pipe side; the other side
 * (a socket) is made non-blocking. On -EAGAIN either side may be the one
 * not ready: wait for the input, then for the output, alternately.
 */
static ssize_t evb_splice(struct fl_loop *l, int fd_in, int fd_out, size_t len)
{
	int waited = 0, side = 0, err;
	if ((err = set_nonblock(fd_in)) < 0 || (err = set_nonblock(fd_out)) < 0)
		return finish(l, err, 0);
	for (;;) {
		ssize_t n = splice(fd_in, NULL, fd_out, NULL, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n >= 0)
			return finish(l, n, waited);
		err = errno;
		if (err == EINTR)
			continue;
		if (err != EAGAIN)
			return finish(l, -err, waited);
		int r = side ? wait_fd(l, fd_out, EV_WRITE) : wait_fd(l, fd_in, EV_READ);
		if (r < 0)
			return finish(l, r, 1);
		side = !side;
		waited = 1;
	}
}

/* ---- the loop ----------------------------------------------------------- */

static void async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	(void)w, (void)revents;
	struct fl_loop *l = ev_userdata(loop);
	B(l)->progress = 1;
	fl__drain_xq(l);
}

static void ptimer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w, (void)revents;
	struct fl_loop *l = ev_userdata(loop);
	B(l)->progress = 1; /* the poll's time is up */
}

/*
 * A blocking poll returns once one of our callbacks ran. One ev_run(ONCE)
 * is not enough: epoll_wait may return before the timer it was sized for
 * is due (libev itself pads its waits by 1 ms for that reason), and the
 * scheduler would then count a second blocking poll for one wait.
 */
static void evb_poll(struct fl_loop *l, int64_t timeout_ns)
{
	struct evb *b = B(l);
	if (timeout_ns == 0) {
		ev_run(b->loop, EVRUN_NOWAIT);
		return;
	}
	if (timeout_ns > 0) {
		ev_now_update(b->loop);
		ev_timer_set(&b->ptimer, (ev_tstamp)timeout_ns / 1e9, 0.);
		ev_timer_start(b->loop, &b->ptimer);
	}
	b->progress = 0;
	do
		ev_run(b->loop, EVRUN_ONCE);
	while (!b->progress);
	ev_timer_stop(b->loop, &b->ptimer);
}

static void evb_wakeup(struct fl_loop *l)
{
	struct evb *b = B(l);
	ev_async_send(b->loop, &b->async);
}

/*
 * libev keeps its epoll fd private. It is found as the one eventpoll
 * instance of this process whose interest list holds a probe pipe that only
 * this loop registered: /proc/self/fdinfo of an epoll fd lists the target
 * fd and inode of every registration. Setup only.
 */
static int has_target(int epfd, int tfd, unsigned long ino)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", epfd);
	FILE *f = fopen(path, "re");
	int found = 0;
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		int t;
		const char *p = strstr(line, "ino:");
		if (sscanf(line, "tfd: %d", &t) == 1 && t == tfd && p && strtoul(p + 4, NULL, 16) == ino)
			found = 1;
	}
	fclose(f);
	return found;
}

static void probe_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop, (void)w, (void)revents;
}

static int find_epoll_fd(struct ev_loop *loop)
{
	int p[2], fd = -ENOENT;
	struct stat st;
	ev_io probe;
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	ev_io_init(&probe, probe_cb, p[0], EV_READ);
	ev_io_start(loop, &probe);
	ev_run(loop, EVRUN_NOWAIT); /* registers it: epoll_ctl */
	DIR *d = fstat(p[0], &st) == 0 ? opendir("/proc/self/fd") : NULL;
	for (struct dirent *e; d && fd < 0 && (e = readdir(d));) {
		char path[64], target[64];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		int n = atoi(e->d_name);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", n);
		ssize_t len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if (strcmp(target, "anon_inode:[eventpoll]") == 0 && has_target(n, p[0], st.st_ino))
			fd = n;
	}
	if (d)
		closedir(d);
	ev_io_stop(loop, &probe);
	close(p[0]);
	close(p[1]);
	return fd;
}

static int evb_init(struct fl_loop *l, const struct fl_options *o)
{
	(void)o;
	struct evb *b = calloc(1, sizeof(*b));
	int err;
	if (!b)
		return -ENOMEM;
	/* no env, no signal mask changes: the runtime owns no signals */
	b->loop = ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOENV | EVFLAG_NOSIGMASK | EVFLAG_NOTIMERFD);
	if (!b->loop) {
		err = errno ? -errno : -ENOSYS;
		goto fail_free;
	}
	ev_set_userdata(b->loop, l);
	/* without /proc the loop still runs; it just cannot say which fd it polls */
	b->epfd = find_epoll_fd(b->loop);
	if (b->epfd < 0)
		b->epfd = -1;
	ev_async_init(&b->async, async_cb);
	ev_async_start(b->loop, &b->async);
	ev_init(&b->ptimer, ptimer_cb);
	l->be_data = b;
	return 0;

fail_free:
	free(b);
	return err;
}

static void evb_done(struct fl_loop *l)
{
	struct evb *b = B(l);
	/* ops never outlive their fibers' stacks: only our own watchers remain */
	ev_async_stop(b->loop, &b->async);
	ev_timer_stop(b->loop, &b->ptimer);
	ev_loop_destroy(b->loop);
	free(b);
	l->be_data = NULL;
}

static int evb_wait_fd(struct fl_loop *l)
{
	return B(l)->epfd;
}

const struct fl__backend fl__backend_ev = {
	.name = "libev",
	.kind = LOOPSTAT_BACKEND_LIBEV,
	.init = evb_init,
	.done = evb_done,
	.wait_fd = evb_wait_fd,
	.poll = evb_poll,
	.flush = NULL, /* epoll_wait does no submission work */
	.wakeup = evb_wakeup,
	.read = evb_read,
	.write = evb_write,
	.writev = evb_writev,
	.recv = evb_recv,
	.send = evb_send,
	.sendmsg = evb_sendmsg,
	.accept = evb_accept,
	.connect = evb_connect,
	.sleep = evb_sleep,
	.wait_io = evb_wait_io,
	.splice = evb_splice,
	.chain = NULL, /* ops_misc.c runs the chain's ops one after another */
};
