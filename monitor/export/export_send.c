/*
 * export_send.c — one destination, one batch: connect, write, half-close,
 * wait for carbon's close. Non-blocking sockets and poll() bound every step.
 */
#include "export/export_send.h"

#include "export/export_name.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

void export_send_timeouts_init(struct export_send_timeouts *t)
{
	t->connect_ms = 2000;
	t->io_ms = 5000;
	t->close_ms = 5000;
	t->resolve_ms = 3000;
}

int export_dest_parse(const char *spec, struct export_dest *out, int max, char *err, size_t errlen)
{
	int n = 0;
	const char *p = spec;
	if (!spec || !*spec) {
		snprintf(err, errlen, "no destination given (expected HOST:PORT[,HOST:PORT...])");
		return -EINVAL;
	}
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char item[300];
		if (len == 0 || len >= sizeof(item)) {
			snprintf(err, errlen, "destination %d in '%s': empty or too long", n + 1, spec);
			return -EINVAL;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		if (n == max) {
			snprintf(err, errlen, "more than %d destinations in '%s'", max, spec);
			return -EINVAL;
		}
		struct export_dest *d = &out[n];
		char *host = item, *colon;
		if (item[0] == '[') {
			char *close = strchr(item, ']');
			colon = close && close[1] == ':' ? close + 1 : NULL;
			if (close)
				*close = '\0';
			host = item + 1;
		} else {
			colon = strrchr(item, ':');
		}
		char *end = NULL;
		long port = colon ? strtol(colon + 1, &end, 10) : 0;
		if (!colon || colon == host || end == colon + 1 || *end || port < 1 || port > 65535) {
			snprintf(err, errlen, "destination '%.*s': expected HOST:PORT with a port 1-65535", (int)len, p);
			return -EINVAL;
		}
		*colon = '\0';
		if (strlen(host) >= sizeof(d->host) || !*host) {
			snprintf(err, errlen, "destination '%.*s': bad host", (int)len, p);
			return -EINVAL;
		}
		memcpy(d->host, host, strlen(host) + 1);   /* its length checked above */
		snprintf(d->port, sizeof(d->port), "%ld", port);
		snprintf(d->label, sizeof(d->label), "%.*s", (int)len, p);
		char raw[sizeof(d->label) + 8];
		snprintf(raw, sizeof(raw), "%s_%s", d->host, d->port);
		expo_sanitize(d->key, raw, strlen(raw));
		for (int i = 0; i < n; i++)
			if (!strcmp(out[i].key, d->key)) {
				snprintf(err, errlen, "destination '%s' given twice", d->label);
				return -EINVAL;
			}
		n++;
		if (!comma)
			return n;
		p = comma + 1;
	}
}

static int left_ms(long long deadline, int cap)
{
	long long l = deadline - mono_ms();
	if (l < 0)
		l = 0;
	return l < cap ? (int)l : cap;
}

static int resolve(const struct export_dest *d, const struct export_send_timeouts *t, long long deadline,
                   struct addrinfo **res, char *why, size_t whylen)
{
	/* getaddrinfo_a, because a plain getaddrinfo cannot be bounded in time */
	struct gaicb *req = calloc(1, sizeof(*req));
	struct addrinfo *hints = calloc(1, sizeof(*hints));
	if (!req || !hints) {
		free(req);
		free(hints);
		return -ENOMEM;
	}
	hints->ai_family = AF_UNSPEC;
	hints->ai_socktype = SOCK_STREAM;
	req->ar_name = d->host;
	req->ar_service = d->port;
	req->ar_request = hints;
	struct gaicb *list[1] = { req };
	int rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	if (rc == 0) {
		int ms = left_ms(deadline, t->resolve_ms);
		struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		while ((rc = gai_error(req)) == EAI_INPROGRESS) {
			if (gai_suspend((const struct gaicb *const *)list, 1, &ts) == EAI_AGAIN)
				break;
		}
	}
	if (rc == EAI_INPROGRESS && gai_cancel(req) != EAI_CANCELED) {
		/* the resolver thread still owns req: leave it to it */
		snprintf(why, whylen, "resolving %s timed out", d->host);
		return -ETIMEDOUT;
	}
	if (rc == 0) {
		*res = req->ar_result;
	} else {
		snprintf(why, whylen, "cannot resolve %s: %s", d->host,
		         rc == EAI_INPROGRESS || rc == EAI_CANCELED ? "timed out" : gai_strerror(rc));
		if (req->ar_result)
			freeaddrinfo(req->ar_result);
	}
	free(hints);
	free(req);
	return rc == 0 ? 0 : -EHOSTUNREACH;
}

