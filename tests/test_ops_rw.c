/* read/write family on pipes (and files, eventfds): success, EOF, bad fd, closed peer, cancel and timeout while pending, late completion, buffers, loops, partial writes. */
#include "support/fl_test.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct pipes {
	int p[2];
};

static void pipes_open(struct pipes *p)
{
	cr_assert_eq(pipe2(p->p, O_CLOEXEC), 0);
}

static void pipes_close(struct pipes *p)
{
	if (p->p[0] >= 0)
		close(p->p[0]);
	if (p->p[1] >= 0)
		close(p->p[1]);
}

static void *rw_basic(void *arg)
{
	(void)arg;
	struct pipes p;
	char buf[16] = { 0 };
	pipes_open(&p);
	cr_assert_eq(fl_write(p.p[1], "hello", 5), 5);
	cr_assert_eq(fl_read(p.p[0], buf, sizeof(buf)), 5);
	cr_assert_str_eq(buf, "hello");
	close(p.p[1]);
	p.p[1] = -1;
	cr_assert_eq(fl_read(p.p[0], buf, sizeof(buf)), 0, "EOF");
	cr_assert_eq(fl_read(-1, buf, 1), -EBADF);
	cr_assert_eq(fl_read(1000000, buf, 1), -EBADF);
	cr_assert_eq(fl_write(1000000, buf, 1), -EBADF);
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, read_write_eof_badfd, .timeout = 10)
{
	fl_test_run(rw_basic, NULL);
}

static void *closed_peer(void *arg)
{
	(void)arg;
	struct pipes p;
	pipes_open(&p);
	close(p.p[0]);
	p.p[0] = -1;
	cr_assert_eq(fl_write(p.p[1], "x", 1), -EPIPE);
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, write_to_closed_peer_is_epipe, .timeout = 10)
{
	fl_test_run(closed_peer, NULL);
}

struct pending {
	int     fd;
	ssize_t res;
	char    buf[8];
};

static void *pending_reader(void *arg)
{
	struct pending *pr = arg;
	pr->res = fl_read(pr->fd, pr->buf, sizeof(pr->buf));
	return NULL;
}

static void *cancel_read(void *arg)
{
	(void)arg;
	struct pipes p;
	pipes_open(&p);
	struct pending pr = { .fd = p.p[0], .res = 1 };
	fl_fiber *f = fl_spin(pending_reader, &pr, NULL);
	fl_fiber_ref(f);
	fl_sleep(0.01); /* the read is in the kernel now */
	cr_assert_eq(fl_cancel(f), 0);
	fl_await(f, NULL);
	cr_assert_eq(pr.res, -ECANCELED);
	cr_assert_eq(fl_cancel(f), -ESRCH);
	fl_fiber_unref(f);
	/* nothing was consumed by the cancelled read */
	char c;
	cr_assert_eq(fl_write(p.p[1], "z", 1), 1);
	cr_assert_eq(fl_read(p.p[0], &c, 1), 1);
	cr_assert_eq(c, 'z');
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, cancel_pending_read, .timeout = 10)
{
	fl_test_run(cancel_read, NULL);
}

static int timed_read(void *arg)
{
	struct pending *pr = arg;
	pr->res = fl_read(pr->fd, pr->buf, sizeof(pr->buf));
	return (int)pr->res;
}

static void *timeout_read(void *arg)
{
	(void)arg;
	struct pipes p;
	pipes_open(&p);
	struct pending pr = { .fd = p.p[0] };
	cr_assert_eq(fl_timeout(0.05, timed_read, &pr), -ETIMEDOUT);
	cr_assert_eq(pr.res, -ETIMEDOUT);
	/* the scope is over: the next op is not affected */
	cr_assert_eq(fl_write(p.p[1], "ok", 2), 2);
	cr_assert_eq(fl_timeout(5, timed_read, &pr), 2);
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, timeout_pending_read, .timeout = 10)
{
	fl_test_run(timeout_read, NULL);
}

/* Cancel racing with completion: the data arrived before the cancelled
 * fiber ran. Either the read returns it or it stays in the pipe. */
