/* profile agrees with list: the same worker's idle share side by side, the rate it states, and stacks on redis' on-CPU samples. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <linux/perf_event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "support/children.h"
#include "support/node_child.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("profagree");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(profile_agree, .init = setup, .fini = teardown, .timeout = 90);

/* The share and ±95% of the first "idle" row of profile's text (the
 * worker's own tree). */
static int profile_idle(const char *text, double *share, double *ci)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		double s, c;
		long n;
		char word[16];
		if (sscanf(l, " %lf%% %lf %ld %15s", &s, &c, &n, word) == 4 && strcmp(word, "idle") == 0 &&
		    l[strcspn(l, "\n") - 1] == 'e') {
			*share = s;
			*ci = c;
			return 1;
		}
	}
	return 0;
}

/* list --json and profile --tid of pid's thread pid over the same 4 s:
 * outs[0] list's, outs[1] profile's; the list worker of that thread in *w. */
static json_object *side_by_side(pid_t pid, char *outs[2], json_object **w)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	/* --source proc: profile samples, and list must measure the same way
	 * (under bpf a loop woken in its poll but waiting for a CPU is idle,
	 * in the samples running: docs/usage.md, "Sources") */
	char *list[] = { (char *)ts_loopstat_bin(), "list", "--json", "--source", "proc", "--duration", "4", "-p", p, NULL };
	char *prof[] = { (char *)ts_loopstat_bin(), "profile", "--duration", "4", "-p", p, "--tid", p, NULL };
	char *const *const argvs[] = { list, prof };
	int rcs[2];
	ts_run_all(2, argvs, outs, rcs, 30000);
	cr_assert_eq(rcs[0], 0, "list: %s", outs[0]);
	cr_assert_eq(rcs[1], 0, "profile: %s", outs[1]);
	json_object *doc = json_tokener_parse(outs[0]), *ws, *v;
	cr_assert(doc && json_object_object_get_ex(doc, "workers", &ws), "not list's JSON: %s", outs[0]);
	*w = NULL;
	for (size_t i = 0; i < json_object_array_length(ws); i++)
		if (json_object_object_get_ex(json_object_array_get_idx(ws, i), "tid", &v) &&
		    json_object_get_int(v) == (int)pid)
			*w = json_object_array_get_idx(ws, i);
	cr_assert(*w, "no worker for thread %d: %s", (int)pid, outs[0]);
	return doc;
}

/* The idle shares of list's worker w and profile's text agree within the
 * two intervals (and 3 points, the sampler's own resolution on a loaded
 * machine). */
static void expect_agree(json_object *w, const char *prof_text)
{
	json_object *v;
	cr_assert(json_object_object_get_ex(w, "idle_pct", &v));
	double list_idle = json_object_get_double(v);
	cr_assert(json_object_object_get_ex(w, "idle_ci95", &v));
	double list_ci = json_object_get_double(v);
	double prof_idle, prof_ci;
	cr_assert(profile_idle(prof_text, &prof_idle, &prof_ci), "no idle row: %s", prof_text);
	double bound = list_ci + prof_ci > 3 ? list_ci + prof_ci : 3;
	cr_expect(prof_idle - list_idle <= bound && list_idle - prof_idle <= bound,
		  "profile %.1f%% ±%.1f vs list %.1f%% ±%.1f:\n%s", prof_idle, prof_ci, list_idle, list_ci, prof_text);
}

/* A plain epoll worker half idle: the shares agree; profile states the
 * rate it reached, or reaches the one it states. */
Test(profile_agree, idle_share_matches_list)
{
	const char *args[] = { "--plain", "--idle", "0.5", "--period-ms", "40", "--seconds", "30", NULL };
	pid_t pid = tc_spawn_example("duty_cycle", args, NULL);
	usleep(300000);
	char *outs[2] = { NULL, NULL };
	json_object *w, *doc = side_by_side(pid, outs, &w);
	tc_kill(pid);
	expect_agree(w, outs[1]);

	/* "N samples over D s at R Hz" for the one thread sampled, or beside
	 * it the rate reached against the one asked */
	unsigned long long n;
	double dur, hz, reached, asked;
	const char *hdr = strchr(outs[1], '\n') + 1, *said = strstr(outs[1], "sampled at ");
	cr_assert_eq(sscanf(hdr, "%llu samples over %lf s at %lf Hz", &n, &dur, &hz), 3, "header: %s", hdr);
	if (said) {
		cr_assert_eq(sscanf(said, "sampled at %lf Hz of the %lf asked", &reached, &asked), 2, "%s", said);
		cr_expect(reached < 0.95 * asked && asked == hz, "a reached rate said only when short: %s", said);
	}
	/* skipped ticks count through the sample after them: the stated rate holds */
	cr_expect(n >= 0.9 * hz * dur && n <= 1.1 * hz * dur, "%llu samples in %.1f s at a stated %.0f Hz", n, dur, hz);
	json_object_put(doc);
	free(outs[0]);
	free(outs[1]);
}

