/* Socket ops on loopback TCP and socketpairs: accept/connect/recv/send/sendv and loops, EOF, errors, cancel, timeout, late accept. */
#include "support/fl_test.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct server {
	int      lfd;
	uint16_t port;
	int      conns;
};

static int echo_once(void *arg, int fd)
{
	struct server *s = arg;
	char buf[256];
	ssize_t n;
	while ((n = fl_recv(fd, buf, sizeof(buf), 0)) > 0)
		cr_assert_eq(fl_send(fd, buf, (size_t)n, 0), n);
	close(fd);
	return ++s->conns == 2; /* stop after two clients */
}

static void *acceptor(void *arg)
{
	struct server *s = arg;
	cr_assert_eq(fl_accept_loop(s->lfd, echo_once, s), 0);
	return NULL;
}

static void *tcp_main(void *arg)
{
	(void)arg;
	struct server s = { 0 };
	s.lfd = fl_test_listen(&s.port);
	fl_fiber *a = fl_spin(acceptor, &s, "acceptor");
	fl_fiber_ref(a);
	for (int c = 0; c < 2; c++) {
		int fd = fl_test_socket();
		struct sockaddr_in addr = fl_test_addr(s.port);
		cr_assert_eq(fl_connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
		struct iovec iov[2] = { { "hello ", 6 }, { "world", 5 } };
		cr_assert_eq(fl_sendv(fd, iov, 2, 0), 11);
		char buf[16] = { 0 };
		size_t got = 0;
		while (got < 11) {
			ssize_t n = fl_recv(fd, buf + got, sizeof(buf) - got, 0);
			cr_assert(n > 0);
			got += (size_t)n;
		}
		cr_assert_str_eq(buf, "hello world");
		shutdown(fd, SHUT_WR);
		cr_assert_eq(fl_recv(fd, buf, sizeof(buf), 0), 0, "EOF after the server closed");
		close(fd);
	}
	fl_await(a, NULL);
	fl_fiber_unref(a);
	cr_assert_eq(s.conns, 2);
	close(s.lfd);
	return NULL;
}

Test(ops_net, accept_connect_send_recv_eof, .timeout = 10)
{
	fl_test_run(tcp_main, NULL);
}

static void *errors_main(void *arg)
{
	(void)arg;
	char buf[4];
	uint16_t port;
	int l = fl_test_listen(&port);
	close(l); /* nobody listens there now */
	int fd = fl_test_socket();
	struct sockaddr_in addr = fl_test_addr(port);
	cr_assert_eq(fl_connect(fd, (struct sockaddr *)&addr, sizeof(addr)), -ECONNREFUSED);
	close(fd);
	cr_assert_eq(fl_recv(-1, buf, 1, 0), -EBADF);
	cr_assert_eq(fl_send(999999, buf, 1, 0), -EBADF);
	cr_assert_eq(fl_accept(999999, NULL, NULL), -EBADF);
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	close(sv[1]);
	cr_assert_eq(fl_send(sv[0], "x", 1, 0), -EPIPE, "closed peer");
	cr_assert_eq(fl_recv(sv[0], buf, 1, 0), 0);
	close(sv[0]);
	return NULL;
}

Test(ops_net, connect_refused_bad_fd_closed_peer, .timeout = 10)
{
	fl_test_run(errors_main, NULL);
}

struct waiter {
	int     fd;
	ssize_t res;
};

static void *recv_waiter(void *arg)
{
	struct waiter *w = arg;
	char buf[8];
	w->res = fl_recv(w->fd, buf, sizeof(buf), 0);
	return NULL;
}

static void *accept_waiter(void *arg)
{
	struct waiter *w = arg;
	w->res = fl_accept(w->fd, NULL, NULL);
	return NULL;
}

static int timed_accept(void *arg)
{
	return fl_accept(*(int *)arg, NULL, NULL);
}

static void *cancel_main(void *arg)
{
	(void)arg;
	int sv[2];
	uint16_t port;
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	int lfd = fl_test_listen(&port);
	struct waiter wr = { sv[0], 1 }, wa = { lfd, 1 };
	fl_fiber *fr = fl_spin(recv_waiter, &wr, NULL), *fa = fl_spin(accept_waiter, &wa, NULL);
	fl_fiber_ref(fr);
	fl_fiber_ref(fa);
	fl_sleep(0.01);
	fl_cancel(fr);
	fl_cancel(fa);
	fl_await(fr, NULL);
	fl_await(fa, NULL);
	cr_assert_eq(wr.res, -ECANCELED);
	cr_assert_eq(wa.res, -ECANCELED);
	fl_fiber_unref(fr);
	fl_fiber_unref(fa);
	cr_assert_eq(fl_timeout(0.02, timed_accept, &lfd), -ETIMEDOUT);
	/* a client arriving after the cancelled accepts is not swallowed */
	int c = fl_test_socket();
	struct sockaddr_in addr = fl_test_addr(port);
	cr_assert_eq(fl_connect(c, (struct sockaddr *)&addr, sizeof(addr)), 0);
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	int s = fl_accept(lfd, (struct sockaddr *)&peer, &plen);
	cr_assert(s >= 0);
	cr_assert_eq(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	close(s);
	close(c);
	close(lfd);
	close(sv[0]);
	close(sv[1]);
	return NULL;
}

Test(ops_net, cancel_and_timeout_pending_recv_accept, .timeout = 10)
{
	fl_test_run(cancel_main, NULL);
}

static int count_chunk(void *arg, const char *data, size_t len)
{
	(void)data;
	*(size_t *)arg += len;
	return 0;
}

static void *sender(void *arg)
{
	int fd = *(int *)arg;
	char *blk = calloc(1, 1 << 20);
	cr_assert_eq(fl_send(fd, blk, 1 << 20, 0), 1 << 20);
	free(blk);
	close(fd);
	return NULL;
}

static void *recv_loop_main(void *arg)
{
	(void)arg;
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	size_t total = 0;
	fl_spin(sender, &sv[1], NULL);
	cr_assert_eq(fl_recv_loop(sv[0], 4096, count_chunk, &total), 1 << 20);
	cr_assert_eq(total, (size_t)1 << 20);
	close(sv[0]);
	return NULL;
}

Test(ops_net, recv_loop_and_large_send, .timeout = 10)
{
	fl_test_run(recv_loop_main, NULL);
}
