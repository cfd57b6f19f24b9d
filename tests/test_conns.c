/* Thousands of connections: an echo server and 2,000 clients in one loop on loopback TCP, every byte checked; two loops on two threads waking each other. */
#include "support/fl_test.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define CLIENTS 2000
#define MSGS    5

struct echo {
	int      lfd;
	uint16_t port;
	int      served, ok;
};

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[512];
	ssize_t n;
	while ((n = fl_recv(fd, buf, sizeof(buf), 0)) > 0)
		if (fl_send(fd, buf, (size_t)n, 0) != n)
			break;
	close(fd);
	return NULL;
}

static int on_conn(void *arg, int fd)
{
	struct echo *e = arg;
	cr_assert_not_null(fl_spin(serve, (void *)(intptr_t)fd, "conn"));
	return ++e->served == CLIENTS;
}

static void *server(void *arg)
{
	struct echo *e = arg;
	cr_assert_eq(fl_accept_loop(e->lfd, on_conn, e), 0);
	return NULL;
}

static void *client(void *arg)
{
	struct echo *e = arg;
	int fd = fl_test_socket();
	struct sockaddr_in a = fl_test_addr(e->port);
	cr_assert_eq(fl_connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	char out[64], in[64];
	for (int m = 0; m < MSGS; m++) {
		int len = snprintf(out, sizeof(out), "fd %d message %d", fd, m);
		cr_assert_eq(fl_send(fd, out, (size_t)len, 0), len);
		cr_assert_eq(fl_read_full(fd, in, (size_t)len), len);
		cr_assert_eq(memcmp(in, out, (size_t)len), 0);
	}
	close(fd);
	e->ok++;
	return NULL;
}

static void *conns_main(void *arg)
{
	(void)arg;
	struct echo e = { 0 };
	e.lfd = fl_test_listen(&e.port);
	fl_fiber *s = fl_spin(server, &e, "server");
	fl_fiber_ref(s);
	fl_fiber *c[CLIENTS];
	for (int i = 0; i < CLIENTS; i++)
		fl_fiber_ref(c[i] = fl_spin(client, &e, "client"));
	for (int i = 0; i < CLIENTS; i++) {
		fl_await(c[i], NULL);
		fl_fiber_unref(c[i]);
	}
	fl_await(s, NULL);
	fl_fiber_unref(s);
	cr_assert_eq(e.ok, CLIENTS);
	close(e.lfd);
	return NULL;
}

Test(conns, echo_2000_connections_in_one_loop, .timeout = 60)
{
	struct rlimit r;
	getrlimit(RLIMIT_NOFILE, &r);
	r.rlim_cur = r.rlim_max;
	setrlimit(RLIMIT_NOFILE, &r);
	cr_assert(r.rlim_cur >= 2 * CLIENTS + 100, "RLIMIT_NOFILE %lu too low", (unsigned long)r.rlim_cur);
	struct fl_options o = { .stack_size = 64 * 1024 };
	fl_test_run_opts(conns_main, NULL, &o);
}

/* ---- two loops ----------------------------------------------------------- */

struct pingpong {
	fl_fiber *volatile a, *volatile b;   /* each loop's fiber, published for the other */
	const char *backend;
	int         rounds_a, rounds_b;
};

static void *loop_b_main(void *arg)
{
	struct pingpong *p = arg;
	__atomic_store_n(&p->b, fl_current(), __ATOMIC_RELEASE);
	for (int i = 0; i < 100; i++) {
		void *v;
		cr_assert_eq(fl_wait_event(&v), 0);
		cr_assert_eq((intptr_t)v, i);
		p->rounds_b++;
		while (!__atomic_load_n(&p->a, __ATOMIC_ACQUIRE))
			fl_sleep(0.001);
		fl_schedule(p->a, (void *)(intptr_t)i);
	}
	return NULL;
}

static void *thread_b(void *arg)
{
	struct pingpong *p = arg;
	struct fl_options o = { .backend = p->backend };
	cr_assert_eq(fl_run(loop_b_main, p, &o, NULL), 0);
	return NULL;
}

static void *loop_a_main(void *arg)
{
	struct pingpong *p = arg;
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, thread_b, p), 0);
	__atomic_store_n(&p->a, fl_current(), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&p->b, __ATOMIC_ACQUIRE))
		fl_sleep(0.001);
	for (int i = 0; i < 100; i++) {
		fl_schedule(p->b, (void *)(intptr_t)i);
		void *v;
		cr_assert_eq(fl_wait_event(&v), 0);
		cr_assert_eq((intptr_t)v, i);
		p->rounds_a++;
	}
	pthread_join(t, NULL);
	return NULL;
}

static void *pingpong_main(void *arg)
{
	struct pingpong p = { .backend = fl_test_backend };
	(void)arg;
	loop_a_main(&p);
	cr_assert_eq(p.rounds_a, 100);
	cr_assert_eq(p.rounds_b, 100);
	return NULL;
}

Test(conns, two_loops_on_two_threads_wake_each_other, .timeout = 20)
{
	fl_test_run(pingpong_main, NULL);
}
