/* wait_io, waitpid (pidfd), wait_event, splice, splice_to_eof, splice_chunks and linked chains. */
#include "support/fl_test.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void *wait_io_main(void *arg)
{
	(void)arg;
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	int r = fl_wait_io(p[1], FL_WRITABLE);
	cr_assert(r > 0 && (r & POLLOUT));
	cr_assert_eq(write(p[1], "x", 1), 1);
	r = fl_wait_io(p[0], FL_READABLE);
	cr_assert(r > 0 && (r & POLLIN));
	cr_assert_eq(fl_wait_io(p[0], 0), -EINVAL);
	cr_assert_eq(fl_wait_io(-3, FL_READABLE), -EBADF);
	close(p[0]);
	close(p[1]);
	return NULL;
}

Test(ops_misc, wait_io_readable_writable, .timeout = 10)
{
	fl_test_run(wait_io_main, NULL);
}

static int wait_readable(void *arg)
{
	return fl_wait_io(*(int *)arg, FL_READABLE);
}

static void *wait_io_timeout_main(void *arg)
{
	(void)arg;
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(fl_timeout(0.02, wait_readable, &p[0]), -ETIMEDOUT);
	close(p[0]);
	close(p[1]);
	return NULL;
}

Test(ops_misc, wait_io_timeout, .timeout = 10)
{
	fl_test_run(wait_io_timeout_main, NULL);
}

static void *waitpid_main(void *arg)
{
	(void)arg;
	pid_t pid = fork();
	if (pid == 0) {
		usleep(50000);
		_exit(7);
	}
	int st = 0;
	cr_assert_eq(fl_waitpid(pid, &st), pid);
	cr_assert(WIFEXITED(st));
	cr_assert_eq(WEXITSTATUS(st), 7);
	pid_t parent = getpid();
	pid = fork();
	if (pid == 0) {
		fl_test_die_with(parent); /* never outlive a failed test */
		pause();
		_exit(0);
	}
	kill(pid, SIGTERM);
	cr_assert_eq(fl_waitpid(pid, &st), pid);
	cr_assert(WIFSIGNALED(st));
	cr_assert_eq(WTERMSIG(st), SIGTERM);
	cr_assert_eq(fl_waitpid(pid, &st), -ESRCH, "already reaped");
	return NULL;
}

Test(ops_misc, waitpid_exit_and_signal, .timeout = 10)
{
	fl_test_run(waitpid_main, NULL);
}

struct ev {
	int   res;
	void *value;
};

static void *event_waiter(void *arg)
{
	struct ev *e = arg;
	e->res = fl_wait_event(&e->value);
	return NULL;
}

static void *wait_event_main(void *arg)
{
	(void)arg;
	struct ev a = { 1, NULL }, b = { 1, NULL };
	fl_fiber *fa = fl_spin(event_waiter, &a, NULL), *fb = fl_spin(event_waiter, &b, NULL);
	fl_snooze();
	cr_assert_eq(fl_stats_slot()->pending_ops, 2);
	fl_schedule(fa, (void *)5);
	fl_cancel(fb);
	fl_snooze();
	cr_assert_eq(a.res, 0);
	cr_assert_eq(a.value, (void *)5);
	cr_assert_eq(b.res, -ECANCELED);
	cr_assert_eq(fl_stats_slot()->pending_ops, 0);
	return NULL;
}

Test(ops_misc, wait_event_value_and_cancel, .timeout = 10)
{
	fl_test_run(wait_event_main, NULL);
}

static int tmpfile_with(const char *data, size_t len)
{
	char path[] = "/tmp/fltest-splice-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	unlink(path);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

struct collect {
	int           fd;
	struct fl_buf b;
};

static void *collector(void *arg)
{
	struct collect *c = arg;
	cr_assert(fl_read_buf(c->fd, &c->b, 8192, 1, -1) >= 0);
	return NULL;
}

static char data[200000];

static void fill_data(void)
{
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)('A' + i % 23);
}

