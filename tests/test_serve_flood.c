/* serve under a local user's connection flood (slowloris and idle connections from many loopback addresses, re-opened as closed) under the systemd unit's fd limit: every scrape answers within 1 s and /healthz says it is degraded. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/flood.h"
#include "support/serve_child.h"
#include "support/support.h"
#include "support/users.h"

/* make test's figures; bench/serve_flood runs the 4,100 + 10,000 */
#define SLOWLORIS 1500
#define IDLE      3500
#define UNIT_NOFILE 8192   /* contrib/systemd's LimitNOFILE */

static struct ts_user user;

static void setup(void) { ts_user_add(&user); }
static void teardown(void) { ts_user_del(&user); }

TestSuite(serve_flood, .init = setup, .fini = teardown, .timeout = 120);

static int become(void *arg) { return ts_become(arg); }

/* serve as the systemd unit runs it: the fd limit of the unit */
static void start_serve(struct serve_child *c, const char *const args[])
{
	struct rlimit rl, old;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = rl.rlim_max < UNIT_NOFILE ? rl.rlim_max : UNIT_NOFILE;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	sc_start(c, args);
	setrlimit(RLIMIT_NOFILE, &old);
}

static void scrapes_all_answer(int port, const char *what)
{
	long long worst = 0;
	for (int i = 0; i < 10; i++) {
		struct http_response r;
		long long t0 = ts_now_ms();
		int rc = http_get(port, "/metrics", NULL, 1000, &r);
		long long took = ts_now_ms() - t0;
		cr_assert_eq(rc, 0, "%s: scrape %d of 10: %s after %lld ms", what, i + 1, strerror(-rc), took);
		cr_assert_eq(r.status, 200, "%s: scrape %d: status %d", what, i + 1, r.status);
		http_response_free(&r);
		worst = took > worst ? took : worst;
		usleep(300 * 1000);
	}
	fprintf(stderr, "%s: 10 of 10 scrapes, the slowest %lld ms\n", what, worst);
}

Test(serve_flood, slowloris_and_idle_connections_leave_every_scrape_answered)
{
	struct serve_child c;
	const char *args[] = { "--interval", "0.5", "--timeout", "10", "-u", "root", NULL };
	start_serve(&c, args);
	struct http_response r;
	long long t0 = ts_now_ms();
	while (http_get(c.port, "/metrics", NULL, 2000, &r) != 0 || r.status != 200) {
		cr_assert_lt(ts_now_ms() - t0, 10000, "serve never answered");
		usleep(200 * 1000);
	}
	http_response_free(&r);
	struct flood f;
	struct flood_opts o = { .port = c.port, .slowloris = SLOWLORIS, .idle = IDLE, .addrs = 50,
				.become = become, .arg = &user };
	cr_assert_eq(flood_start(&f, &o), 0);
	scrapes_all_answer(c.port, "flood");
	unsigned open;
	unsigned long reopened;
	flood_status(&f, &open, &reopened);
	fprintf(stderr, "flood: %u of %u open, %lu re-opened\n", open, SLOWLORIS + IDLE, reopened);
	cr_assert_eq(http_get(c.port, "/healthz", NULL, 1000, &r), 0);
	cr_expect_eq(r.status, 200);
	cr_expect(strstr(r.body, "degraded: connections turned away"), "%s", r.body);
	http_response_free(&r);
	flood_stop(&f);
	cr_assert_eq(sc_stop(&c, SIGTERM, 5000, NULL), 0);
}

/* The attacker's loop threads: each waits in epoll_wait for good. */
