/*
 * echo_server — a TCP echo server on libfiberloop: one fiber per
 * connection, 127.0.0.1 only. Publishes the loop's counters in shm, so
 * `loopstat list` shows it.
 *
 *   echo_server --port N     (0: pick a free port; the first stdout line
 *                             is "port N" either way)
 *               [--work-us U] spin U microseconds per message before echoing
 *                             it: a server slowed on purpose (check's
 *                             negative capacity test)
 *   FL_BACKEND=io_uring|libev selects the backend.
 *
 * SIGINT/SIGTERM end it cleanly: connections are closed, every fiber
 * finishes and the shm segment is unlinked.
 */
#include "fiberloop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE 16384

/* A connection's fiber, listed so that shutdown can cancel it. Lives on
 * that fiber's stack. */
struct conn {
	fl_fiber    *fiber;
	struct conn *prev, *next;
};

static int listen_fd = -1;
static long connections;
static struct conn *conns;
static fl_fiber *acceptor_fiber;
static int shutting_down;
static long work_us;

/* --work-us: on-CPU work per message, without yielding (a slow handler) */
static void work(void)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < work_us);
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[BUF_SIZE];
	struct conn c = { .fiber = fl_current(), .next = conns };
	if (conns)
		conns->prev = &c;
	conns = &c;
	/* spun before shutdown began but never ran: not in the list it cancels */
	while (!shutting_down) {
		ssize_t n = fl_recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		if (work_us)
			work();
		if (fl_send(fd, buf, (size_t)n, 0) < 0)
			break;
	}
	if (c.prev)
		c.prev->next = c.next;
	else
		conns = c.next;
	if (c.next)
		c.next->prev = c.prev;
	close(fd);
	connections--;
	return NULL;
}

static int on_accept(void *arg, int fd)
{
	(void)arg;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!fl_spin(serve, (void *)(intptr_t)fd, "conn")) {
		close(fd);
		return 0;
	}
	connections++;
	return 0;
}

static void *acceptor(void *arg)
{
	(void)arg;
	int err = fl_accept_loop(listen_fd, on_accept, NULL);
	if (err != -ECANCELED)
		fprintf(stderr, "echo_server: accept: %s\n", strerror(-err));
	return NULL;
}

/* Signals arrive as reads on a signalfd, inside the loop. Shutdown cancels
 * the acceptor and every connection: when their fibers are done, fl_run
 * returns and main exits normally (the shm segment is unlinked). */
static void *signals(void *arg)
{
	int sfd = (int)(intptr_t)arg;
	struct signalfd_siginfo si;
	if (fl_read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		fprintf(stderr, "echo_server: signal %u, closing %ld connections\n", si.ssi_signo, connections);
	shutting_down = 1;
	fl_cancel(acceptor_fiber);
	for (struct conn *c = conns; c; c = c->next)
		fl_cancel(c->fiber);
	return NULL;
}

static void *server_main(void *arg)
{
	acceptor_fiber = fl_spin(acceptor, NULL, "acceptor");
	fl_spin(signals, arg, "signals");
	return NULL;
}

static int open_listener(int port, int *bound)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t len = sizeof(a);
	int one = 1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	*bound = ntohs(a.sin_port);
	return fd;
}

static void raise_nofile(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: echo_server --port N [--work-us U]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int port = -1, bound = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--port") == 0 && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (strcmp(argv[i], "--work-us") == 0 && i + 1 < argc && (work_us = atol(argv[++i])) >= 0)
			;
		else
			usage();
	}
	if (port < 0 || port > 65535)
		usage();
	raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	listen_fd = open_listener(port, &bound);
	if (listen_fd < 0) {
		fprintf(stderr, "echo_server: listen(127.0.0.1:%d): %s\n", port, strerror(-listen_fd));
		return 1;
	}
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		perror("echo_server: signalfd");
		return 1;
	}
	printf("port %d\n", bound);
	fflush(stdout);
	struct fl_options o = { .stack_size = 64 * 1024, .tag = "echo" };
	int err = fl_run(server_main, (void *)(intptr_t)sfd, &o, NULL);
	close(listen_fd);
	close(sfd);
	if (err) {
		fprintf(stderr, "echo_server: fl_run: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