static void *splice_main(void *arg)
{
	(void)arg;
	fill_data();
	int in = tmpfile_with(data, sizeof(data));
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	/* file -> pipe, one splice */
	cr_assert_eq(fl_splice(in, p[1], 1000), 1000);
	char buf[1000];
	cr_assert_eq(fl_read_full(p[0], buf, 1000), 1000);
	cr_assert_eq(memcmp(buf, data, 1000), 0);
	/* file -> pipe to EOF while another fiber drains the pipe */
	lseek(in, 0, SEEK_SET);
	struct collect c = { .fd = p[0] };
	fl_fiber *f = fl_spin(collector, &c, NULL);
	fl_fiber_ref(f);
	cr_assert_eq(fl_splice_to_eof(in, p[1], 16384), (ssize_t)sizeof(data));
	close(p[1]);
	fl_await(f, NULL);
	fl_fiber_unref(f);
	cr_assert_eq(c.b.len, sizeof(data));
	cr_assert_eq(memcmp(c.b.data, data, sizeof(data)), 0);
	free(c.b.data);
	cr_assert_eq(fl_splice(in, -1, 10), -EBADF);
	cr_assert(fl_splice(in, in, 10) < 0, "neither side a pipe");
	close(in);
	close(p[0]);
	return NULL;
}

Test(ops_misc, splice_and_splice_to_eof, .timeout = 10)
{
	fl_test_run(splice_main, NULL);
}

/* HTTP chunked encoding: "<hex len>\r\n" before, "\r\n" after each chunk */
static size_t hex_prefix(void *arg, size_t len, char *out, size_t cap)
{
	(*(int *)arg)++;
	return (size_t)snprintf(out, cap, "%zx\r\n", len);
}

static void *chunks_main(void *arg)
{
	(void)arg;
	fill_data();
	const size_t n = 10000, chunk = 4096;
	int in = tmpfile_with(data, n);
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	struct collect c = { .fd = p[0] };
	fl_fiber *f = fl_spin(collector, &c, NULL);
	fl_fiber_ref(f);
	int calls = 0;
	struct fl_splice_chunks o = {
		.prefix = "HEAD\n", .postfix = "0\r\n\r\n",
		.chunk_prefix_fn = hex_prefix, .chunk_postfix = "\r\n",
		.arg = &calls, .chunk_size = chunk,
	};
	ssize_t total = fl_splice_chunks(in, p[1], &o);
	close(p[1]);
	fl_await(f, NULL);
	fl_fiber_unref(f);
	cr_assert_eq(calls, 3);
	/* expected bytes, built by hand */
	char *want = malloc(n + 200), *w = want;
	w += sprintf(w, "HEAD\n");
	for (size_t off = 0; off < n; off += chunk) {
		size_t len = n - off < chunk ? n - off : chunk;
		w += sprintf(w, "%zx\r\n", len);
		memcpy(w, data + off, len);
		w += len;
		w += sprintf(w, "\r\n");
	}
	w += sprintf(w, "0\r\n\r\n");
	cr_assert_eq(total, w - want);
	cr_assert_eq(c.b.len, (size_t)(w - want));
	cr_assert_eq(memcmp(c.b.data, want, c.b.len), 0);
	free(want);
	free(c.b.data);
	close(in);
	close(p[0]);
	return NULL;
}

Test(ops_misc, splice_chunks_with_affixes, .timeout = 10)
{
	fl_test_run(chunks_main, NULL);
}

/* An affix callback in snprintf style: returns the length it wanted. */
static size_t long_prefix(void *arg, size_t chunk_len, char *out, size_t cap)
{
	(void)chunk_len;
	return (size_t)snprintf(out, cap, "%0*d", *(int *)arg, 0);
}

