/* serve beside one user's flood of epoll threads: /metrics keeps within its series budget with the real loops (root's and another user's) in it, says what it dropped (a gauge and a comment line) and why threads were left out, and serve's memory comes back within 2x its baseline once the flood ends. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/children.h"
#include "support/loop_child.h"
#include "support/proc_rss.h"
#include "support/serve_child.h"
#include "support/support.h"
#include "support/thread_flood.h"
#include "support/users.h"

/* make test's figures; bench/worker_fair runs 4,300 threads at the default cap */
#define FLOOD 1500

#ifdef __SANITIZE_ADDRESS__
#define FOUND_MS 10000   /* sweeps cost ~3x under the sanitizers, and their gap follows */
#define SUITE_S  30
#else
#define FOUND_MS 6000
#define SUITE_S  15
#endif

static struct ts_user flooder, other;
#ifdef __SANITIZE_ADDRESS__
static char asan_was[512];   /* the suite's ASAN_OPTIONS, restored after */
#endif
static pid_t kids[4];
static int nkids;

static void setup(void)
{
	ts_user_add_sweeping(&flooder);
	ts_user_nobody(&other);
}

static void teardown(void)
{
	unsetenv("LOOPSTAT_SERIES_BUDGET");
#ifdef __SANITIZE_ADDRESS__
	setenv("ASAN_OPTIONS", asan_was, 1);
#endif
	tc_kill_all(kids, nkids);   /* no flood child outlives the test */
	nkids = 0;
	ts_user_del(&flooder);
}

TestSuite(serve_budget, .init = setup, .fini = teardown, .timeout = SUITE_S);

static int become(void *arg) { return ts_become(arg); }

/* pid was stopped (tc_kill reaps it): teardown must not signal its number again. */
static void forget(pid_t pid)
{
	for (int i = 0; i < nkids; i++)
		if (kids[i] == pid)
			kids[i] = kids[--nkids];
}

static int mentions(const char *body, pid_t pid)
{
	char key[32];
	snprintf(key, sizeof(key), "pid=\"%d\"", (int)pid);
	return strstr(body, key) != NULL;
}

/* Series in a text exposition: its lines that are no comment. */
static long series_of(const char *body)
{
	long n = 0;
	for (const char *l = body; *l;) {
		const char *nl = strchr(l, '\n');
		n += *l != '#' && *l != '\n';
		l = nl ? nl + 1 : l + strlen(l);
	}
	return n;
}

#define SERVE_CAP    "600"
#define SERIES_CAP   2000

/* serve, then the flood, then the loops: /metrics keeps within its budget
 * with both loops in it and says what it dropped; once the flood is gone
 * (its workers dropped 5 s later) serve's memory comes back. */
/* *peak raised to pid's resident set now. */
static void note_peak(pid_t pid, long *peak)
{
	long kb = proc_rss_kb(pid);
	if (kb > *peak)
		*peak = kb;
}

Test(serve_budget, a_flood_is_cut_from_metrics_and_its_memory_returned)
{
	char budget[16];
	snprintf(budget, sizeof(budget), "%d", SERIES_CAP);
	setenv("LOOPSTAT_SERIES_BUDGET", budget, 1);
#ifdef __SANITIZE_ADDRESS__
	/* ASan's allocator holds what is freed in quarantine (256 MB) and
	 * returns memory to the system only when told to */
	const char *was = getenv("ASAN_OPTIONS");
	snprintf(asan_was, sizeof(asan_was), "%s", was ? was : "");
	char opts[sizeof(asan_was) + 96];
	snprintf(opts, sizeof(opts), "%s%squarantine_size_mb=0:allocator_release_to_os_interval_ms=100", asan_was,
		 *asan_was ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
#endif
	struct serve_child c;
	const char *args[] = { "--all", "--interval", "0.25", "--window", "1", "--max-workers", SERVE_CAP, NULL };
	sc_start(&c, args);
	kids[nkids++] = c.pid;
	struct http_response r = { 0 };
	long long t0 = ts_now_ms();
	while (http_get(c.port, "/metrics", NULL, 2000, &r) != 0 || r.status != 200) {
		http_response_free(&r);
		cr_assert_lt(ts_now_ms() - t0, 5000, "serve never answered");
		usleep(100 * 1000);
	}
	http_response_free(&r);
	long base = proc_rss_kb(c.pid);
	fprintf(stderr, "serve answered after %lld ms\n", ts_now_ms() - t0);
	pid_t flood = tflood_start(FLOOD, 0, become, &flooder);
	kids[nkids++] = flood;
	FILE *out = NULL;
	pid_t root_loop = tloop_spawn("plain", 0, 0.05, 30, &out);
	cr_assert_gt(root_loop, 0);
	kids[nkids++] = root_loop;
	pid_t theirs = ts_user_loop(&other);
	kids[nkids++] = theirs;
	/* both loops in /metrics, within the budget, the drop said */
	int found = 0;
	long peak = base, series = 0;
	t0 = ts_now_ms();
	while (!found && ts_now_ms() - t0 < FOUND_MS) {
		usleep(250 * 1000);
		note_peak(c.pid, &peak);
		if (http_get(c.port, "/metrics", NULL, 2000, &r) == 0 && r.status == 200) {
			found = mentions(r.body, root_loop) && mentions(r.body, theirs) &&
				strstr(r.body, "\n# loopstat: ") && strstr(r.body, "loopstat_ignored_threads{");
			series = series_of(r.body);
			if (found) {
				const char *d = strstr(r.body, "\nloopstat_series_dropped");
				cr_expect_leq(series, SERIES_CAP, "/metrics holds %ld series", series);
				cr_expect(d && strchr(d + 1, ' ') && atol(strchr(d + 1, ' ')) > 0, "the drop's gauge is 0");
			}
		}
		http_response_free(&r);
	}
	fclose(out);
	fprintf(stderr, "both loops in /metrics after %lld ms\n", ts_now_ms() - t0);
	cr_assert(found, "in %lld ms, /metrics (%ld series) lacked a loop, the drop's comment or ignored_threads",
		  ts_now_ms() - t0, series);
	for (int i = 0; i < 4; i++) {   /* the flood sampled for a moment */
		usleep(250 * 1000);
		note_peak(c.pid, &peak);
	}
	tc_kill(flood);
	forget(flood);
	long after = -1;
	t0 = ts_now_ms();
	do {
		usleep(250 * 1000);
		after = proc_rss_kb(c.pid);
	} while (after > 2 * base && ts_now_ms() - t0 < 7500);
	fprintf(stderr, "serve RSS: %ld kB before, %ld kB at the flood, %ld kB %lld ms after it ended\n", base, peak,
		after, ts_now_ms() - t0);
	cr_expect_gt(peak, 2 * base, "the flood made serve grow (else this test shows nothing)");
	cr_expect_leq(after, 2 * base, "serve kept %ld kB of %ld at the flood (baseline %ld)", after, peak, base);
}
