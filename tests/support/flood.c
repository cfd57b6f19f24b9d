/*
 * flood.c — the connection flood of flood.h: one child, non-blocking
 * sockets, one poll over all of them.
 */
#include "flood.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int open_one(const struct flood_opts *o, unsigned i)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (o->addrs) {
		struct sockaddr_in src = { .sin_family = AF_INET };
		src.sin_addr.s_addr = htonl(0x7f000002u + i % o->addrs);
		bind(fd, (struct sockaddr *)&src, sizeof(src));
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

static void run(const struct flood_opts *o, int report)
{
	unsigned n = o->slowloris + o->idle;
	struct pollfd *p = calloc(n, sizeof(*p));
	unsigned char *started = calloc(n, 1), *opened = calloc(n, 1);
	if (!p || !started || !opened)
		_exit(3);
	for (unsigned i = 0; i < n; i++)
		p[i].fd = -1;
	unsigned long reopened = 0;
	unsigned ever = 0;   /* connections opened at least once */
	int all_once = 0;
	long long last_byte = 0, last_report = 0;
	const char *head = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
	for (;;) {
		unsigned open = 0, made = 0;
		for (unsigned i = 0; i < n; i++) {
			if (p[i].fd < 0 && made < 2000) {   /* at most 2000 connects a round */
				p[i].fd = open_one(o, i);
				p[i].events = POLLIN | POLLRDHUP;
				made++;
				started[i] = 0;
				if (p[i].fd >= 0 && opened[i])
					reopened++;
				else if (p[i].fd >= 0)
					ever += opened[i] = 1;
			}
			open += p[i].fd >= 0;
		}
		if (!all_once && ever == n) {
			all_once = 1;
			dprintf(report, "up\n");
		}
		poll(p, n, 100);
		long long now = ms_now();
		int tick = now - last_byte >= 1000;
		for (unsigned i = 0; i < n; i++) {
			if (p[i].fd < 0)
				continue;
			if (p[i].revents & (POLLIN | POLLHUP | POLLERR | POLLRDHUP)) {
				char buf[512];
				if (read(p[i].fd, buf, sizeof(buf)) <= 0 || (p[i].revents & (POLLHUP | POLLERR))) {
					close(p[i].fd);
					p[i].fd = -1;
					continue;
				}
			}
			if (i < o->slowloris && (!started[i] || tick)) {
				const char *what = started[i] ? "a" : head;
				if (send(p[i].fd, what, strlen(what), MSG_NOSIGNAL | MSG_DONTWAIT) > 0)
					started[i] = 1;   /* the header begun */
			}
		}
		if (tick)
			last_byte = now;
		if (now - last_report >= 1000) {
			dprintf(report, "open %u reopened %lu\n", open, reopened);
			last_report = now;
		}
	}
}

int flood_start(struct flood *f, const struct flood_opts *o)
{
	int pp[2];
	if (pipe(pp) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		close(pp[0]);
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (o->become && o->become(o->arg) < 0)
			_exit(2);
		run(o, pp[1]);
		_exit(0);
	}
	close(pp[1]);
	f->pid = pid;
	f->report = pp[0];
	/* "up", or 30 s */
	struct pollfd w = { pp[0], POLLIN, 0 };
	long long end = ms_now() + 30000;
	char line[128];
	size_t len = 0;
	while (ms_now() < end && poll(&w, 1, 1000) >= 0) {
		if (!(w.revents & POLLIN))
			continue;
		ssize_t k = read(pp[0], line + len, sizeof(line) - 1 - len);
		if (k <= 0)
			return -EIO;
		len += (size_t)k;
		line[len] = '\0';
		if (strstr(line, "up\n"))
			break;
		char *nl = strrchr(line, '\n');
		if (nl) {
			len = strlen(nl + 1);
			memmove(line, nl + 1, len + 1);
		}
	}
	fcntl(pp[0], F_SETFL, O_NONBLOCK);
	return 0;
}

void flood_status(struct flood *f, unsigned *open, unsigned long *reopened)
{
	char buf[8192];
	ssize_t k, len = 0;
	while ((k = read(f->report, buf + len, sizeof(buf) - 1 - (size_t)len)) > 0 && len + k < (ssize_t)sizeof(buf) - 1)
		len += k;
	buf[len] = '\0';
	const char *last = NULL;
	for (const char *s = buf; (s = strstr(s, "open ")); s++)
		last = s;
	*open = 0;
	*reopened = 0;
	if (last)
		sscanf(last, "open %u reopened %lu", open, reopened);
}

void flood_stop(struct flood *f)
{
	if (f->pid > 0) {
		kill(f->pid, SIGKILL);
		waitpid(f->pid, NULL, 0);
	}
	if (f->report >= 0)
		close(f->report);
	f->pid = 0;
	f->report = -1;
}
