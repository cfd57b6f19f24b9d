/*
 * ops_io.c — read/write/recv/send and their variants, written once for all
 * backends: argument checks, buffer growth, loops over partial transfers,
 * and the retry on -EAGAIN for fds the user made non-blocking (io_uring
 * honours O_NONBLOCK and returns -EAGAIN instead of waiting).
 */
#include "fl_internal.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define IOV_STACK 16

/* Waits for readiness after -EAGAIN; 0 to retry or -errno. */
static int wait_ready(struct fl_loop *l, int fd, int events)
{
	int err = fl__op_begin(l);
	if (err)
		return err;
	err = l->be->wait_io(l, fd, events);
	return err < 0 ? err : 0;
}

#define RETRY_ON_EAGAIN(l, fd, ev, n)                          \
	if ((n) == -EAGAIN) {                                  \
		int werr_ = wait_ready((l), (fd), (ev));       \
		if (werr_)                                     \
			return werr_;                          \
		continue;                                      \
	}

ssize_t fl_read(int fd, void *buf, size_t len)
{
	FL__OP_PROLOGUE(l, fd);
	if (!buf && len)
		return -EFAULT;
	for (;;) {
		int err = fl__op_begin(l);
		if (err)
			return err;
		ssize_t n = l->be->read(l, fd, buf, fl__io_clamp(len));
		RETRY_ON_EAGAIN(l, fd, FL_READABLE, n);
		return n;
	}
}

ssize_t fl_read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = fl_read(fd, (char *)buf + done, len - done);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int buf_reserve(struct fl_buf *b, size_t need)
{
	if (need <= b->cap)
		return 0;
	/* no allocator gives more; doubling past it would wrap to 0 */
	if (need > PTRDIFF_MAX)
		return -ENOMEM;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < need)
		cap = cap <= PTRDIFF_MAX / 2 ? cap * 2 : need;
	char *n = realloc(b->data, cap);
	if (!n)
		return -ENOMEM;
	b->data = n;
	b->cap = cap;
	return 0;
}

ssize_t fl_read_buf(int fd, struct fl_buf *b, size_t len, int to_eof, ssize_t pos)
{
	if (!b || len == 0)
		return -EINVAL;
	size_t at = pos < 0 ? b->len : (size_t)pos;
	if (at > b->len)
		return -EINVAL;
	size_t total = 0;
	b->len = at;
	do {
		/* at + total + len must not wrap: the read would then run past
		 * a buffer that was never grown */
		if (len > SIZE_MAX - at - total)
			return -EOVERFLOW;
		int err = buf_reserve(b, at + total + len);
		if (err)
			return err;
		ssize_t n = fl_read(fd, b->data + at + total, len);
		if (n < 0)
			return n;
		if (n == 0)
			break;
		total += (size_t)n;
		b->len = at + total;
	} while (to_eof);
	return (ssize_t)total;
}

typedef ssize_t (*chunk_read_fn)(int fd, void *buf, size_t len, int flags);

static ssize_t read_adapter(int fd, void *buf, size_t len, int flags)
{
	(void)flags;
	return fl_read(fd, buf, len);
}

static ssize_t chunk_loop(int fd, size_t maxlen, fl_chunk_fn cb, void *arg, chunk_read_fn rd)
{
	if (!fl__op_loop())
		return -EPERM;
	if (!cb || maxlen == 0)
		return -EINVAL;
	char *buf = malloc(maxlen); /* once per loop, not per chunk */
	if (!buf)
		return -ENOMEM;
	ssize_t total = 0;
	for (;;) {
		ssize_t n = rd(fd, buf, maxlen, 0);
		if (n <= 0) {
			if (n < 0)
				total = n;
			break;
		}
		total += n;
		if (cb(arg, buf, (size_t)n))
			break;
	}
	free(buf);
	return total;
}

ssize_t fl_read_loop(int fd, size_t maxlen, fl_chunk_fn cb, void *arg)
{
	return chunk_loop(fd, maxlen, cb, arg, read_adapter);
}

ssize_t fl_recv_loop(int fd, size_t maxlen, fl_chunk_fn cb, void *arg)
{
	return chunk_loop(fd, maxlen, cb, arg, fl_recv);
}

