/*
 * ops_misc.c — accept/connect, readiness, processes, splice and chains:
 * the common half (checks, loops, pipes, pidfds) of every backend.
 */
#include "fl_internal.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SPLICE_CHUNK (64 * 1024)

int fl_accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
	FL__OP_PROLOGUE(l, fd);
	if (addr && !addrlen)
		return -EINVAL;
	for (;;) {
		int err = fl__op_begin(l);
		if (err)
			return err;
		int n = l->be->accept(l, fd, addr, addrlen);
		if (n == -EAGAIN) {
			if ((err = fl__op_begin(l)) || (err = l->be->wait_io(l, fd, FL_READABLE)) < 0)
				return err;
			continue;
		}
		return n;
	}
}

int fl_accept_loop(int fd, fl_accept_fn cb, void *arg)
{
	if (!cb)
		return -EINVAL;
	for (;;) {
		int c = fl_accept(fd, NULL, NULL);
		if (c < 0)
			return c;
		if (cb(arg, c))
			return 0;
	}
}

int fl_connect(int fd, const struct sockaddr *addr, socklen_t addrlen)
{
	FL__OP_PROLOGUE(l, fd);
	if (!addr)
		return -EFAULT;
	int err = fl__op_begin(l);
	if (err)
		return err;
	err = l->be->connect(l, fd, addr, addrlen);
	if (err == -EINPROGRESS) {
		/* a non-blocking socket: wait, then ask for the outcome */
		int so = 0;
		socklen_t sl = sizeof(so);
		if ((err = fl__op_begin(l)) || (err = l->be->wait_io(l, fd, FL_WRITABLE)) < 0)
			return err;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &sl) < 0)
			return -errno;
		return -so;
	}
	return err;
}

int fl_wait_io(int fd, int events)
{
	FL__OP_PROLOGUE(l, fd);
	if (!(events & (FL_READABLE | FL_WRITABLE)))
		return -EINVAL;
	int err = fl__op_begin(l);
	if (err)
		return err;
	return l->be->wait_io(l, fd, events);
}

/*
 * Without pidfds (kernel < 5.3, valgrind, or pidfd_open refused by a
 * seccomp profile) the child is polled, backing off from 1 to 64 ms. Not
 * libev's ev_child: it needs libev's default loop, whose SIGCHLD handler
 * reaps every child of the process, the application's own included.
 */
static int waitpid_polling(pid_t pid, int *status)
{
	double delay = 0.001;
	for (;;) {
		int st = 0;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r < 0) {
			/* same errors as the pidfd path: ESRCH for no such process */
			int e = errno;
			if (e == ECHILD && kill(pid, 0) < 0 && errno == ESRCH)
				e = ESRCH;
			return -e;
		}
		if (r == pid) {
			if (status)
				*status = st;
			return pid;
		}
		int err = fl_sleep(delay);
		if (err)
			return err;
		if (delay < 0.064)
			delay *= 2;
	}
}

int fl_waitpid(pid_t pid, int *status)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return -EPERM;
	if (pid <= 0)
		return -EINVAL;
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0 && (errno == ENOSYS || errno == EPERM))
		return waitpid_polling(pid, status);
	if (pfd < 0)
		return -errno;
	int err = fl__op_begin(l);
	if (!err)
		err = l->be->wait_io(l, pfd, FL_READABLE);
	if (err >= 0) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PIDFD, (id_t)pfd, &si, WEXITED) < 0) {
			err = -errno;
		} else {
			err = pid;
			if (status)
				*status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8
								 : (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
		}
	}
	close(pfd);
	return err;
}

ssize_t fl_splice(int fd_in, int fd_out, size_t len)
{
	FL__OP_PROLOGUE(l, fd_in);
	if (fd_out < 0)
		return -EBADF;
	int err = fl__op_begin(l);
	if (err)
		return err;
	return l->be->splice(l, fd_in, fd_out, fl__io_clamp(len));
}

ssize_t fl_splice_to_eof(int fd_in, int fd_out, size_t chunk)
{
	ssize_t total = 0;
	if (!chunk)
		chunk = SPLICE_CHUNK;
	for (;;) {
		ssize_t n = fl_splice(fd_in, fd_out, chunk);
		if (n < 0)
			return n;
		if (n == 0)
			return total;
		total += n;
	}
}

/* Moves exactly n bytes already in the pipe to fd_out. */
static ssize_t drain_pipe(int pipe_r, int fd_out, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t m = fl_splice(pipe_r, fd_out, n - done);
		if (m < 0)
			return m;
		if (m == 0)
			return -EPIPE;
		done += (size_t)m;
	}
	return (ssize_t)done;
}

