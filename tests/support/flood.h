/*
 * flood.h — a local user's connection flood against a TCP port, from a
 * child process: slowloris connections (a header never finished, a byte a
 * second) and idle ones (nothing sent), spread over loopback source
 * addresses, each re-opened as soon as the server closes it. Shared by
 * test_serve_flood (scaled) and bench/serve_flood (the full figures).
 */
#ifndef TESTS_FLOOD_H
#define TESTS_FLOOD_H

#include <sys/types.h>

struct flood_opts {
	int      port;          /* on 127.0.0.1 */
	unsigned slowloris;     /* connections sending a header one byte a second */
	unsigned idle;          /* connections that send nothing */
	unsigned addrs;         /* source addresses 127.0.0.2 ... (0: 127.0.0.1 only) */
	int    (*become)(void *arg); /* run in the child first (e.g. drop to a user); NULL: none */
	void    *arg;
};

struct flood {
	pid_t pid;
	int   report;           /* the child's lines: "open N reopened M" once a second */
};

/* Starts the flood; returns 0 once every connection was opened once (or
 * after 30 s), or -errno. The child raises its open-file limit to the
 * hard one and dies with the caller. */
int flood_start(struct flood *f, const struct flood_opts *o);
/* The child's last report: connections open and re-opened so far. */
void flood_status(struct flood *f, unsigned *open, unsigned long *reopened);
void flood_stop(struct flood *f);

#endif /* TESTS_FLOOD_H */