/* write and send: loops on partial writes until all len bytes are out. */
static ssize_t put_all(struct fl_loop *l, int fd, const char *buf, size_t len, int is_send, int flags)
{
	size_t done = 0;
	while (done < len) {
		int err = fl__op_begin(l);
		if (err)
			return err;
		size_t want = fl__io_clamp(len - done);
		ssize_t n = is_send ? l->be->send(l, fd, buf + done, want, flags) : l->be->write(l, fd, buf + done, want);
		RETRY_ON_EAGAIN(l, fd, FL_WRITABLE, n);
		if (n < 0)
			return n;
		if (FL__UNLIKELY(n == 0))
			return -EIO; /* no progress on a non-empty request: do not spin */
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t fl_write(int fd, const void *buf, size_t len)
{
	FL__OP_PROLOGUE(l, fd);
	if (!buf && len)
		return -EFAULT;
	return put_all(l, fd, buf, len, 0, 0);
}

/* Drops the first `n` bytes from a copied iovec array; returns the new count. */
static int iov_advance(struct iovec **iov, int cnt, size_t n)
{
	while (cnt && n >= (*iov)->iov_len) {
		n -= (*iov)->iov_len;
		(*iov)++;
		cnt--;
	}
	if (cnt && n) {
		(*iov)->iov_base = (char *)(*iov)->iov_base + n;
		(*iov)->iov_len -= n;
	}
	return cnt;
}

/* writev and sendv: the iovec is copied because partial writes edit it. */
static ssize_t vec_loop(int fd, const struct iovec *iov, int cnt, int flags, int is_send)
{
	FL__OP_PROLOGUE(l, fd);
	if (cnt < 0 || cnt > IOV_MAX || (!iov && cnt))
		return -EINVAL;
	struct iovec stack[IOV_STACK], *copy = stack, *cur;
	size_t total = 0, done = 0;
	ssize_t ret;
	for (int i = 0; i < cnt; i++) {
		/* the kernel refuses a sum past SSIZE_MAX; a wrapped sum
		 * would end the loop early */
		if (iov[i].iov_len > SSIZE_MAX - total)
			return -EINVAL;
		total += iov[i].iov_len;
	}
	if (cnt > IOV_STACK && !(copy = malloc(sizeof(*copy) * (size_t)cnt)))
		return -ENOMEM;
	memcpy(copy, iov, sizeof(*copy) * (size_t)cnt);
	cur = copy;
	cnt = iov_advance(&cur, cnt, 0);
	while (done < total) {
		ret = fl__op_begin(l);
		if (ret)
			goto out;
		if (is_send) {
			struct msghdr m = { .msg_iov = cur, .msg_iovlen = (size_t)cnt };
			ret = l->be->sendmsg(l, fd, &m, flags | MSG_NOSIGNAL);
		} else {
			ret = l->be->writev(l, fd, cur, cnt);
		}
		if (ret == -EAGAIN) {
			ret = wait_ready(l, fd, FL_WRITABLE);
			if (ret)
				goto out;
			continue;
		}
		if (ret < 0)
			goto out;
		if (FL__UNLIKELY(ret == 0)) {
			ret = -EIO; /* no progress: do not spin */
			goto out;
		}
		done += (size_t)ret;
		cnt = iov_advance(&cur, cnt, (size_t)ret);
	}
	ret = (ssize_t)done;
out:
	if (copy != stack)
		free(copy);
	return ret;
}

ssize_t fl_writev(int fd, const struct iovec *iov, int iovcnt)
{
	return vec_loop(fd, iov, iovcnt, 0, 0);
}

ssize_t fl_sendv(int fd, const struct iovec *iov, int iovcnt, int flags)
{
	return vec_loop(fd, iov, iovcnt, flags, 1);
}

ssize_t fl_recv(int fd, void *buf, size_t len, int flags)
{
	FL__OP_PROLOGUE(l, fd);
	if (!buf && len)
		return -EFAULT;
	for (;;) {
		int err = fl__op_begin(l);
		if (err)
			return err;
		ssize_t n = l->be->recv(l, fd, buf, fl__io_clamp(len), flags);
		RETRY_ON_EAGAIN(l, fd, FL_READABLE, n);
		return n;
	}
}

ssize_t fl_send(int fd, const void *buf, size_t len, int flags)
{
	FL__OP_PROLOGUE(l, fd);
	if (!buf && len)
		return -EFAULT;
	return put_all(l, fd, buf, len, 1, flags | MSG_NOSIGNAL);
}
