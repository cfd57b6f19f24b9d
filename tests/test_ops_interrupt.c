/* Every blocking op, parked for real, returns -ECANCELED on fl_cancel and -ETIMEDOUT in an expired timeout scope, and leaks nothing. */
#include "support/fl_test.h"
#include "support/support.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Resources an op blocks on; set up fresh for each case. */
struct env {
	int   p[2];     /* empty pipe (read blocks); pipe_full[1] blocks writes */
	int   full[2];
	int   sv[2];    /* socketpair with an empty receive side */
	int   svfull[2];/* socketpair whose send buffer is full */
	int   lfd;      /* listener with no client */
	pid_t child;    /* a child that does not exit by itself */
};

static void fill_nonblocking(int fd)
{
	char blk[4096] = { 0 };
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (write(fd, blk, sizeof(blk)) > 0)
		;
	fcntl(fd, F_SETFL, fl);
}

static void env_open(struct env *e)
{
	uint16_t port;
	cr_assert_eq(pipe2(e->p, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(e->full, O_CLOEXEC), 0);
	fill_nonblocking(e->full[1]);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, e->sv), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, e->svfull), 0);
	fill_nonblocking(e->svfull[0]);
	e->lfd = fl_test_listen(&port);
	pid_t parent = getpid();
	e->child = fork();
	cr_assert_geq(e->child, 0);
	if (e->child == 0) {
		/* must not outlive a failed test (it would hold its stdout) */
		fl_test_die_with(parent);
		pause();
		_exit(0);
	}
}

static void env_close(struct env *e)
{
	int *fds[] = { e->p, e->full, e->sv, e->svfull };
	for (int i = 0; i < 4; i++) {
		close(fds[i][0]);
		close(fds[i][1]);
	}
	close(e->lfd);
	kill(e->child, SIGKILL);
	waitpid(e->child, NULL, 0);
}

typedef int (*op_fn)(struct env *e);

static char scratch[1 << 16];

static int op_read(struct env *e) { return (int)fl_read(e->p[0], scratch, 16); }
static int op_read_full(struct env *e) { return (int)fl_read_full(e->p[0], scratch, 16); }
static int op_write(struct env *e) { return (int)fl_write(e->full[1], scratch, sizeof(scratch)); }
static int op_recv(struct env *e) { return (int)fl_recv(e->sv[0], scratch, 16, 0); }
static int op_send(struct env *e) { return (int)fl_send(e->svfull[0], scratch, sizeof(scratch), 0); }
static int op_accept(struct env *e) { return fl_accept(e->lfd, NULL, NULL); }
static int op_sleep(struct env *e) { (void)e; return fl_sleep(60); }
static int op_wait_io(struct env *e) { return fl_wait_io(e->p[0], FL_READABLE); }
static int op_waitpid(struct env *e) { return fl_waitpid(e->child, NULL); }
static int op_wait_event(struct env *e) { (void)e; return fl_wait_event(NULL); }
static int op_splice(struct env *e) { return (int)fl_splice(e->p[0], e->full[1], 16); }

static int op_writev(struct env *e)
{
	struct iovec iov[2] = { { scratch, 30000 }, { scratch, 30000 } };
	return (int)fl_writev(e->full[1], iov, 2);
}

static int op_sendv(struct env *e)
{
	struct iovec iov[2] = { { scratch, 30000 }, { scratch, 30000 } };
	return (int)fl_sendv(e->svfull[0], iov, 2, 0);
}

static int count_chunk(void *arg, const char *d, size_t n)
{
	(void)arg, (void)d, (void)n;
	return 0;
}

static int op_read_loop(struct env *e) { return (int)fl_read_loop(e->p[0], 64, count_chunk, NULL); }
static int op_recv_loop(struct env *e) { return (int)fl_recv_loop(e->sv[0], 64, count_chunk, NULL); }

static int tick(void *arg)
{
	(void)arg;
	return 0;
}

static int op_timer_loop(struct env *e) { (void)e; return fl_timer_loop(30, tick, NULL); }