static void *late_completion(void *arg)
{
	(void)arg;
	struct pipes p;
	pipes_open(&p);
	struct pending pr = { .fd = p.p[0] };
	fl_fiber *f = fl_spin(pending_reader, &pr, NULL);
	fl_fiber_ref(f);
	fl_sleep(0.01);
	cr_assert_eq(write(p.p[1], "late", 4), 4); /* completes in the kernel now */
	usleep(10000);
	fl_cancel(f);
	fl_await(f, NULL);
	fl_fiber_unref(f);
	if (pr.res == 4) {
		cr_assert_eq(memcmp(pr.buf, "late", 4), 0);
	} else {
		cr_assert_eq(pr.res, -ECANCELED);
		char b[4];
		cr_assert_eq(fl_read(p.p[0], b, 4), 4, "data lost by the cancel");
	}
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, late_completion_after_cancel_loses_nothing, .timeout = 10)
{
	fl_test_run(late_completion, NULL);
}

static void *cancel_before_op(void *arg)
{
	(void)arg;
	/* a cancel delivered while not in an op hits the next op */
	cr_assert_eq(fl_cancel(fl_current()), 0);
	cr_assert_eq(fl_sleep(1), -ECANCELED);
	cr_assert_eq(fl_sleep(0), 0);
	return NULL;
}

Test(ops_rw, cancel_outside_op_hits_next_op, .timeout = 10)
{
	fl_test_run(cancel_before_op, NULL);
}

static void *read_buf_main(void *arg)
{
	(void)arg;
	struct pipes p;
	struct fl_buf b = { 0 };
	pipes_open(&p);
	cr_assert_eq(fl_write(p.p[1], "abc", 3), 3);
	cr_assert_eq(fl_read_buf(p.p[0], &b, 16, 0, -1), 3);
	cr_assert_eq(fl_write(p.p[1], "def", 3), 3);
	cr_assert_eq(fl_read_buf(p.p[0], &b, 16, 0, -1), 3, "append");
	cr_assert_eq(b.len, 6);
	cr_assert_eq(memcmp(b.data, "abcdef", 6), 0);
	cr_assert_eq(fl_write(p.p[1], "XY", 2), 2);
	cr_assert_eq(fl_read_buf(p.p[0], &b, 16, 0, 1), 2, "at position");
	cr_assert_eq(b.len, 3);
	cr_assert_eq(memcmp(b.data, "aXY", 3), 0);
	cr_assert_eq(fl_read_buf(p.p[0], &b, 16, 0, 10), -EINVAL);
	/* to EOF with a small chunk: the buffer grows */
	char big[10000];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	cr_assert_eq(fl_write(p.p[1], big, sizeof(big)), (ssize_t)sizeof(big));
	close(p.p[1]);
	p.p[1] = -1;
	cr_assert_eq(fl_read_buf(p.p[0], &b, 100, 1, 0), (ssize_t)sizeof(big));
	cr_assert_eq(b.len, sizeof(big));
	cr_assert(b.cap >= sizeof(big));
	cr_assert_eq(memcmp(b.data, big, sizeof(big)), 0);
	cr_assert_eq(fl_read_full(p.p[0], big, 10), 0);
	free(b.data);
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, read_buf_append_position_to_eof, .timeout = 10)
{
	fl_test_run(read_buf_main, NULL);
}

struct chunks {
	size_t total, max, calls;
	int    stop_after;
};

static int on_chunk(void *arg, const char *data, size_t len)
{
	struct chunks *c = arg;
	(void)data;
	c->total += len;
	c->calls++;
	if (len > c->max)
		c->max = len;
	return c->stop_after && (int)c->calls >= c->stop_after;
}

static void *feeder(void *arg)
{
	int fd = *(int *)arg;
	char blk[1000];
	memset(blk, 'q', sizeof(blk));
	for (int i = 0; i < 50; i++)
		cr_assert_eq(fl_write(fd, blk, sizeof(blk)), (ssize_t)sizeof(blk));
	close(fd);
	return NULL;
}

static void *read_loop_main(void *arg)
{
	(void)arg;
	struct pipes p;
	pipes_open(&p);
	struct chunks c = { 0 };
	fl_spin(feeder, &p.p[1], NULL);
	cr_assert_eq(fl_read_loop(p.p[0], 333, on_chunk, &c), 50000);
	p.p[1] = -1; /* closed by the feeder */
	cr_assert_eq(c.total, 50000);
	cr_assert(c.max <= 333);
	cr_assert_eq(fl_read_loop(p.p[0], 0, on_chunk, &c), -EINVAL);
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, read_loop_chunks_bounded_by_maxlen, .timeout = 10)
{
	fl_test_run(read_loop_main, NULL);
}

