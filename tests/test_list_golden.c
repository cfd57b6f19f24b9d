/* `list`'s text and JSON for a fixed model, byte for byte: views that walk the metric table print what they printed by hand. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "list/list.h"
#include "model/model.h"
#include "support/support.h"

static struct worker_view workers[3];
static struct model m;

/* Three workers that exercise every branch of the views: instrumented with
 * counters, uninstrumented and blocked, gone with nothing known. */
static void setup(void)
{
	memset(workers, 0, sizeof(workers));
	struct worker_view *a = &workers[0], *b = &workers[1], *c = &workers[2];

	*a = (struct worker_view){ .pid = 100, .tid = 101, .instrumented = 1, .backend = "io_uring",
				   .kind = "loop", .runtime = "unknown", .threads = 1, .threads_from = "-",
				   .samples = 500, .idle_pct = 61.5, .idle_ci95 = 4.25, .idle_lo = 57.25, .idle_hi = 65.75, .running_pct = 30.125,
				   .blocked_pct = 8.375, .other_pct = 0, .cpu_pct = 29.5, .cpu_wait_pct = 0.625,
				   .ops_per_s = 9800.5, .switches_per_s = 12000.25, .polls_per_s = 2100,
				   .completions_per_s = 9700, .runqueue_len = 3, .runqueue_max = 17, .pending_ops = 52,
				   .fibers = 60, .self_idle_pct = 63.0, .stall_ms = 0, .headroom_ops_per_s = 25454.5, .headroom_bound = MODEL_BOUND_LOOP,
				   .quota_cpus = NAN, .throttled_pct = 0, .accept_queue = 3, .accept_queue_max = 25,
				   .accept_queue_held = 25,
				   .accept_queue_limit = 511, .limit_backlog = 1, .pool_threads = NAN, .pool_busy_pct = NAN,
				   .lag_p50_ms = 1.25, .lag_p99_ms = 45.5, .lag_max_ms = 52 };
	snprintf(a->name, sizeof(a->name), "echo_server");
	snprintf(a->tag, sizeof(a->tag), "echo");
	snprintf(a->fiber_tag, sizeof(a->fiber_tag), "conn");
	snprintf(a->loop_basis, sizeof(a->loop_basis), "published wait fd");
	for (int i = 0; i < PROBE_SHM_NVALUES; i++)
		a->totals[i] = 1000 + (uint64_t)i;
	a->nblocked_top = 1;
	a->blocked_top[0] = (struct blocker_view){ .nr = 0, .fd = 7, .pct = 8.375 };
	snprintf(a->blocked_top[0].syscall, sizeof(a->blocked_top[0].syscall), "read");
	snprintf(a->blocked_top[0].target, sizeof(a->blocked_top[0].target), "pipe:[123]");

	*b = (struct worker_view){ .pid = 200, .tid = 0, .backend = "none", .samples = 300, .idle_pct = 20,
				   .kind = "scheduler", .runtime = "go", .threads = 2, .threads_from = "runtime.gomaxprocs",
				   .nmembers = 2, .members = { { .tid = 201, .name = "app", .worker = 1, .busy_pct = 12.5 },
							       { .tid = 202, .name = "app", .worker = 1, .busy_pct = NAN } },
				   .idle_ci95 = 4.5, .running_pct = 10, .blocked_pct = 70, .other_pct = 0,
				   .cpu_pct = 9.75, .cpu_wait_pct = 0.25, .ops_per_s = NAN, .switches_per_s = NAN,
				   .polls_per_s = NAN, .completions_per_s = NAN, .self_idle_pct = NAN,
				   .headroom_ops_per_s = NAN, .stall_ms = 0, .quota_cpus = 1.5, .throttled_pct = 12.5, .limit_quota = 1,
				   .accept_queue = NAN, .accept_queue_max = NAN, .accept_queue_limit = NAN,
				   .pool_threads = NAN, .pool_busy_pct = NAN };
	snprintf(b->name, sizeof(b->name), "ruby\x01evil");
	b->blocked_unkeyed_pct = 5;
	snprintf(b->loop_basis, sizeof(b->loop_basis), "epoll fd 7");
	b->nblocked_top = 2;
	b->blocked_top[0] = (struct blocker_view){ .nr = 74, .fd = 9, .pct = 50 };
	snprintf(b->blocked_top[0].syscall, sizeof(b->blocked_top[0].syscall), "fsync");
	snprintf(b->blocked_top[0].target, sizeof(b->blocked_top[0].target), "/var/lib/db/wal");
	b->blocked_top[1] = (struct blocker_view){ .nr = 42, .fd = 3, .pct = 20 };
	snprintf(b->blocked_top[1].syscall, sizeof(b->blocked_top[1].syscall), "connect");

	*c = (struct worker_view){ .pid = 300, .tid = 300, .instrumented = 1, .backend = "libev", .gone = 1,
				   .kind = "loop", .runtime = "jvm", .threads = 1, .threads_from = "-",
				   .thread_name = "nioEventLoopGro", .group = "nioEventLoopGro",
				   .idle_pct = NAN, .idle_ci95 = NAN, .running_pct = NAN, .blocked_pct = NAN,
				   .other_pct = NAN, .cpu_pct = NAN, .cpu_wait_pct = NAN, .ops_per_s = NAN,
				   .switches_per_s = NAN, .polls_per_s = NAN, .completions_per_s = NAN,
				   .self_idle_pct = NAN, .headroom_ops_per_s = NAN, .stall_ms = 1500, .quota_cpus = NAN,
				   .throttled_pct = NAN, .accept_queue = NAN, .accept_queue_max = NAN, .accept_queue_limit = NAN,
				   .pool_threads = NAN, .pool_busy_pct = NAN };
	snprintf(c->name, sizeof(c->name), "worker");
	c->blocked_unkeyed_pct = NAN;
	snprintf(c->tag, sizeof(c->tag), "w3");

	m = (struct model){ .workers = workers, .n = 3, .rate_hz = 100, .precision_pts = 2, .window_s = 0, .elapsed_s = 2.0,
			    .total_samples = 800 };
	m.nrefused = 1;
	m.refused[0].pid = 400;
	snprintf(m.refused[0].text, sizeof(m.refused[0].text), "pid 400 belongs to user \"db\": run loopstat as that user");
	m.fleet = (struct fleet_view){ .workers = 3, .mean_idle_pct = 40.75, .idle_pct_min = 20, .ops_per_s = 9800.5,
				       .headroom_ops_per_s = 25454.5 };
}