static int wait_fd(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };
	int n;
	do
		n = poll(&p, 1, ms);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static int connect_one(const struct addrinfo *ai, int ms)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	int e = errno;
	if (e == EINPROGRESS) {
		int n = wait_fd(fd, POLLOUT, ms);
		socklen_t sl = sizeof(e);
		if (n == 0)
			e = ETIMEDOUT;
		else if (n < 0)
			e = -n;
		else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) < 0)
			e = errno;
		if (e == 0)
			return fd;
	}
	close(fd);
	return -e;
}

static int write_all(int fd, const char *buf, size_t len, int io_ms, long long deadline)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = send(fd, buf + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		int ms = left_ms(deadline, io_ms);
		int w = ms > 0 ? wait_fd(fd, POLLOUT, ms) : 0;
		if (w == 0)
			return -ETIMEDOUT;
		if (w < 0)
			return w;
	}
	return 0;
}

/* After our SHUT_WR, carbon closes once it has read every line: read (and
 * discard) until EOF. A reset or a timeout leaves the batch in doubt. */
static int wait_close(int fd, int close_ms, long long deadline)
{
	long long until = mono_ms() + close_ms;
	if (until > deadline)
		until = deadline;
	char sink[512];
	for (;;) {
		ssize_t n = recv(fd, sink, sizeof(sink), 0);
		if (n == 0)
			return 0;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		int ms = left_ms(until, close_ms);
		int w = ms > 0 ? wait_fd(fd, POLLIN, ms) : 0;
		if (w == 0)
			return -ETIMEDOUT;
		if (w < 0)
			return w;
	}
}

int export_send_once(const struct export_dest *d, const char *buf, size_t len,
                     const struct export_send_timeouts *t, long long deadline_ms, char *why, size_t whylen)
{
	struct addrinfo *res = NULL;
	int rc = resolve(d, t, deadline_ms, &res, why, whylen);
	if (rc < 0)
		return rc;
	int fd = -ETIMEDOUT;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int ms = left_ms(deadline_ms, t->connect_ms);
		if (ms <= 0)
			break;
		fd = connect_one(ai, ms);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(why, whylen, "connect: %s", strerror(-fd));
		return fd;
	}
	rc = write_all(fd, buf, len, t->io_ms, deadline_ms);
	if (rc < 0) {
		snprintf(why, whylen, "write: %s", rc == -ETIMEDOUT ? "no progress, timed out" : strerror(-rc));
	} else if (shutdown(fd, SHUT_WR) < 0) {
		/* ENOTCONN here: the peer reset the connection after our writes */
		rc = errno == ENOTCONN ? -ECONNRESET : -errno;
		snprintf(why, whylen, "sent, but shutdown failed (connection reset?): %s; delivery unconfirmed",
		         strerror(errno));
	} else if ((rc = wait_close(fd, t->close_ms, deadline_ms)) < 0) {
		snprintf(why, whylen, "%s", rc == -ETIMEDOUT ? "sent, but the server did not close: delivery "
		         "unconfirmed" : "sent, but the connection was reset: delivery unconfirmed");
		if (rc != -ETIMEDOUT)
			rc = -ECONNRESET;
	}
	close(fd);
	return rc;
}

int export_send_retry(const struct export_dest *d, const char *buf, size_t len,
                      const struct export_send_timeouts *t, long long deadline_ms, int *attempts,
                      char *why, size_t whylen)
{
	unsigned seed = (unsigned)(mono_ms() ^ (getpid() << 8));
	int backoff = 200, rc;
	*attempts = 0;
	for (;;) {
		++*attempts;
		rc = export_send_once(d, buf, len, t, deadline_ms, why, whylen);
		if (rc == 0)
			return 0;
		int sleep_ms = backoff / 2 + (int)(rand_r(&seed) % (unsigned)backoff);
		if (mono_ms() + sleep_ms >= deadline_ms)
			return rc;
		struct timespec ts = { sleep_ms / 1000, (sleep_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		backoff = backoff * 2 > 3000 ? 3000 : backoff * 2;
	}
}