static double num(json_object *w, const char *key)
{
	json_object *v;
	cr_assert(json_object_object_get_ex(w, key, &v), "no %s", key);
	return json_object_get_double(v);
}

/* Both idle shares against the loop's own clock (own, %): each within its
 * interval (3 points at least, as above). libuv counts as idle the time
 * from a poll's wakeup until the thread gets a CPU, which list and profile
 * count as waiting for a CPU: so own may exceed them by that, at most the
 * worker's whole cpu_wait_pct, never fall short. */
static void expect_truth(json_object *w, const char *prof_text, double own)
{
	double list_idle = num(w, "idle_pct"), list_ci = num(w, "idle_ci95"), wait = num(w, "cpu_wait_pct");
	double prof_idle, prof_ci;
	cr_assert(profile_idle(prof_text, &prof_idle, &prof_ci), "no idle row: %s", prof_text);
	cr_log_info("node's own clock %.1f%% idle; list %.1f%% ±%.1f, profile %.1f%% ±%.1f, waiting for a CPU %.1f%%",
		    own, list_idle, list_ci, prof_idle, prof_ci, wait);
	const double seen[2] = { list_idle, prof_idle }, ci[2] = { list_ci, prof_ci };
	for (int i = 0; i < 2; i++) {
		double b = ci[i] > 3 ? ci[i] : 3;
		cr_expect(seen[i] <= own + b && seen[i] >= own - wait - b,
			  "%s %.1f%% ±%.1f against the loop's own clock %.1f%% (%.1f%% waiting for a CPU):\n%s",
			  i ? "profile" : "list", seen[i], ci[i], own, wait, prof_text);
	}
}

/* node burning 20 ms per request (short enough that the two commands'
 * few ms apart in starting do not matter), its other threads parked:
 * profile once read it idler than list did (its samples counted as
 * taken, not by the split). Its own clock, eventLoopUtilization, judges
 * both. */
Test(profile_agree, node_idle_share_matches_list)
{
	struct node_run r = { 0 };
	node_start(&r, dir, 20);
	double idle0, active0, idle1, active1;
	cr_assert_eq(node_elu(&r, &idle0, &active0), 0, "node's /elu");
	char *outs[2] = { NULL, NULL };
	json_object *w, *doc = side_by_side(r.pid, outs, &w);
	cr_assert_eq(node_elu(&r, &idle1, &active1), 0, "node's /elu");
	node_stop(&r);
	expect_agree(w, outs[1]);
	double in = idle1 - idle0, out = active1 - active0;
	cr_assert_gt(in + out, 3000, "node's clock: %.0f ms of the 4 s", in + out);
	expect_truth(w, outs[1], 100 * in / (in + out));
	json_object_put(doc);
	free(outs[0]);
	free(outs[1]);
}

static int perf_allowed(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.exclude_kernel = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, getpid(), -1, -1, 0);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/* Debian's redis-server under redis-benchmark: its main thread's on-CPU
 * samples carry a stack in at least 90% of cases. */
Test(profile_agree, redis_on_cpu_samples_have_stacks)
{
	if (system("command -v redis-server >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1") != 0)
		cr_skip_test("redis-server or redis-benchmark is not installed");
	if (!perf_allowed())
		cr_skip_test("perf_event_open is refused here: on-CPU samples cannot have stacks");
	char port[16];
	snprintf(port, sizeof(port), "%d", 20000 + (int)(getpid() % 20000));
	pid_t redis = fork();
	cr_assert_geq(redis, 0);
	if (redis == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execlp("redis-server", "redis-server", "--port", port, "--save", "", "--appendonly", "no",
		       "--bind", "127.0.0.1", (char *)NULL);
		_exit(127);
	}
	usleep(500000);
	char bench[160];
	snprintf(bench, sizeof(bench), "redis-benchmark -p %s -n 100000000 -c 20 -q >/dev/null 2>&1 & echo $!", port);
	FILE *b = popen(bench, "r");
	int bpid = 0;
	cr_assert(b && fscanf(b, "%d", &bpid) == 1);
	pclose(b);
	usleep(500000);
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)redis);
	char *argv[] = { (char *)ts_loopstat_bin(), "profile", "-p", p, "--tid", p, "--duration", "3", "--format", "folded", NULL };
	char *text = NULL;
	int rc = ts_run(argv, &text, 30000);
	kill(bpid, SIGKILL);
	kill(redis, SIGKILL);
	waitpid(redis, NULL, 0);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, text);
	long with = 0, bare = 0;
	for (char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		char *on = strstr(l, ";on cpu");
		char *end = strchr(l, '\n');
		if (!on || (end && on > end))
			continue;
		char *sp = end ? end : l + strlen(l);
		while (sp > l && sp[-1] != ' ')
			sp--;
		long n = atol(sp);
		if (on[7] == ';')
			with += n;
		else
			bare += n;
	}
	cr_assert_gt(with + bare, 50, "too few on-CPU samples to judge: %s", text);
	cr_expect_geq(with * 10, (with + bare) * 9, "%ld of %ld on-CPU samples have a stack", with, with + bare);
	free(text);
}