TestSuite(list_golden, .init = setup, .timeout = 10);

static void check(void (*print)(FILE *, const struct model *), const char *golden)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	cr_assert(f);
	print(f, &m);
	fclose(f);
	if (getenv("LOOPSTAT_GOLDEN_WRITE")) {
		FILE *g = fopen(golden, "w");
		fputs(out, g);
		fclose(g);
	}
	char *want = ts_read_file(golden);
	cr_assert_str_eq(out, want, "%s differs; got:\n%s", golden, out);
	free(want);
	free(out);
}

Test(list_golden, json_is_unchanged) { check(list_print_json, "tests/golden/list.json"); }
Test(list_golden, text_is_unchanged) { check(list_print_text, "tests/golden/list.txt"); }

/* The footer leaves out what nobody measured rather than print "-". */
Test(list_golden, footer_leaves_out_unknown_figures)
{
	m.fleet.mean_idle_pct = m.fleet.ops_per_s = m.fleet.headroom_ops_per_s = NAN;
	m.precision_pts = 0;
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	list_print_text(f, &m);
	fclose(f);
	const char *foot = strstr(out, "3 workers");
	cr_assert(foot, "%s", out);
	cr_assert_str_eq(foot, "3 workers (2.0 s at 100 Hz, every tick)\n");
	free(out);
}
