/*
 * carbon.h — real Graphite servers for the export tests: a carbon-cache (or
 * any server program) in the background on a free loopback port, stopped by
 * its pid, and whisper-fetch read-back of what it stored.
 */
#ifndef TESTS_CARBON_H
#define TESTS_CARBON_H

#include <sys/types.h>

struct carbon_server {
	pid_t pid;
	int port;
	char dir[320];
};

/* A loopback port nobody listens on, never one this test already took. */
int carbon_free_port(void);
/* 1 if something accepts on 127.0.0.1:port. */
int carbon_port_open(int port);
/* Runs argv in the background, output to dir/out, killed if the test dies. */
pid_t carbon_spawn_cmd(const char *dir, char *const argv[]);
/* Waits (bounded, 15 s) until s->port accepts; fails the test if s->pid exits first. */
void carbon_wait_port(struct carbon_server *s, const char *what);
/* SIGTERM, then SIGKILL after 5 s; reaps it. */
void carbon_stop(struct carbon_server *s);
void carbon_write_text(const char *path, const char *text);

/* A carbon-cache in the foreground with its own conf and storage under dir;
 * retentions NULL means "1s:2h". carbon_start also waits for the port. */
void carbon_spawn(struct carbon_server *s, const char *dir, int port, const char *retentions);
void carbon_start(struct carbon_server *s, const char *dir, int port, const char *retentions);

/* A carbon-aggregator in the foreground on port, with rules (the text of
 * aggregation-rules.conf), sending only its aggregates, in the line
 * protocol, to the carbon-cache on cache_port; computed every second.
 * Waits for the port. */
void carbon_aggregator_start(struct carbon_server *s, const char *dir, int port, int cache_port, const char *rules);

/* whisper-fetch of metric path a.b.c over (from, until]: got[k] is the value
 * at from + 1 + k, NAN where whisper has none. */
void carbon_fetch_range(const char *dir, const char *metric, long long from, long long until, double *got);
/* Waits (bounded, 8 s) until carbon's writer has flushed metric at every one
 * of want[0..n) (ascending); got[] is the range want[0]..want[n-1]. */
void carbon_fetch_wait_all(const char *dir, const char *metric, const long long *want, int n, double *got);
double carbon_fetch_wait(const char *dir, const char *metric, long long ts);

#endif /* TESTS_CARBON_H */
