/*
 * serve_child.h — `loopstat serve` as a child of a test, and a plain
 * socket HTTP/1.1 client for it (127.0.0.1 only): a test sees exactly the
 * bytes a scraper would.
 */
#ifndef TESTS_SERVE_CHILD_H
#define TESTS_SERVE_CHILD_H

#include <stddef.h>
#include <sys/types.h>

struct serve_child {
	pid_t pid;
	int   port;     /* the port it bound (the tests listen on 127.0.0.1:0) */
	int   err_fd;   /* its stderr, non-blocking */
};

/* Starts `loopstat serve --listen 127.0.0.1:0 ARGS...` (args NULL-terminated,
 * at most 24) and waits up to 5 s for the line that names its port. The
 * child dies with the test. */
void sc_start(struct serve_child *c, const char *const args[]);

/* Sends sig and waits up to timeout_ms for the exit. Returns the exit status
 * (0..255), 128 + the signal that killed it, or -1 when it did not exit (it
 * is killed then). *err (may be NULL) gets what it said on stderr since
 * sc_start's line; the caller frees it. */
int sc_stop(struct serve_child *c, int sig, int timeout_ms, char **err);

struct http_response {
	int    status;        /* 0 when no status line came */
	char  *head;          /* the status line and headers, NUL-terminated */
	char  *body;          /* NUL-terminated; body_len bytes */
	size_t body_len;
};

/* A connected blocking TCP socket to 127.0.0.1:port, or -errno. */
int http_connect(int port);

/* GET path (extra: more header lines, each ending in \r\n, or NULL) over a
 * new connection; reads the whole response within timeout_ms. Returns 0 or
 * -errno (-ETIMEDOUT). Free with http_response_free. */
int http_get(int port, const char *path, const char *extra, int timeout_ms, struct http_response *r);
/* The same with a method other than GET. */
int http_request(int port, const char *method, const char *path, const char *extra, int timeout_ms,
                 struct http_response *r);

/* A header's value (case-insensitive name) into buf; NULL when absent. */
const char *http_header(const struct http_response *r, const char *name, char *buf, size_t len);

void http_response_free(struct http_response *r);

/* promtool check metrics accepts body (a scrape, written into dir first);
 * fails the test with promtool's words otherwise. */
void sc_promtool_check(const char *dir, const char *body, size_t len);

#endif /* TESTS_SERVE_CHILD_H */
