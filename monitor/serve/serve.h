/*
 * serve.h — `loopstat serve`'s view: a Prometheus exporter. Each window the
 * command hands the view a model; the view renders it once, in the text
 * format 0.0.4 and in OpenMetrics, from the metric table (export_points +
 * export_prom, the textfile's names), and swaps the new bodies in. A
 * scrape only takes a reference to the last bodies: no sampling and no
 * rendering happens at scrape time.
 *
 * The HTTP side is libmicrohttpd with its own epoll threads: every
 * connection is non-blocking, so a client that never reads or never sends
 * holds one slot of --max-connections until --timeout, and blocks nothing.
 */
#ifndef LOOPSTAT_SERVE_H
#define LOOPSTAT_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

#define SERVE_DEFAULT_PORT 10464
#define SERVE_DEFAULT_LISTEN "127.0.0.1:10464"

struct serve_opts {
	int listen_fd;            /* bound and listening; the server owns it from serve_start on */
	unsigned max_connections; /* at once; more are closed on accept */
	unsigned timeout_s;       /* a connection idle this long, or a request not answered
	                           * within it of its accept (or the last answer), is closed */
	unsigned threads;         /* epoll threads */
	const char *prefix;       /* of every name, "loopstat"; borrowed for the server's life */
	const char *host;         /* the host label; borrowed likewise */
	double stale_s;           /* /healthz says 503 when the last figures are older */
};

struct serve;

/* Starts serving (/metrics answers 503 until the first serve_publish).
 * Returns 0, or -errno with the reason in err. */
int serve_start(const struct serve_opts *o, struct serve **out, char *err, size_t errlen);

/* Renders m (figures at unix time now) and makes it what /metrics answers.
 * Returns 0 or -ENOMEM (the last bodies stay). */
int serve_publish(struct serve *s, const struct model *m, int64_t now);

/* A gauge outside the model (the flight recorder's), published beside
 * its figures: name in base units after the prefix
 * ("flight_recordings_written"), one line of help; both static. */
struct serve_gauge {
	const char *name, *help;
	double value;
};

/* serve_publish with ng gauges g beside the model's figures. */
int serve_publish_with(struct serve *s, const struct model *m, int64_t now, const struct serve_gauge *g, size_t ng);

/* Stops: no new connection, the ones in flight are closed; frees s. */
void serve_stop(struct serve *s);

/* What a client's Accept header asks for: 1 for OpenMetrics (its q above
 * the text format's), 0 for the text format 0.0.4 (also when absent). */
int serve_wants_openmetrics(const char *accept);

/* Parses "ADDR:PORT" ("127.0.0.1:10464", "[::1]:10464", ":10464" for every
 * address) and opens a listening TCP socket there (SO_REUSEADDR, close on
 * exec). Returns the fd, or -errno with the reason in err. *port gets the
 * port bound (0 asks the kernel for one). */
int serve_listen(const char *spec, int *port, char *err, size_t errlen);

#endif /* LOOPSTAT_SERVE_H */