static void *long_affix_main(void *arg)
{
	(void)arg;
	fill_data();
	int in = tmpfile_with(data, 100);
	int p[2];
	char out[1024];
	cr_assert_eq(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	int want = 255; /* fits with its NUL */
	struct fl_splice_chunks o = { .chunk_prefix_fn = long_prefix, .arg = &want };
	cr_assert_eq(fl_splice_chunks(in, p[1], &o), 255 + 100);
	cr_assert_eq(read(p[0], out, sizeof(out)), 355);
	cr_assert_eq(memchr(out, '\0', 355), NULL);
	/* before: 256 bytes went out, the NUL of the truncated text included */
	want = 300;
	cr_assert_eq(lseek(in, 0, SEEK_SET), 0);
	cr_assert_eq(fl_splice_chunks(in, p[1], &o), -ENOBUFS);
	cr_assert_eq(read(p[0], out, sizeof(out)), -1, "nothing written");
	close(in);
	close(p[0]);
	close(p[1]);
	return NULL;
}

Test(ops_misc, splice_chunks_refuses_truncated_affix, .timeout = 10)
{
	fl_test_run(long_affix_main, NULL);
}

static void *chain_main(void *arg)
{
	(void)arg;
	fill_data();
	int in = tmpfile_with(data, 100);
	int sv[2], p[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	/* header, then file bytes through a pipe, then trailer: in order */
	struct fl_chain_op ops[4] = {
		{ .kind = FL_CHAIN_SEND, .fd = sv[0], .buf = "<<", .len = 2 },
		{ .kind = FL_CHAIN_SPLICE, .fd_in = in, .fd = p[1], .len = 100 },
		{ .kind = FL_CHAIN_SPLICE, .fd_in = p[0], .fd = sv[0], .len = 100 },
		{ .kind = FL_CHAIN_WRITE, .fd = sv[0], .buf = ">>", .len = 2 },
	};
	uint64_t ops0 = fl_stats_slot()->ops;
	cr_assert_eq(fl_chain(ops, 4), 2);
	cr_assert_eq(fl_stats_slot()->ops - ops0, 4);
	char buf[104];
	cr_assert_eq(fl_read_full(sv[1], buf, 104), 104);
	cr_assert_eq(memcmp(buf, "<<", 2), 0);
	cr_assert_eq(memcmp(buf + 2, data, 100), 0);
	cr_assert_eq(memcmp(buf + 102, ">>", 2), 0);
	/* a failing op stops the chain: the write after it never happens */
	struct fl_chain_op bad[2] = {
		{ .kind = FL_CHAIN_WRITE, .fd = 999999, .buf = "x", .len = 1 },
		{ .kind = FL_CHAIN_WRITE, .fd = sv[0], .buf = "y", .len = 1 },
	};
	cr_assert_eq(fl_chain(bad, 2), -EBADF);
	cr_assert_eq(fl_chain(bad, 0), -EINVAL);
	close(sv[0]);
	cr_assert_eq(fl_read(sv[1], buf, 1), 0, "the linked write did not run");
	close(sv[1]);
	close(p[0]);
	close(p[1]);
	close(in);
	return NULL;
}

Test(ops_misc, chain_runs_linked_in_order_and_stops_on_failure, .timeout = 10)
{
	fl_test_run(chain_main, NULL);
}

struct chain_run {
	const struct fl_chain_op *ops;
	int     n;
	ssize_t res;
};

static void *chain_runner(void *arg)
{
	struct chain_run *c = arg;
	c->res = fl_chain(c->ops, c->n);
	return NULL;
}

static void *chain_cancel_main(void *arg)
{
	(void)arg;
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	/* fill sv[0]'s buffers: the chain's first send must wait */
	char junk[4096];
	memset(junk, 'j', sizeof(junk));
	size_t queued = 0;
	ssize_t n;
	while ((n = send(sv[0], junk, sizeof(junk), MSG_DONTWAIT)) > 0)
		queued += (size_t)n;
	struct fl_chain_op ops[2] = {
		{ .kind = FL_CHAIN_SEND, .fd = sv[0], .buf = "x", .len = 1 },
		{ .kind = FL_CHAIN_WRITE, .fd = sv[0], .buf = "y", .len = 1 },
	};
	struct chain_run c = { ops, 2, 1 };
	fl_fiber *f = fl_spin(chain_runner, &c, NULL);
	fl_fiber_ref(f);
	fl_sleep(0.01);
	cr_assert_eq(c.res, 1, "the chain waits for room");
	cr_assert_eq(fl_cancel(f), 0);
	fl_await(f, NULL);
	fl_fiber_unref(f);
	cr_assert_eq(c.res, -ECANCELED);
	/* neither op ran: only the junk arrives */
	shutdown(sv[0], SHUT_WR);
	size_t got = 0;
	char buf[4096];
	while ((n = fl_read(sv[1], buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			cr_assert_eq(buf[i], 'j', "a cancelled chain op wrote");
		got += (size_t)n;
	}
	cr_assert_eq(got, queued);
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

Test(ops_misc, chain_cancelled_while_waiting_runs_no_later_op, .timeout = 10)
{
	fl_test_run(chain_cancel_main, NULL);
}
