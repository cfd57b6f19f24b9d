/*
 * serve_http.c — the exporter's HTTP side (libmicrohttpd): GET /metrics
 * answers the last published bodies in the format the Accept header asks
 * for, GET /healthz says whether the figures are fresh (and whether
 * connections are being turned away), anything else is 404 or 405.
 * Connections are bounded in number, memory, idle time and request time
 * (serve_conns.c).
 */
#include "serve/serve_int.h"
#include "serve/serve_conns.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CT_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define CT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define CONN_MEMORY (16 * 1024)   /* a scrape's request is a few hundred bytes; the body is not in it */
#define CONN_RESERVE 64            /* MHD's cap above ours: it keeps accepting while we make room */

struct serve {
	struct MHD_Daemon *daemon;
	pthread_mutex_t lock;          /* guards body */
	struct serve_body *body;       /* the last published, NULL before the first */
	struct serve_conns *conns;     /* every connection, from its accept */
	struct serve_opts o;
};

static struct serve_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct serve *s = cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		serve_conns_closed(s->conns, *socket_context);
		*socket_context = NULL;
		return;
	}
	const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *addr = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (fd)
		*socket_context = serve_conns_opened(s->conns, fd->connect_fd, addr ? addr->client_addr : NULL);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)con_cls, (void)toe;
	struct serve *s = cls;
	serve_conns_answered(s->conns, conn_of(c));
}

/* The q of one media range's parameters ("; version=1.0.0;q=0.5"): 1 when absent. */
static double q_of(const char *params, size_t len)
{
	for (const char *p = params; p && p < params + len; p = memchr(p, ';', (size_t)(params + len - p))) {
		p++;
		while (p < params + len && isspace((unsigned char)*p))
			p++;
		if (p + 2 <= params + len && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=')
			return strtod(p + 2, NULL);
	}
	return 1;
}

int serve_wants_openmetrics(const char *accept)
{
	double om = 0, text = 0;
	for (const char *p = accept; p && *p;) {
		size_t len = strcspn(p, ",");
		const char *t = p;
		while (t < p + len && isspace((unsigned char)*t))
			t++;
		size_t tl = strcspn(t, ";,");
		double q = q_of(t + tl, len - (size_t)(t - p) - tl);
		while (tl && isspace((unsigned char)t[tl - 1]))
			tl--;
#define IS(s) (tl == strlen(s) && !strncasecmp(t, s, tl))
		if (IS("application/openmetrics-text"))
			om = q > om ? q : om;
		else if (IS("text/plain") || IS("text/*") || IS("*/*"))
			text = q > text ? q : text;
#undef IS
		p += len + (p[len] == ',');
	}
	return om > 0 && om > text;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static struct serve_body *current(struct serve *s)
{
	pthread_mutex_lock(&s->lock);
	struct serve_body *b = s->body ? serve_body_get(s->body) : NULL;
	pthread_mutex_unlock(&s->lock);
	return b;
}

static void put_body(void *cls)
{
	serve_body_put(cls);
}

static enum MHD_Result answer_metrics(struct serve *s, struct MHD_Connection *c)
{
	struct serve_body *b = current(s);
	if (!b)
		return answer_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no figures yet: the first window is not over\n");
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	int om = accept && serve_wants_openmetrics(accept);
	/* the body is shared, never copied: the response drops its reference when sent */
	struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback_cls(
		om ? b->om_len : b->text_len, om ? b->om : b->text, put_body, b);
	if (!r) {
		serve_body_put(b);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, om ? CT_OPENMETRICS : CT_TEXT);
	enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result answer_health(struct serve *s, struct MHD_Connection *c)
{
	struct serve_body *b = current(s);
	char text[512], why[400];
	unsigned status = MHD_HTTP_OK;
	if (!b) {
		status = MHD_HTTP_SERVICE_UNAVAILABLE;
		snprintf(text, sizeof(text), "starting: the first window is not over\n");
	} else {
		double age = serve_body_age(b);
		if (age > s->o.stale_s) {
			status = MHD_HTTP_SERVICE_UNAVAILABLE;
			snprintf(text, sizeof(text), "stale: the last figures are %.1f s old\n", age);
		} else if (serve_conns_health(s->conns, why, sizeof(why))) {
			/* still serving fresh figures: 200, but said */
			snprintf(text, sizeof(text), "degraded: %s\n", why);
		} else {
			snprintf(text, sizeof(text), "ok\n");
		}
		serve_body_put(b);
	}
	return answer_text(c, status, text);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload, size_t *upload_len, void **con_cls)
{
	(void)version, (void)upload;
	static int seen;
	/* answer once the whole request is in: a response queued on the first
	 * call, before any body is read, makes MHD close the connection */
	if (!*con_cls) {
		*con_cls = &seen;
		return MHD_YES;
	}
	if (*upload_len) {
		*upload_len = 0;   /* a body is not for us: read and dropped */
		return MHD_YES;
	}
	struct serve *s = cls;
	serve_conns_answering(s->conns, conn_of(c));
	int get = !strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD);
	int metrics = !strcmp(url, "/metrics"), health = !strcmp(url, "/healthz");
	if (!metrics && !health)
		return answer_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics or /healthz\n");
	if (!get)
		return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	return metrics ? answer_metrics(s, c) : answer_health(s, c);
}

int serve_start(const struct serve_opts *o, struct serve **out, char *err, size_t errlen)
{
	struct serve *s = calloc(1, sizeof(*s));
	if (!s) {
		close(o->listen_fd);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->o = *o;
	int rc = serve_conns_new(o->max_connections, o->timeout_s, &s->conns);
	if (rc < 0) {
		close(o->listen_fd);
		free(s);
		snprintf(err, errlen, "starting the connection reaper: %s", strerror(-rc));
		return rc;
	}
	pthread_mutex_init(&s->lock, NULL);
	/* epoll threads: every socket non-blocking, so a client that never reads
	 * or never sends waits in the poll set and holds nobody up */
	s->daemon = MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC, 0, NULL, NULL, handle, s,
	                             MHD_OPTION_LISTEN_SOCKET, (MHD_socket)o->listen_fd,
	                             MHD_OPTION_CONNECTION_LIMIT, (unsigned)o->max_connections + CONN_RESERVE,
	                             MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
	                             MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
	                             MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)o->timeout_s,
	                             MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
	                             MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(o->threads ? o->threads : 1),
	                             MHD_OPTION_END);
	if (!s->daemon) {
		int e = errno ? errno : EIO;
		pthread_mutex_destroy(&s->lock);
		serve_conns_delete(s->conns);
		free(s);
		snprintf(err, errlen, "starting the HTTP server (libmicrohttpd): %s", strerror(e));
		return -e;
	}
	*out = s;
	return 0;
}

int serve_publish(struct serve *s, const struct model *m, int64_t now)
{
	return serve_publish_with(s, m, now, NULL, 0);
}

int serve_publish_with(struct serve *s, const struct model *m, int64_t now, const struct serve_gauge *g, size_t ng)
{
	struct serve_body *b;
	int rc = serve_body_new(m, s->o.prefix, s->o.host, now, g, ng, &b);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&s->lock);
	struct serve_body *old = s->body;
	s->body = b;
	pthread_mutex_unlock(&s->lock);
	serve_body_put(old);   /* freed now, or by the last scrape still sending it */
	return 0;
}

