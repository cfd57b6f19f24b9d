/* `loopstat serve` against real workers over real sockets: /metrics passes promtool, Accept picks OpenMetrics, a scrape reads the published figures, 1000 silent or non-reading clients and a slowloris leave it answering within 1 s, idle clients time out, a connection is kept alive, SIGTERM and SIGINT exit 0. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exitcodes.h"
#include "loopstat_shm.h"
#include "support/children.h"
#include "support/serve_child.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("serve");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(serve, .init = setup, .fini = teardown, .timeout = 30);

/* Scrapes /metrics until its body holds needle (the figures of a window
 * that saw the workers); fails after timeout_ms. */
static void scrape_until(int port, const char *needle, int timeout_ms, struct http_response *r)
{
	long long deadline = ts_now_ms() + timeout_ms;
	for (;;) {
		int rc = http_get(port, "/metrics", NULL, 2000, r);
		if (rc == 0 && r->status == 200 && strstr(r->body, needle))
			return;
		cr_assert_lt(ts_now_ms(), deadline, "no %s in /metrics within %d ms (rc %d, status %d): %s", needle,
		             timeout_ms, rc, r->status, rc == 0 ? r->body : "");
		if (rc == 0)
			http_response_free(r);
		usleep(100000);
	}
}

/* A counters worker and `loopstat serve ... -p` it; returns the worker's
 * pid, once /metrics has its figures when wait is 1. */
