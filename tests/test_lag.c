/* Busy spans (lag_p50/p99/max_ms) of real loops: sampled from outside, and exact from the runtime's histogram. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "support/children.h"
#include "support/support.h"

static char *dir, *empty;

static void setup(void)
{
	dir = ts_tmpdir("lag");
	empty = ts_tmpdir("lag-none");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	ts_rmtree_free(dir);
	ts_rmtree_free(empty);
}

TestSuite(lag, .init = setup, .fini = teardown, .timeout = 60);

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "missing key '%s'", key);
	return v;
}

static double num(json_object *o, const char *key) { return json_object_get_double(get(o, key)); }

/* `loopstat list --json` of pid for `duration` s at `rate` Hz; its one worker. */
static json_object *list_one(pid_t pid, const char *duration, const char *rate, json_object **doc)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--duration", (char *)duration, "--rate",
			 (char *)rate, "-p", p, NULL };
	char *out = NULL;
	int rc = ts_run(argv, &out, 30000);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
	*doc = json_tokener_parse(out);
	cr_assert(*doc, "not JSON: %s", out);
	json_object *ws = get(*doc, "workers");
	cr_assert_eq(json_object_array_length(ws), 1, "one worker: %s", out);
	free(out);
	return json_object_array_get_idx(ws, 0);
}

/* The child's own "spans n N p50 X p99 Y max Z" line, once it was told to stop. */
static void read_truth(int fd, double *p99, double *max)
{
	char buf[512] = "";
	size_t len = 0;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	while (len < sizeof(buf) - 1 && poll(&pf, 1, 5000) == 1) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	unsigned long n;
	double p50;
	const char *l = strstr(buf, "spans n ");
	cr_assert(l && sscanf(l, "spans n %lu p50 %lf p99 %lf max %lf", &n, &p50, p99, max) == 4, "%s", buf);
}

/* An uninstrumented epoll loop whose spans are 1 ms, one in 50 of 40 ms,
 * each followed by 20 ms in epoll_wait, at the default rate: the tail is
 * resolved, whatever becomes of the 1-ms spans. */
Test(lag, epoll_loop_tail_from_samples)
{
	int out;
	const char *args[] = { "--case", "nested", "--spans", "1x49,40x1", "--idle-ms", "20", "--seconds", "30", NULL };
	pid_t pid = tc_spawn_example("loop_truth", args, &out);
	usleep(200 * 1000);
	json_object *doc, *w = list_one(pid, "4", "100", &doc);
	double p99 = num(w, "lag_p99_ms"), max = num(w, "lag_max_ms"), tp99, tmax;
	kill(pid, SIGTERM);
	read_truth(out, &tp99, &tmax);
	waitpid(pid, NULL, 0);
	close(out);
	cr_expect(p99 >= 25 && p99 <= 60, "lag_p99_ms %.2f (the loop's own: %.2f)", p99, tp99);
	cr_expect(max >= 30 && max <= 80, "lag_max_ms %.2f (the loop's own: %.2f)", max, tmax);
	cr_expect(num(w, "lag_p50_ms") <= p99, "p50 %.2f over p99 %.2f", num(w, "lag_p50_ms"), p99);
	json_object_put(doc);
}

/* The runtime's histogram bucket k holds spans of [2^(11+k), 2^(12+k)) ns. */
static double bucket_lo_ms(int k) { return ldexp(1, LOOPSTAT_SPAN_SHIFT + k) / 1e6; }

/*
 * A libfiberloop worker whose fiber spins 20 ms of every 50: its slot's
 * histogram holds its spans in the bucket of 20 ms, list's exact figures
 * come from it, and the samples, read with the slot out of sight, agree.
 */
static void instrumented_matches(const char *backend, int sampled_too)
{
	setenv("FL_BACKEND", backend, 1);
	pid_t pid = tc_spawn_named("lagworker", "loop", "spin");
	unsetenv("FL_BACKEND");
	json_object *doc, *w = list_one(pid, "2", "100", &doc);
	cr_assert(json_object_get_boolean(get(w, "instrumented")), "%s: published", backend);
	json_object *totals = get(w, "totals");
	double n = 0, top = 0, c[LOOPSTAT_SPAN_BUCKETS];
	int top_k = -1;
	for (int k = 0; k < LOOPSTAT_SPAN_BUCKETS; k++) {
		char key[16];
		snprintf(key, sizeof(key), "span_h%d", k);
		c[k] = num(totals, key);
		n += c[k];
		if (c[k] > top) {
			top = c[k];
			top_k = k;
		}
	}
	/* the bucket the slot's 99th percentile falls in (its spans since the
	 * start; list's are since the first reading: a bucket either way) */
	int k99 = 0;
	for (double cum = 0; k99 < LOOPSTAT_SPAN_BUCKETS && (cum += c[k99]) < 0.99 * n;)
		k99++;
	int k20 = 24 - LOOPSTAT_SPAN_SHIFT;   /* 20 ms = 2^24.25 ns */
	cr_assert_gt(n, 10, "%s: spans counted", backend);
	cr_expect_eq(top_k, k20, "%s: most spans in bucket %d, not %d", backend, k20, top_k);
	cr_expect_geq(top / n, 0.9, "%s: %.0f of %.0f spans of about 20 ms", backend, top, n);
	double lo = bucket_lo_ms(k20), hi = bucket_lo_ms(k20 + 1);
	double p50 = num(w, "lag_p50_ms"), p99 = num(w, "lag_p99_ms");
	cr_expect(p50 >= lo && p50 < hi, "%s: exact p50 %.2f in [%.1f, %.1f)", backend, p50, lo, hi);
	double lo99 = bucket_lo_ms(k99 - 1), hi99 = bucket_lo_ms(k99 + 2);
	cr_expect(p99 >= lo99 && p99 < hi99, "%s: exact p99 %.2f by its histogram's bucket %d: [%.1f, %.1f)", backend, p99,
		  k99, lo99, hi99);
	json_object_put(doc);
	if (sampled_too) {
		/* the same worker, uninstrumented to the monitor: its samples alone */
		setenv(LOOPSTAT_SHM_DIR_ENV, empty, 1);
		w = list_one(pid, "2", "500", &doc);
		setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
		cr_assert(!json_object_get_boolean(get(w, "instrumented")));
		double s50 = num(w, "lag_p50_ms");
		cr_expect(s50 >= lo && s50 < hi, "%s: sampled p50 %.2f in the runtime's bucket [%.1f, %.1f)", backend,
			  s50, lo, hi);
		cr_expect(fabs(s50 - 20) < 5, "%s: sampled p50 %.2f against 20 ms spun", backend, s50);
		json_object_put(doc);
	}
	tc_kill(pid);
}

Test(lag, instrumented_io_uring_matches_its_histogram) { instrumented_matches("io_uring", 1); }
Test(lag, instrumented_libev_matches_its_histogram) { instrumented_matches("libev", 0); }