void serve_stop(struct serve *s)
{
	if (!s)
		return;
	/* quiesced first, MHD gives the listen socket back instead of closing it */
	MHD_socket fd = MHD_quiesce_daemon(s->daemon);
	MHD_stop_daemon(s->daemon);   /* joins its threads: no scrape holds a body after this */
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	serve_conns_delete(s->conns);   /* every connection was closed and reported */
	serve_body_put(s->body);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int serve_listen(const char *spec, int *port, char *err, size_t errlen)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	if (!colon || !colon[1]) {
		snprintf(err, errlen, "'%s': expected ADDR:PORT (127.0.0.1:%d, [::1]:%d, :%d)", spec,
		         SERVE_DEFAULT_PORT, SERVE_DEFAULT_PORT, SERVE_DEFAULT_PORT);
		return -EINVAL;
	}
	size_t hl = (size_t)(colon - spec);
	if (hl >= 2 && spec[0] == '[' && spec[hl - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(hl - 2), spec + 1);
	else
		snprintf(host, sizeof(host), "%.*s", (int)hl, spec);
	char *end;
	long p = strtol(colon + 1, &end, 10);
	if (*end || p < 0 || p > 65535 || !isdigit((unsigned char)colon[1])) {
		snprintf(err, errlen, "'%s': the port must be a number from 0 to 65535", spec);
		return -EINVAL;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
	                          .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE }, *ai = NULL;
	int g = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
	if (g) {
		snprintf(err, errlen, "'%s': %s (the address must be numeric: 127.0.0.1, ::1)", spec, gai_strerror(g));
		return -EINVAL;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1, rc = 0;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s(%s): %s%s", fd < 0 ? "socket" : "bind", spec, strerror(-rc),
		         rc == -EACCES ? " (a port below 1024 needs root or CAP_NET_BIND_SERVICE: choose a higher one)" : "");
	}
	freeaddrinfo(ai);
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	*port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                       : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}
