/* --source on the CLI: list's figures from the kernel under bpf, a loop saturated from the start listed, and an unprivileged run that falls back to proc and says why. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_bpf.h"
#include "support/children.h"
#include "support/support.h"
#include "support/users.h"

TestSuite(bpf_source, .timeout = 60);

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "missing key '%s'", key);
	return v;
}

/* 1-ms spans with one of 40 ms in 50, listed for 3 s under --source bpf:
 * the exact figures (idle's interval zero wide, spans from the kernel). */
Test(bpf_source, list_reads_exact_figures)
{
	char why[256];
	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("bpf unavailable: %s", why);
	int out;
	const char *args[] = { "--case", "nested", "--spans", "1x49,40x1", "--idle-ms", "20", NULL };
	pid_t pid = tc_spawn_example("loop_truth", args, &out);
	char p[16], *text = NULL;
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--source", "bpf", "--duration", "3", "-p", p, NULL };
	int rc = ts_run(argv, &text, 30000);
	tc_kill(pid);
	close(out);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, text);
	json_object *doc = json_tokener_parse(text);
	cr_assert(doc, "not JSON: %s", text);
	cr_expect_str_eq(json_object_get_string(get(doc, "source")), "bpf");
	json_object *ws = get(doc, "workers");
	cr_assert_eq(json_object_array_length(ws), 1, "%s", text);
	json_object *w = json_object_array_get_idx(ws, 0);
	double idle = json_object_get_double(get(w, "idle_pct")), ci = json_object_get_double(get(w, "idle_ci95"));
	double p50 = json_object_get_double(get(w, "lag_p50_ms")), max = json_object_get_double(get(w, "lag_max_ms"));
	cr_expect(idle > 50 && idle < 100, "idle %.2f", idle);
	cr_expect_eq(ci, 0, "an exact idle carries the measurement's interval: ±%.2f", ci);
	double lo = json_object_get_double(get(w, "idle_lo")), hi = json_object_get_double(get(w, "idle_hi"));
	cr_expect(lo == idle && hi == idle, "its bounds are the value: [%.2f, %.2f] for %.2f", lo, hi, idle);
	cr_expect(fabs(p50 - 1) <= 0.2, "lag_p50_ms %.3f", p50);
	cr_expect_geq(max, 36, "lag_max_ms %.3f: the 40-ms spans", max);
	json_object *ex = get(w, "exact");
	cr_expect_gt(json_object_get_double(get(ex, "polls_per_s")), 10, "%s", text);
	json_object_put(doc);
	free(text);
}

/* As nobody, watching a process of its own: auto falls back to proc and
 * says why (JSON and the text footer); bpf is refused, exit 5. */
Test(bpf_source, unprivileged_falls_back_and_says_why)
{
	ts_need_nobody();
	char cmd[1024], *out = NULL;
	const char *bin = ts_loopstat_bin();
	snprintf(cmd, sizeof(cmd),
		 TS_AS_NOBODY " sh -c "
		 "'sleep 20 & p=$!; \"%s\" list -j --source auto --duration 1 -p $p 2>/dev/null; echo \"rc=$?\"; "
		 "\"%s\" list --source auto --duration 1 -p $p; "
		 "\"%s\" list --source bpf --duration 1 -p $p 2>&1; echo \"rc=$?\"; kill $p'", bin, bin, bin);
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(sh, &out, 30000);
	cr_assert_eq(rc, 0, "%d: %s", rc, out);
	cr_expect(strstr(out, "\"source\":\"proc\""), "%s", out);
	cr_expect(strstr(out, "\"source_why\":\"bpf unavailable: not root and no CAP_BPF + CAP_PERFMON\""), "%s", out);
	cr_expect(strstr(out, "source: proc (bpf unavailable: not root and no CAP_BPF + CAP_PERFMON)"), "%s", out);
	cr_expect(strstr(out, "loopstat list: --source bpf: bpf unavailable: not root and no CAP_BPF + CAP_PERFMON\nrc=5"),
		  "%s", out);
	free(out);
}

/* an epoll loop whose eventfd is always ready: its epoll_wait never blocks */
static void saturated(void)
{
	int ep = epoll_create1(0), efd = eventfd(1, 0);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
	for (;;) {
		epoll_wait(ep, &out, 1, -1);
		uint64_t until = ts_mono_ns() + 1000000;
		while (ts_mono_ns() < until)
			;
	}
}

/* A loop saturated from the start, never found waiting by a sample, is
 * listed under bpf (the kernel sees its poll return), at idle about 0. */
Test(bpf_source, saturated_loop_is_a_worker)
{
	char why[256];
	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("bpf unavailable: %s", why);
	pid_t pid = tc_fork();
	if (pid == 0) {
		saturated();
	}
	char p[16], *text = NULL;
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--source", "bpf", "--duration", "3", "-p", p, NULL };
	int rc = ts_run(argv, &text, 30000);
	tc_kill(pid);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, text);
	json_object *doc = json_tokener_parse(text);
	cr_assert(doc, "not JSON: %s", text);
	json_object *ws = get(doc, "workers");
	cr_assert_eq(json_object_array_length(ws), 1, "%s", text);
	json_object *w = json_object_array_get_idx(ws, 0);
	double idle = json_object_get_double(get(w, "idle_pct"));
	cr_expect_leq(idle, 5, "idle %.2f", idle);
	json_object *ex = get(w, "exact");
	cr_expect_gt(json_object_get_double(get(ex, "ops_per_s")), 100, "events its poll returned: %s", text);
	json_object_put(doc);
	free(text);
}
