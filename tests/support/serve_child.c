/*
 * serve_child.c — `loopstat serve` as a test's child, and a socket HTTP client.
 */
#include "serve_child.h"
#include "support.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

void sc_start(struct serve_child *c, const char *const args[])
{
	const char *argv[32];
	int n = 0;
	argv[n++] = ts_loopstat_bin();
	argv[n++] = "serve";
	argv[n++] = "--listen";
	argv[n++] = "127.0.0.1:0";
	for (int i = 0; args && args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t parent = getpid();
	c->pid = fork();
	cr_assert_geq(c->pid, 0);
	if (c->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		dup2(p[1], STDERR_FILENO);
		int null = open("/dev/null", O_RDWR);
		dup2(null, STDOUT_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	c->err_fd = p[0];
	fcntl(c->err_fd, F_SETFL, O_NONBLOCK);
	char line[1024];
	size_t len = 0;
	long long deadline = ts_now_ms() + 5000;
	c->port = 0;
	while (!c->port && ts_now_ms() < deadline && len + 1 < sizeof(line)) {
		struct pollfd pf = { c->err_fd, POLLIN, 0 };
		poll(&pf, 1, 100);
		ssize_t k = read(c->err_fd, line + len, sizeof(line) - 1 - len);
		if (k == 0)
			break;
		if (k > 0)
			len += (size_t)k;
		line[len] = '\0';
		const char *at = strstr(line, "(port ");
		if (at && strchr(at, ')'))
			c->port = atoi(at + 6);
	}
	line[len] = '\0';
	cr_assert_gt(c->port, 0, "loopstat serve named no port within 5 s; it said: %s", line);
}

int sc_stop(struct serve_child *c, int sig, int timeout_ms, char **err)
{
	kill(c->pid, sig);
	int status = 0, rc = -1;
	long long deadline = ts_now_ms() + timeout_ms;
	while (ts_now_ms() < deadline) {
		pid_t w = waitpid(c->pid, &status, WNOHANG);
		if (w == c->pid) {
			rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			break;
		}
		usleep(10000);
	}
	if (rc < 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &status, 0);
	}
	if (err) {
		size_t cap = 4096, len = 0;
		*err = malloc(cap);
		ssize_t k;
		while ((k = read(c->err_fd, *err + len, cap - 1 - len)) > 0) {
			len += (size_t)k;
			if (len + 1 == cap)
				*err = realloc(*err, cap *= 2);
		}
		(*err)[len] = '\0';
	}
	close(c->err_fd);
	return rc;
}

int http_connect(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

/* Waits for fd to be ready for events until deadline_ms. 0 or -ETIMEDOUT. */
static int wait_fd(int fd, short events, long long deadline_ms)
{
	for (;;) {
		long long left = deadline_ms - ts_now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pf = { fd, events, 0 };
		int k = poll(&pf, 1, (int)left);
		if (k > 0)
			return 0;
		if (k < 0 && errno != EINTR)
			return -errno;
	}
}

int http_request(int port, const char *method, const char *path, const char *extra, int timeout_ms,
                 struct http_response *r)
{
	memset(r, 0, sizeof(*r));
	long long deadline = ts_now_ms() + timeout_ms;
	int fd = http_connect(port);
	if (fd < 0)
		return fd;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	char req[2048];
	int n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sConnection: close\r\n\r\n",
	                 method, path, port, extra ? extra : "");
	int rc = 0;
	for (int off = 0; off < n && rc == 0;) {
		ssize_t k = send(fd, req + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (k > 0)
			off += (int)k;
		else if (k < 0 && errno == EAGAIN)
			rc = wait_fd(fd, POLLOUT, deadline);
		else
			rc = -errno;
	}
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	while (rc == 0) {
		if (len + 1 == cap)
			buf = realloc(buf, cap *= 2);
		ssize_t k = recv(fd, buf + len, cap - 1 - len, 0);
		if (k > 0)
			len += (size_t)k;
		else if (k == 0)
			break;
		else if (errno == EAGAIN)
			rc = wait_fd(fd, POLLIN, deadline);
		else
			rc = -errno;
	}
	close(fd);
	buf[len] = '\0';
	char *end = strstr(buf, "\r\n\r\n");
	if (rc == 0 && !end)
		rc = -EPROTO;
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*end = '\0';
	r->head = buf;
	r->body = end + 4;
	r->body_len = len - (size_t)(r->body - buf);
	sscanf(buf, "HTTP/1.%*d %d", &r->status);
	return 0;
}

int http_get(int port, const char *path, const char *extra, int timeout_ms, struct http_response *r)
{
	return http_request(port, "GET", path, extra, timeout_ms, r);
}

const char *http_header(const struct http_response *r, const char *name, char *buf, size_t len)
{
	size_t nl = strlen(name);
	for (const char *p = r->head; p && *p; p = strstr(p, "\r\n") ? strstr(p, "\r\n") + 2 : NULL) {
		if (!strncasecmp(p, name, nl) && p[nl] == ':') {
			const char *v = p + nl + 1;
			v += strspn(v, " ");
			snprintf(buf, len, "%.*s", (int)strcspn(v, "\r"), v);
			return buf;
		}
	}
	return NULL;
}

void http_response_free(struct http_response *r)
{
	free(r->head);
	memset(r, 0, sizeof(*r));
}

void sc_promtool_check(const char *dir, const char *body, size_t len)
{
	char path[400], cmd[600];
	snprintf(path, sizeof(path), "%s/scrape.prom", dir);
	cr_assert_eq(ts_write_file(path, body, len), 0);
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < '%s' 2>&1", path);
	char *sh[] = { "/bin/sh", "-c", cmd, NULL }, *out;
	int rc = ts_run(sh, &out, 15000);
	cr_assert_eq(rc, 0, "promtool check metrics refuses a live scrape: %s\n%s", out, body);
	free(out);
}