struct drain {
	int    fd;
	size_t want;
	char  *got;
};

static void *drainer(void *arg)
{
	struct drain *d = arg;
	cr_assert_eq(fl_read_full(d->fd, d->got, d->want), (ssize_t)d->want);
	return NULL;
}

static void *writev_main(void *arg)
{
	(void)arg;
	struct pipes p;
	pipes_open(&p);
	/* 3 x 300 KiB through a 64 KiB pipe: many partial writes */
	enum { PART = 300 * 1024 };
	char *src = malloc(3 * PART), *dst = malloc(3 * PART);
	for (size_t i = 0; i < 3 * PART; i++)
		src[i] = (char)(i * 7);
	struct iovec iov[3] = { { src, PART }, { src + PART, PART }, { src + 2 * PART, PART } };
	struct drain d = { p.p[0], 3 * PART, dst };
	fl_fiber *f = fl_spin(drainer, &d, NULL);
	fl_fiber_ref(f);
	cr_assert_eq(fl_writev(p.p[1], iov, 3), 3 * PART);
	fl_await(f, NULL);
	fl_fiber_unref(f);
	cr_assert_eq(memcmp(src, dst, 3 * PART), 0);
	cr_assert_eq(fl_writev(p.p[1], iov, -1), -EINVAL);
	free(src);
	free(dst);
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, writev_loops_on_partial_writes, .timeout = 10)
{
	fl_test_run(writev_main, NULL);
}

static void *nonblock_main(void *arg)
{
	(void)arg;
	struct pipes p;
	cr_assert_eq(pipe2(p.p, O_CLOEXEC | O_NONBLOCK), 0);
	struct pending pr = { .fd = p.p[0] };
	fl_spin(pending_reader, &pr, NULL);
	fl_sleep(0.01);
	cr_assert_eq(fl_write(p.p[1], "nb", 2), 2);
	fl_sleep(0.01);
	cr_assert_eq(pr.res, 2, "a non-blocking fd waits instead of -EAGAIN");
	pipes_close(&p);
	return NULL;
}

Test(ops_rw, nonblocking_fd_waits_for_data, .timeout = 10)
{
	fl_test_run(nonblock_main, NULL);
}

struct efd_wait {
	int      fd;
	ssize_t  res;
	uint64_t v;
};

static void *efd_reader(void *arg)
{
	struct efd_wait *w = arg;
	w->res = fl_read(w->fd, &w->v, sizeof(w->v));
	return NULL;
}

/* fds that are not pipes or sockets: regular files (never "not ready") and
 * eventfds (readiness, but no non-blocking write flag on some kernels) */
static void *files_main(void *arg)
{
	(void)arg;
	char path[] = "/tmp/fltest-rw-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	unlink(path);
	enum { LEN = 200 * 1024 };
	char *src = malloc(LEN);
	for (size_t i = 0; i < LEN; i++)
		src[i] = (char)(i * 13);
	cr_assert_eq(fl_write(fd, src, LEN), LEN);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	struct fl_buf b = { 0 };
	cr_assert_eq(fl_read_buf(fd, &b, 16384, 1, -1), LEN);
	cr_assert_eq(memcmp(b.data, src, LEN), 0);
	cr_assert_eq(fl_read(fd, src, 1), 0, "EOF");
	free(b.data);
	free(src);
	close(fd);

	struct efd_wait w = { .fd = eventfd(0, EFD_CLOEXEC) };
	cr_assert(w.fd >= 0);
	fl_fiber *f = fl_spin(efd_reader, &w, NULL);
	fl_fiber_ref(f);
	fl_sleep(0.01); /* the reader waits: the counter is 0 */
	cr_assert_eq(w.res, 0);
	uint64_t v = 5;
	cr_assert_eq(fl_write(w.fd, &v, sizeof(v)), sizeof(v));
	fl_await(f, NULL);
	fl_fiber_unref(f);
	cr_assert_eq(w.res, sizeof(v));
	cr_assert_eq(w.v, 5);
	close(w.fd);
	return NULL;
}

Test(ops_rw, regular_files_and_eventfds, .timeout = 10)
{
	fl_test_run(files_main, NULL);
}