static pid_t serve_a_worker(struct serve_child *c, const char *const extra[], int wait)
{
	const char *cargs[] = { "-s", "40", "-b", "20", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	static char pid[32];
	snprintf(pid, sizeof(pid), "%d", (int)inst);
	const char *args[24];
	int n = 0;
	for (; extra[n] && n < 21; n++)
		args[n] = extra[n];
	args[n++] = "-p";
	args[n++] = pid;
	args[n] = NULL;
	sc_start(c, args);
	if (wait) {
		struct http_response r;
		scrape_until(c->port, "loopstat_worker_ops_total{", 6000, &r);
		http_response_free(&r);
	}
	return inst;
}

/* The value of the first sample line starting with prefix. */
static double sample_value(const char *body, const char *prefix)
{
	const char *at = strstr(body, prefix);
	cr_assert(at, "no %s in %s", prefix, body);
	const char *sp = strchr(at, '}');
	cr_assert(sp);
	return strtod(sp + 1, NULL);
}

Test(serve, real_workers_pass_promtool_and_accept_picks_the_format)
{
	const char *cargs[] = { "-s", "30", "-b", "20", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	const char *dargs[] = { "--idle", "0.5", "--seconds", "30", "--plain", NULL };
	int plain_out;
	pid_t plain = tc_spawn_example("duty_cycle", dargs, &plain_out);
	char pids[64];
	snprintf(pids, sizeof(pids), "%d,%d", (int)inst, (int)plain);
	struct serve_child c;
	const char *args[] = { "--interval", "0.2", "--window", "2", "--host", "h", "-p", pids, NULL };
	sc_start(&c, args);

	char ops[200], idle[200], hv[200];
	snprintf(ops, sizeof(ops), "\nloopstat_worker_ops_total{host=\"h\",name=\"counters\",service=\"counters\",pid=\"%d\"",
	         (int)inst);
	snprintf(idle, sizeof(idle), "\nloopstat_worker_idle_ratio{host=\"h\",name=\"duty_cycle\",service=\"duty_cycle\","
	         "pid=\"%d\"", (int)plain);
	/* the worker's wait for a CPU, once serve has two readings of it */
	char waitk[200];
	snprintf(waitk, sizeof(waitk), "\nloopstat_worker_cpu_wait_ratio{host=\"h\",name=\"duty_cycle\",service=\"duty_cycle\","
		 "pid=\"%d\"", (int)plain);
	struct http_response r;
	scrape_until(c.port, waitk, 5000, &r);
	http_response_free(&r);
	scrape_until(c.port, ops, 5000, &r);
	/* a full window of samples (2 s), for an interval that can judge */
	http_response_free(&r);
	usleep(2200000);
	cr_assert_eq(http_get(c.port, "/metrics", NULL, 2000, &r), 0);
	cr_assert(strstr(r.body, idle), "%s", r.body);
	cr_assert_str_eq(http_header(&r, "Content-Type", hv, sizeof(hv)), "text/plain; version=0.0.4; charset=utf-8");
	sc_promtool_check(dir, r.body, r.body_len);
	double share = sample_value(r.body, idle);
	char key[200];
	snprintf(key, sizeof(key), "\nloopstat_worker_idle_ci95_ratio{host=\"h\",name=\"duty_cycle\",service=\"duty_cycle\","
		 "pid=\"%d\"", (int)plain);
	double ci = sample_value(r.body, key);
	double wait = sample_value(r.body, waitk);
	/* a 0..1 ratio of the worker's own clock (it idles half of each
	 * period), within the window's interval and 3 points */
	kill(plain, SIGTERM);
	double self = tc_read_self_idle(plain_out, 5000) / 100;
	close(plain_out);
	cr_log_info("idle %g +-%g (cpu wait %g), the worker's own clock %g\n", share, ci, wait, self);
	cr_assert(ts_idle_agrees(share * 100, self * 100, wait * 100, (ci + 0.03) * 100),
		  "idle %g +-%g (cpu wait %g), the worker's own clock %g", share, ci, wait, self);
	/* the counter itself, growing from window to window, not a rate */
	double ops1 = sample_value(r.body, ops);
	http_response_free(&r);
	usleep(800000);
	cr_assert_eq(http_get(c.port, "/metrics", NULL, 2000, &r), 0);
	double ops2 = sample_value(r.body, ops);
	cr_assert_gt(ops2, ops1, "loopstat_worker_ops_total did not grow: %g then %g", ops1, ops2);
	http_response_free(&r);

	/* Prometheus' own Accept header: OpenMetrics, counters' family without _total, # EOF last */
	cr_assert_eq(http_get(c.port, "/metrics", "Accept: application/openmetrics-text;version=1.0.0,"
	                      "application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
	                      "*/*;q=0.1\r\n", 2000, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(http_header(&r, "Content-Type", hv, sizeof(hv)),
	                 "application/openmetrics-text; version=1.0.0; charset=utf-8");
	cr_assert(strstr(r.body, "# TYPE loopstat_worker_ops counter\n"), "%s", r.body);
	cr_assert(r.body_len > 6 && !strcmp(r.body + r.body_len - 6, "# EOF\n"), "%s", r.body);
	http_response_free(&r);
	/* the text format when it is preferred, or nothing is said */
	const char *texts[] = { "Accept: text/plain;q=1, application/openmetrics-text;q=0.3\r\n", "Accept: */*\r\n", NULL };
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(http_get(c.port, "/metrics", texts[i], 2000, &r), 0);
		cr_assert_str_eq(http_header(&r, "Content-Type", hv, sizeof(hv)), "text/plain; version=0.0.4; charset=utf-8",
		                 "%s", texts[i] ? texts[i] : "no Accept");
		cr_assert_null(strstr(r.body, "# EOF"));
		http_response_free(&r);
	}

	cr_assert_eq(http_get(c.port, "/healthz", NULL, 2000, &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.body, "ok\n");
	http_response_free(&r);
	cr_assert_eq(http_get(c.port, "/nope", NULL, 2000, &r), 0);
	cr_assert_eq(r.status, 404);
	http_response_free(&r);
	cr_assert_eq(http_request(c.port, "POST", "/metrics", "Content-Length: 0\r\n", 2000, &r), 0);
	cr_assert_eq(r.status, 405);
	http_response_free(&r);

	char *err;
	cr_assert_eq(sc_stop(&c, SIGINT, 3000, &err), EXIT_OK, "%s", err);
	cr_assert(strstr(err, "INT: stopped"), "%s", err);
	free(err);
	tc_kill(inst);
	tc_kill(plain);
}

/* /metrics says 503 until the first window is over; after that a scrape
 * hands out the published body as it is: two scrapes within one interval
 * are the same bytes (nothing is sampled or rendered at scrape time). */
Test(serve, a_scrape_reads_what_was_published)
{
	struct serve_child c;
	const char *args[] = { "--interval", "2", NULL };
	pid_t inst = serve_a_worker(&c, args, 0);
	struct http_response r, r2, r3;
	cr_assert_eq(http_get(c.port, "/metrics", NULL, 2000, &r), 0);
	cr_assert_eq(r.status, 503, "%d: %s", r.status, r.body);
	http_response_free(&r);
	cr_assert_eq(http_get(c.port, "/healthz", NULL, 2000, &r), 0);
	cr_assert_eq(r.status, 503, "%d: %s", r.status, r.body);
	http_response_free(&r);
	scrape_until(c.port, "loopstat_worker_ops_total{", 6000, &r);
	cr_assert_eq(http_get(c.port, "/metrics", NULL, 2000, &r2), 0);
	cr_assert_eq(http_get(c.port, "/metrics", NULL, 2000, &r3), 0);
	/* a publication may fall between two of the three scrapes, not between both pairs */
	int same = (r.body_len == r2.body_len && !memcmp(r.body, r2.body, r.body_len)) ||
	           (r2.body_len == r3.body_len && !memcmp(r2.body, r3.body, r2.body_len));
	cr_assert(same, "three scrapes within ms of each other, each a different body:\n%s\n---\n%s", r.body, r2.body);
	http_response_free(&r);
	http_response_free(&r2);
	http_response_free(&r3);
	cr_assert_eq(sc_stop(&c, SIGTERM, 3000, NULL), EXIT_OK);
	tc_kill(inst);
}

/* 500 clients that connect and never send, 500 that send a request and
 * never read, and a slowloris sending one header byte at a time: another
 * client still gets /metrics within 1 s, and SIGTERM still exits 0. */
Test(serve, abusive_clients_block_nobody, .timeout = 60)
{
	struct rlimit rl;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < 2048) {
		rl.rlim_cur = rl.rlim_max < 2048 ? rl.rlim_max : 2048;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	cr_assert_geq(rl.rlim_cur, 1100, "the open-file limit (%llu) leaves no room for 1000 clients",
	              (unsigned long long)rl.rlim_cur);
	struct serve_child c;
	const char *args[] = { "--interval", "0.5", "--timeout", "60", NULL };
	pid_t inst = serve_a_worker(&c, args, 1);
	struct http_response r;

	enum { SILENT = 500, DEAF = 500 };
	static int fds[SILENT + DEAF];
	const char *req = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	for (int i = 0; i < SILENT + DEAF; i++) {
		fds[i] = http_connect(c.port);
		cr_assert_geq(fds[i], 0, "connection %d: %s", i, strerror(-fds[i]));
		if (i >= SILENT) {
			int small = 1024;   /* the answers pile up in the kernel's buffers, unread */
			setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
			for (int k = 0; k < 20; k++)   /* pipelined requests it never reads the answers of */
				send(fds[i], req, strlen(req), MSG_NOSIGNAL | MSG_DONTWAIT);
		}
	}
	/* One address holds at most ~1/16 of the connections: past that, the
	 * one held longest without finishing anything goes. The slowloris
	 * comes once serve has begun answering the others (a scrape got
	 * through), so that it is not the one held longest, and stays through
	 * the rounds. Connected at once, it was dropped on a slow machine
	 * (ci52: ASan beside two hogs), the others' answers begun after it. */
	cr_assert_eq(http_get(c.port, "/metrics", NULL, 5000, &r), 0, "no scrape got through the abusive clients");
	http_response_free(&r);
	int loris = http_connect(c.port);
	cr_assert_geq(loris, 0);
	const char *slow = "GET /metrics HTTP/1.1\r\nX-Slow: ";
	cr_assert_eq(send(loris, slow, strlen(slow), MSG_NOSIGNAL), (ssize_t)strlen(slow));

	long long worst = 0;
	for (int round = 0; round < 5; round++) {
		cr_assert_eq(send(loris, "a", 1, MSG_NOSIGNAL), 1, "the slowloris was dropped");
		long long t0 = ts_now_ms();
		int rc = http_get(c.port, "/metrics", NULL, 1000, &r);
		long long took = ts_now_ms() - t0;
		cr_assert_eq(rc, 0, "round %d: /metrics with 1000 abusive clients: %s after %lld ms", round, strerror(-rc),
		             took);
		cr_assert_eq(r.status, 200);
		cr_assert(strstr(r.body, "loopstat_worker_idle_ratio{"), "%s", r.body);
		http_response_free(&r);
		worst = took > worst ? took : worst;
		usleep(200000);
	}
	cr_assert_lt(worst, 1000, "a scrape took %lld ms", worst);
	char *err;
	long long t0 = ts_now_ms();
	cr_assert_eq(sc_stop(&c, SIGTERM, 5000, &err), EXIT_OK, "%s", err);
	cr_assert(strstr(err, "TERM: stopped"), "%s", err);
	cr_assert_lt(ts_now_ms() - t0, 5000);
	free(err);
	for (int i = 0; i < SILENT + DEAF; i++)
		close(fds[i]);
	close(loris);
	tc_kill(inst);
}

/* --timeout closes a connection that says nothing; at --max-connections a
 * new connection (a scraper's) is served and one idle one closed (the
 * oldest, as serve saw them), so the total holds and held connections
 * cannot keep a scrape out. */
Test(serve, idle_clients_time_out_and_the_limit_holds)
{
	struct serve_child c;
	const char *args[] = { "--interval", "0.2", "--timeout", "1", "--max-connections", "8", NULL };
	pid_t inst = serve_a_worker(&c, args, 1);
	struct http_response r;
	int fds[8];
	for (int i = 0; i < 8; i++)
		cr_assert_geq(fds[i] = http_connect(c.port), 0);
	usleep(100000);
	int rc = http_get(c.port, "/metrics", NULL, 400, &r);
	cr_assert_eq(rc, 0, "a 9th connection with 8 of 8 held: %s", strerror(-rc));
	cr_assert_eq(r.status, 200);
	http_response_free(&r);
	/* one of the 8 went for the 9th: the oldest as serve saw them, which
	 * need not be the first connected (two threads accept, and either may
	 * report its connection first); test_serve_conns judges the order */
	char b;
	int gone = -1;
	for (long long t1 = ts_now_ms(); gone < 0 && ts_now_ms() - t1 < 300;) {
		struct pollfd p[8];
		for (int i = 0; i < 8; i++)
			p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN | POLLRDHUP };
		if (poll(p, 8, 50) > 0)
			for (int i = 0; i < 8 && gone < 0; i++)
				if (p[i].revents)
					gone = i;
	}
	cr_assert_geq(gone, 0, "none of the 8 held connections closed within 300 ms of the 9th");
	ssize_t k0 = recv(fds[gone], &b, 1, MSG_DONTWAIT);
	cr_assert(k0 == 0 || (k0 < 0 && errno == ECONNRESET), "held connection %d readable but open: %zd %s", gone,
		  k0, strerror(errno));
	for (int i = 0; i < 8; i++)
		cr_assert(i == gone || recv(fds[i], &b, 1, MSG_DONTWAIT) < 0, "held connection %d closed too", i);
	cr_assert_eq(http_get(c.port, "/healthz", NULL, 1000, &r), 0);
	cr_assert(strstr(r.body, "degraded: connections turned away"), "%s", r.body);
	http_response_free(&r);
	long long t0 = ts_now_ms();
	for (int i = 0; i < 8; i++) {
		struct timeval tv = { 5, 0 };
		setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ssize_t k = recv(fds[i], &b, 1, 0);
		cr_assert(k == 0 || (k < 0 && errno == ECONNRESET), "connection %d not closed after --timeout 1: %zd %s", i,
		          k, strerror(errno));
		close(fds[i]);
	}
	long long took = ts_now_ms() - t0;
	cr_assert_lt(took, 5000, "the idle connections were closed after %lld ms", took);
	cr_assert_eq(http_get(c.port, "/metrics", NULL, 2000, &r), 0);
	cr_assert_eq(r.status, 200);
	http_response_free(&r);
	cr_assert_eq(sc_stop(&c, SIGTERM, 3000, NULL), EXIT_OK);
	tc_kill(inst);
}

/* A bad --listen is a usage error (2); a port in use fails (1) naming it. */
Test(serve, listen_errors)
{
	char cmd[600], *out;
	const struct { const char *listen; int code; const char *says; } cases[] = {
		{ "localhost", EXIT_USAGE, "expected ADDR:PORT" },
		{ "127.0.0.1:70000", EXIT_USAGE, "from 0 to 65535" },
		{ "example.com:80", EXIT_USAGE, "must be numeric" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(cmd, sizeof(cmd), "'%s' serve --listen '%s' 2>&1", ts_loopstat_bin(), cases[i].listen);
		char *sh[] = { "/bin/sh", "-c", cmd, NULL };
		int rc = ts_run(sh, &out, 5000);
		cr_assert_eq(rc, cases[i].code, "%s: %d: %s", cases[i].listen, rc, out);
		cr_assert(strstr(out, "loopstat serve: ") && strstr(out, cases[i].says), "%s: %s", cases[i].listen, out);
		free(out);
	}
	/* a port someone else listens on */
	struct serve_child c;
	const char *args[] = { "--interval", "0.5", NULL };
	sc_start(&c, args);
	snprintf(cmd, sizeof(cmd), "'%s' serve --listen 127.0.0.1:%d 2>&1", ts_loopstat_bin(), c.port);
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(sh, &out, 5000);
	cr_assert_eq(rc, EXIT_FAIL, "%d: %s", rc, out);
	char want[100];
	snprintf(want, sizeof(want), "loopstat serve: --listen: bind(127.0.0.1:%d): Address already in use", c.port);
	cr_assert(strstr(out, want), "%s", out);
	free(out);
	cr_assert_eq(sc_stop(&c, SIGTERM, 3000, NULL), EXIT_OK);
}

/* HTTP/1.1 keep-alive: Prometheus scrapes over one connection, so two
 * requests on one connection get two answers. */
Test(serve, two_requests_on_one_connection)
{
	struct serve_child c;
	const char *args[] = { "--interval", "0.2", NULL };
	pid_t inst = serve_a_worker(&c, args, 1);
	int fd = http_connect(c.port);
	cr_assert_geq(fd, 0);
	struct timeval tv = { 3, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char buf[4096];
	size_t len = 0;
	for (int i = 0; i < 2; i++) {
		const char *req = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
		cr_assert_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
		/* the whole answer before the next request: its body ends it */
		while (len < sizeof(buf) - 1) {
			ssize_t k = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
			cr_assert_gt(k, 0, "answer %d: the connection closed or timed out after: %.*s", i + 1, (int)len, buf);
			len += (size_t)k;
			buf[len] = '\0';
			char *at = buf, *last = NULL;
			int answers = 0;
			while ((at = strstr(at, "\r\n\r\nok\n")))
				answers++, last = at, at += 4;
			if (answers == i + 1 && last)
				break;
		}
	}
	cr_assert_eq(strstr(buf, "Connection: close"), NULL, "%s", buf);
	close(fd);
	cr_assert_eq(sc_stop(&c, SIGTERM, 3000, NULL), EXIT_OK);
	tc_kill(inst);
}
