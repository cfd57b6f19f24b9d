/* /metrics never holds two series of one label set: processes named "dup\x01", "dup\x02", "dup\x03" (one service once cleaned) are one service row with 3 workers, checked by a strict duplicate-rejecting parse of both formats and promtool. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/serve_child.h"
#include "support/support.h"
#include "support/users.h"

static struct ts_user user;

/* serve -u sweeps the host: not the suites' --instrumented default (run-tests.sh) */
static void setup(void) { ts_user_add_sweeping(&user); }
static void teardown(void) { ts_user_del(&user); }

TestSuite(prom_unique, .init = setup, .fini = teardown, .timeout = 60);

static pid_t loop_named(const char *name)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (ts_become(&user) < 0)
			_exit(120);
		prctl(PR_SET_NAME, name);
		int ep = epoll_create1(0);
		for (;;) {
			struct epoll_event ev;
			epoll_wait(ep, &ev, 1, 1000);
		}
	}
	return pid;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sample's metric name and its labels sorted: "name{a="1",b="2"}". A
 * label value's escapes are kept as written (\" never ends it). */
static char *series_key(const char *line, size_t len)
{
	const char *brace = memchr(line, '{', len), *sp = memchr(line, ' ', len);
	if (!brace || (sp && sp < brace))
		return strndup(line, sp ? (size_t)(sp - line) : len);
	char *labels[64];
	int n = 0;
	const char *p = brace + 1, *end = line + len;
	while (p < end && *p != '}' && n < 64) {
		const char *start = p;
		while (p < end && *p != '"')
			p++;
		for (p++; p < end && *p != '"'; p++)
			if (*p == '\\')
				p++;
		labels[n++] = strndup(start, (size_t)(++p - start));
		if (p < end && *p == ',')
			p++;
	}
	qsort(labels, (size_t)n, sizeof(labels[0]), by_str);
	size_t cap = len + 64;
	char *key = malloc(cap);
	int k = snprintf(key, cap, "%.*s{", (int)(brace - line), line);
	for (int i = 0; i < n; i++) {
		k += snprintf(key + k, cap - (size_t)k, "%s%s", i ? "," : "", labels[i]);
		free(labels[i]);
	}
	snprintf(key + k, cap - (size_t)k, "}");
	return key;
}

/* A strict reading of an exposition: every sample's series once. Returns
 * the number of samples; fails the test at a duplicate. */
static int assert_unique(const char *body, const char *what)
{
	size_t n = 0, cap = 1024;
	char **keys = malloc(cap * sizeof(*keys));
	for (const char *line = body; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len && line[0] != '#') {
			if (n == cap)
				keys = realloc(keys, (cap *= 2) * sizeof(*keys));
			keys[n++] = series_key(line, len);
		}
		line += len + (nl != NULL);
	}
	qsort(keys, n, sizeof(keys[0]), by_str);
	for (size_t i = 1; i < n; i++)
		cr_assert_str_neq(keys[i - 1], keys[i], "%s: the series %s twice", what, keys[i]);
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return (int)n;
}

static void promtool_check(const char *body, const char *dir)
{
	char path[300], cmd[700];
	snprintf(path, sizeof(path), "%s/metrics.txt", dir);
	cr_assert_eq(ts_write_file(path, body, strlen(body)), 0);
	if (access("/usr/bin/promtool", X_OK) != 0)
		return;
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < '%s' 2>&1", path);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL }, *out = NULL;
	int rc = ts_run(argv, &out, 20000);
	/* lint warnings (help text style) are not errors: exit 3 is promtool's lint */
	cr_expect(rc == 0 || rc == 3, "promtool check metrics: %d: %s", rc, out);
	cr_expect(!out || !strstr(out, "error"), "promtool: %s", out);
	free(out);
}

Test(prom_unique, names_equal_once_cleaned_are_one_service)
{
	pid_t p[3] = { loop_named("dup\x01"), loop_named("dup\x02"), loop_named("dup\x03") };
	struct serve_child c;
	const char *args[] = { "--interval", "0.5", "--all", "-u", user.name, NULL };
	sc_start(&c, args);
	struct http_response r = { 0 };
	long long t0 = ts_now_ms();
	/* until the three workers are in: each its own series by pid */
	for (;;) {
		cr_assert_lt(ts_now_ms() - t0, 20000, "the 3 loops never all came into /metrics");
		usleep(500 * 1000);
		if (http_get(c.port, "/metrics", NULL, 2000, &r) != 0)
			continue;
		int workers = 0;
		for (const char *q = r.body; (q = strstr(q, "loopstat_worker_samples{")); q++) {
			const char *svc = strstr(q, "service=\"dup?\""), *nl = strchr(q, '\n');
			workers += svc && (!nl || svc < nl);
		}
		if (r.status == 200 && workers == 3)
			break;
		http_response_free(&r);
	}
	char *dir = ts_tmpdir("promuniq");
	int samples = assert_unique(r.body, "text 0.0.4");
	cr_assert_gt(samples, 10);
	promtool_check(r.body, dir);
	cr_expect(strstr(r.body, "service=\"dup?\"} 3"), "one service row of 3 workers: %s", r.body);
	http_response_free(&r);
	cr_assert_eq(http_get(c.port, "/metrics", "Accept: application/openmetrics-text; version=1.0.0\r\n", 2000, &r), 0);
	assert_unique(r.body, "OpenMetrics");
	cr_expect(strstr(r.body, "# EOF"), "%s", r.body);
	http_response_free(&r);
	ts_rmtree_free(dir);
	cr_assert_eq(sc_stop(&c, SIGTERM, 5000, NULL), 0);
	for (int i = 0; i < 3; i++) {
		kill(p[i], SIGKILL);
		waitpid(p[i], NULL, 0);
	}
}