static int op_chain(struct env *e)
{
	struct fl_chain_op ops[2] = {
		{ .kind = FL_CHAIN_SPLICE, .fd_in = e->p[0], .fd = e->full[1], .len = 16 },
		{ .kind = FL_CHAIN_WRITE, .fd = e->full[1], .buf = "x", .len = 1 },
	};
	return (int)fl_chain(ops, 2);
}

static const struct { const char *name; op_fn fn; } ops[] = {
	{ "read", op_read },         { "read_full", op_read_full }, { "read_loop", op_read_loop },
	{ "write", op_write },       { "writev", op_writev },       { "recv", op_recv },
	{ "recv_loop", op_recv_loop }, { "send", op_send },         { "sendv", op_sendv },
	{ "accept", op_accept },     { "sleep", op_sleep },         { "timer_loop", op_timer_loop },
	{ "wait_io", op_wait_io },   { "waitpid", op_waitpid },     { "wait_event", op_wait_event },
	{ "splice", op_splice },     { "chain", op_chain },
};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))

struct run {
	struct env *e;
	op_fn       fn;
	int         res;
};

static void *blocked(void *arg)
{
	struct run *r = arg;
	r->res = r->fn(r->e);
	return NULL;
}

static void *cancel_all(void *arg)
{
	(void)arg;
	for (size_t i = 0; i < N_OPS; i++) {
		struct env e;
		env_open(&e);
		struct run r = { &e, ops[i].fn, 12345 };
		fl_fiber *f = fl_spin(blocked, &r, ops[i].name);
		fl_fiber_ref(f);
		fl_sleep(0.005);
		cr_assert(!fl_fiber_done(f), "%s did not block", ops[i].name);
		cr_assert_eq(fl_cancel(f), 0);
		fl_await(f, NULL);
		fl_fiber_unref(f);
		cr_assert_eq(r.res, -ECANCELED, "%s returned %d on cancel", ops[i].name, r.res);
		env_close(&e);
	}
	return NULL;
}

Test(ops_interrupt, cancel_every_pending_op, .timeout = 20)
{
	fl_test_run(cancel_all, NULL);
}

static int scoped(void *arg)
{
	struct run *r = arg;
	return r->fn(r->e);
}

static void *timeout_all(void *arg)
{
	(void)arg;
	for (size_t i = 0; i < N_OPS; i++) {
		struct env e;
		env_open(&e);
		struct run r = { &e, ops[i].fn, 0 };
		int res = fl_timeout(0.01, scoped, &r);
		cr_assert_eq(res, -ETIMEDOUT, "%s returned %d on timeout", ops[i].name, res);
		env_close(&e);
	}
	return NULL;
}

Test(ops_interrupt, timeout_every_pending_op, .timeout = 20)
{
	fl_test_run(timeout_all, NULL);
}

/* ---- hygiene: a parked child never outlives its test ---------------------- */

/* 1 once pid is gone or a zombie (its new parent may not reap it at once) */
static int gone(pid_t pid)
{
	char path[64], st[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	const char *fields = ts_stat_fields(path, st, sizeof(st));
	return !fields || fields[0] == 'Z' || fields[0] == 'X';
}

Test(ops_interrupt, parked_child_dies_with_a_failed_test, .timeout = 10)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t worker = fork();
	cr_assert_geq(worker, 0);
	if (worker == 0) {
		/* stands for a test that fails right after env_open: it exits
		 * without env_close */
		struct env e;
		env_open(&e);
		if (write(p[1], &e.child, sizeof(e.child)) != sizeof(e.child))
			_exit(2);
		_exit(1);
	}
	pid_t child = 0;
	cr_assert_eq(read(p[0], &child, sizeof(child)), (ssize_t)sizeof(child));
	cr_assert_eq(waitpid(worker, NULL, 0), worker);
	for (int i = 0; i < 200 && !gone(child); i++)
		usleep(10000);
	int left = !gone(child);
	if (left)
		kill(child, SIGKILL); /* ours to clean up, even on failure */
	cr_assert(!left, "child %d outlived its test", (int)child);
	close(p[0]);
	close(p[1]);
}