static ssize_t write_affix(int fd, const char *s, fl_chunk_affix_fn fn, void *arg, size_t chunk_len)
{
	char tmp[256];
	if (fn) {
		size_t n = fn(arg, chunk_len, tmp, sizeof(tmp));
		/* n >= cap: the text was cut (snprintf style, its NUL in the
		 * last byte): sending it would corrupt the stream */
		if (n >= sizeof(tmp))
			return -ENOBUFS;
		return n ? fl_write(fd, tmp, n) : 0;
	}
	return s && *s ? fl_write(fd, s, strlen(s)) : 0;
}

ssize_t fl_splice_chunks(int fd_in, int fd_out, const struct fl_splice_chunks *o)
{
	FL__OP_PROLOGUE(l, fd_in);
	(void)l;
	if (fd_out < 0)
		return -EBADF;
	struct fl_splice_chunks none = { 0 };
	if (!o)
		o = &none;
	size_t chunk = o->chunk_size ? o->chunk_size : SPLICE_CHUNK;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	ssize_t total = 0, n;

	if ((n = write_affix(fd_out, o->prefix, NULL, NULL, 0)) < 0)
		goto out;
	total += n;
	for (;;) {
		ssize_t got = fl_splice(fd_in, p[1], chunk);
		if ((n = got) <= 0)
			break;
		if ((n = write_affix(fd_out, o->chunk_prefix, o->chunk_prefix_fn, o->arg, (size_t)got)) < 0)
			goto out;
		total += n;
		if ((n = drain_pipe(p[0], fd_out, (size_t)got)) < 0)
			goto out;
		total += n;
		if ((n = write_affix(fd_out, o->chunk_postfix, o->chunk_postfix_fn, o->arg, (size_t)got)) < 0)
			goto out;
		total += n;
	}
	if (n < 0)
		goto out;
	if ((n = write_affix(fd_out, o->postfix, NULL, NULL, 0)) < 0)
		goto out;
	total += n;
	n = total;
out:
	close(p[0]);
	close(p[1]);
	return n;
}

/*
 * A chain on a backend without linked ops: each op runs after the previous
 * one succeeded, writes and sends to their full length (a linked SQE waits
 * for its whole buffer too), and the first failure or interrupt ends it.
 * Returns the last op's result (bytes) or that failure.
 */
static ssize_t chain_in_order(struct fl_loop *l, const struct fl_chain_op *ops, int n)
{
	ssize_t res = 0;
	for (int i = 0; i < n; i++) {
		const struct fl_chain_op *c = &ops[i];
		size_t done = 0;
		if (i && l->current->interrupt)
			return fl__take_interrupt(l);
		do {
			const char *p = (const char *)c->buf + done;
			if (c->kind == FL_CHAIN_WRITE)
				res = l->be->write(l, c->fd, p, c->len - done);
			else if (c->kind == FL_CHAIN_SEND)
				res = l->be->send(l, c->fd, p, c->len - done, c->flags | MSG_NOSIGNAL);
			else
				res = l->be->splice(l, c->fd_in, c->fd, c->len);
			if (res == -EAGAIN) {
				int ev = c->kind == FL_CHAIN_SPLICE ? FL_READABLE : FL_WRITABLE;
				int w = l->be->wait_io(l, c->kind == FL_CHAIN_SPLICE ? c->fd_in : c->fd, ev);
				if (w < 0)
					return w;
				continue;
			}
			if (res < 0)
				return res;
			done += (size_t)res;
		} while (c->kind != FL_CHAIN_SPLICE && done < c->len);
		res = (ssize_t)done;
	}
	return res;
}

ssize_t fl_chain(const struct fl_chain_op *ops, int n)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return -EPERM;
	if (!ops || n < 1 || n > 32)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		const struct fl_chain_op *c = &ops[i];
		if (c->kind < FL_CHAIN_WRITE || c->kind > FL_CHAIN_SPLICE)
			return -EINVAL;
		if (c->fd < 0 || (c->kind == FL_CHAIN_SPLICE && c->fd_in < 0))
			return -EBADF;
		if (c->kind != FL_CHAIN_SPLICE && !c->buf && c->len)
			return -EFAULT;
		/* a linked SQE transfers its whole length in one request */
		if (c->len > FL__IO_MAX)
			return -EINVAL;
	}
	int err = fl__op_begin(l);
	if (err)
		return err;
	FL__STAT_ADD(l, ops, (uint64_t)n - 1); /* one op per linked SQE */
	return l->be->chain ? l->be->chain(l, ops, n) : chain_in_order(l, ops, n);
}
