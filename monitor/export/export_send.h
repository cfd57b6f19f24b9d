/*
 * export_send.h — plaintext Graphite delivery over TCP to one destination.
 * The protocol has no acknowledgement, so a batch counts as delivered only
 * when, after we close our write side, carbon closes its side too: it has
 * then read (and parsed) every line. Everything is bounded in time.
 */
#ifndef LOOPSTAT_EXPORT_SEND_H
#define LOOPSTAT_EXPORT_SEND_H

#include <stddef.h>

#define EXPORT_DEST_MAX 16

struct export_dest {
	char host[256];
	char port[8];
	char label[272];   /* "host:port", for messages */
	char key[272];     /* sanitised label: cursor file names, self-report */
};

/* Parses "HOST:PORT[,HOST:PORT...]" ("[v6addr]:PORT" too). Returns the
 * number of destinations (>= 1), or -EINVAL with a reason in err. */
int export_dest_parse(const char *spec, struct export_dest *out, int max, char *err, size_t errlen);

struct export_send_timeouts {
	int connect_ms;   /* per address tried */
	int io_ms;        /* longest a write may make no progress */
	int close_ms;     /* wait for carbon's close after our shutdown(SHUT_WR) */
	int resolve_ms;
};

/* Default timeouts: 2 s connect, 5 s no-progress, 5 s close, 3 s resolve. */
void export_send_timeouts_init(struct export_send_timeouts *t);

/* One attempt: resolve, connect (non-blocking), write buf, shut down the
 * write side, wait for the peer's close. Never past deadline_ms
 * (CLOCK_MONOTONIC milliseconds). Returns 0 when delivered, else a negative
 * errno (-ETIMEDOUT, -ECONNREFUSED, -ECONNRESET, -EHOSTUNREACH for a name
 * that does not resolve, ...) with a lowercase reason in why. */
int export_send_once(const struct export_dest *d, const char *buf, size_t len,
                     const struct export_send_timeouts *t, long long deadline_ms, char *why, size_t whylen);

/* export_send_once, retried with exponential backoff (200 ms doubling, at
 * most 3 s, +-50 % jitter so cron runs on many hosts do not retry in step)
 * while the next attempt can still start before deadline_ms. *attempts gets
 * the number made. Returns as export_send_once's last attempt. */
int export_send_retry(const struct export_dest *d, const char *buf, size_t len,
                      const struct export_send_timeouts *t, long long deadline_ms, int *attempts,
                      char *why, size_t whylen);

#endif /* LOOPSTAT_EXPORT_SEND_H */
