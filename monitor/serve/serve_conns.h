/*
 * serve_conns.h — serve's connections, each known from its accept: a
 * whole-request deadline, a cap per client address and a total cap that
 * makes room for a new connection by shutting down the oldest idle one
 * (serve_conns.c). serve_http.c calls these from libmicrohttpd's
 * notifications; any thread may.
 */
#ifndef LOOPSTAT_SERVE_CONNS_H
#define LOOPSTAT_SERVE_CONNS_H

#include <stddef.h>
#include <sys/socket.h>

struct serve_conns;
struct serve_conn;

/* cap connections at once (per address: a sixteenth of it, at least 16);
 * a request not answered within deadline_s of its connection's accept or
 * last answer is shut down. 0 or -errno. */
int serve_conns_new(unsigned cap, double deadline_s, struct serve_conns **out);
void serve_conns_delete(struct serve_conns *cs);

/* A connection accepted on fd from addr: its record (NULL without memory:
 * then it is shut down), possibly after shutting down another of its
 * address's (over that cap) or the oldest (over the total) to make room. */
struct serve_conn *serve_conns_opened(struct serve_conns *cs, int fd, const struct sockaddr *addr);
/* MHD closed it: the record is freed. */
void serve_conns_closed(struct serve_conns *cs, struct serve_conn *c);
/* A response is queued (not evicted to make room while it is sent), and
 * sent: the next request's deadline starts. */
void serve_conns_answering(struct serve_conns *cs, struct serve_conn *c);
void serve_conns_answered(struct serve_conns *cs, struct serve_conn *c);

/* 1 with the reason in buf when connections were turned away within the
 * last minute, else 0 (buf ""). */
int serve_conns_health(struct serve_conns *cs, char *buf, size_t len);

#endif /* LOOPSTAT_SERVE_CONNS_H */
