/*
 * epoll_echo — the baseline of bench/echo.sh: a minimal single-threaded
 * epoll echo server in plain C, written the way one would by hand, with no
 * runtime underneath. Same CLI shape as examples/echo_server:
 *
 *   epoll_echo --port N     (0: pick a free port; the first stdout line is
 *                            "port N" either way)
 *
 * Level-triggered; on a readable connection one read of up to 16 KiB (the
 * echo_server's buffer) and a write of what came in. A write that the
 * socket only partly takes parks the rest and waits for EPOLLOUT before
 * reading that connection again, so nothing is dropped or reordered.
 * SIGINT/SIGTERM end it. Without arguments (as `make bench` runs every
 * program) it says what it is for and exits.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF_SIZE   16384
#define MAX_EVENTS 256

struct conn {
	char  *rest;   /* owned: bytes the socket did not take yet, NULL if none */
	size_t len, off;
};

static struct conn *conns; /* indexed by fd */
static size_t nconns;

static struct conn *conn_of(int fd)
{
	if ((size_t)fd >= nconns) {
		size_t n = nconns ? nconns : 1024;
		while (n <= (size_t)fd)
			n *= 2;
		struct conn *c = realloc(conns, n * sizeof(*c));
		if (!c) {
			perror("epoll_echo: realloc");
			exit(1);
		}
		memset(c + nconns, 0, (n - nconns) * sizeof(*c));
		conns = c;
		nconns = n;
	}
	return &conns[fd];
}

static void drop(int ep, int fd)
{
	struct conn *c = conn_of(fd);
	epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
	close(fd);
	free(c->rest);
	*c = (struct conn){ 0 };
}

static void watch(int ep, int op, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.fd = fd };
	if (epoll_ctl(ep, op, fd, &ev) < 0) {
		perror("epoll_echo: epoll_ctl");
		exit(1);
	}
}

/* Writes buf[off..len); keeps what the socket refuses. 0 or -1 (drop). */
static int flush(int ep, int fd, const char *buf, size_t len, size_t off)
{
	struct conn *c = conn_of(fd);
	while (off < len) {
		ssize_t n = write(fd, buf + off, len - off);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (buf != c->rest) {
				c->rest = malloc(len - off);
				if (!c->rest)
					return -1;
				memcpy(c->rest, buf + off, len - off);
				c->len = len - off;
				c->off = 0;
				watch(ep, EPOLL_CTL_MOD, fd, EPOLLOUT);
			} else {
				c->off = off;
			}
			return 0;
		}
		return -1;
	}
	if (buf == c->rest) {
		free(c->rest);
		c->rest = NULL;
		watch(ep, EPOLL_CTL_MOD, fd, EPOLLIN);
	}
	return 0;
}

static void on_listener(int ep, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		if (fd < 0)
			return; /* EAGAIN, or a transient error: the next event retries */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		conn_of(fd);
		watch(ep, EPOLL_CTL_ADD, fd, EPOLLIN);
	}
}

static void on_conn(int ep, int fd, uint32_t events)
{
	static char buf[BUF_SIZE];
	struct conn *c = conn_of(fd);
	if (c->rest) {
		if (flush(ep, fd, c->rest, c->len, c->off) < 0)
			drop(ep, fd);
		return;
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || flush(ep, fd, buf, (size_t)n, 0) < 0)
		drop(ep, fd);
}

static int open_listener(int port, int *bound)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t len = sizeof(a);
	int one = 1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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

int main(int argc, char **argv)
{
	int port = -1, bound = 0;
	if (argc == 1) {
		printf("epoll_echo: the baseline server of bench/echo.sh (make bench B=echo); nothing to run alone\n");
		return 0;
	}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
			port = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: epoll_echo --port N\n");
			return 2;
		}
	}
	if (port < 0 || port > 65535) {
		fprintf(stderr, "usage: epoll_echo --port N\n");
		return 2;
	}
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
	signal(SIGPIPE, SIG_IGN);
	int lfd = open_listener(port, &bound);
	if (lfd < 0) {
		fprintf(stderr, "epoll_echo: listen(127.0.0.1:%d): %s\n", port, strerror(-lfd));
		return 1;
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		perror("epoll_echo: epoll_create1");
		return 1;
	}
	watch(ep, EPOLL_CTL_ADD, lfd, EPOLLIN);
	printf("port %d\n", bound);
	fflush(stdout);

	struct epoll_event evs[MAX_EVENTS];
	for (;;) {
		int n = epoll_wait(ep, evs, MAX_EVENTS, -1);
		if (n < 0 && errno != EINTR) {
			perror("epoll_echo: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == lfd)
				on_listener(ep, lfd);
			else
				on_conn(ep, evs[i].data.fd, evs[i].events);
		}
	}
}
