/* What limits a real loop: one that wants half a CPU in a real cgroup with a 0.2-CPU quota (v1's cpu controller, or v2's where it is enabled) reads its quota, throttled_pct >= 20 and limit "quota", and fails check's 'throttled_pct<10'; a loop outside any quota reads none and limit "none"; an idle loop sharing the group is not held back, and the busy one's reason names the group and its pid; a loop moved into the group while list runs takes its quota; one sharing its CPU with three spinners reads limit "cpu"; check takes limit==quota on the throttled loop (and fails limit!=quota), and a flight recorder's trigger limit==quota writes its recording with the quota's limit readings. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect/recording.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

static char group[256];
static int version;

/* A fresh group with a 0.2-CPU quota, on the v1 cpu controller or on a
 * v2 root that delegates cpu; 0 when this host has neither (or we are not root). */
static int make_group(void)
{
	snprintf(group, sizeof(group), "/sys/fs/cgroup/cpu/loopstat-test-%d", (int)getpid());
	if (access("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", W_OK) == 0 && mkdir(group, 0755) == 0) {
		char p[320];
		snprintf(p, sizeof(p), "%s/cpu.cfs_period_us", group);
		cr_assert_eq(ts_write_file(p, "100000", 6), 0);
		snprintf(p, sizeof(p), "%s/cpu.cfs_quota_us", group);
		cr_assert_eq(ts_write_file(p, "20000", 5), 0);
		return version = 1;
	}
	char *ctl = access("/sys/fs/cgroup/cgroup.subtree_control", R_OK) == 0 ?
			    ts_read_file("/sys/fs/cgroup/cgroup.subtree_control") : NULL;
	int v2 = ctl && strstr(ctl, "cpu");
	free(ctl);
	snprintf(group, sizeof(group), "/sys/fs/cgroup/loopstat-test-%d", (int)getpid());
	if (v2 && mkdir(group, 0755) == 0) {
		char p[320];
		snprintf(p, sizeof(p), "%s/cpu.max", group);
		cr_assert_eq(ts_write_file(p, "20000 100000", 12), 0);
		return version = 2;
	}
	return 0;
}

static void join(pid_t pid)
{
	char p[320], s[32];
	snprintf(p, sizeof(p), "%s/cgroup.procs", group);
	int n = snprintf(s, sizeof(s), "%d", (int)pid);
	cr_assert_eq(ts_write_file(p, s, (size_t)n), 0, "moving %d into %s", (int)pid, group);
}

static void remove_group(void)
{
	if (version)
		for (int i = 0; i < 50 && rmdir(group) < 0 && errno == EBUSY; i++)
			usleep(100 * 1000);   /* its killed member is reaped first */
}

/* The check table's row from row to its end says verdict (a word of it). */
static int row_says(const char *row, const char *verdict)
{
	char line[512], want[32];
	snprintf(line, sizeof(line), "%.*s ", (int)strcspn(row, "\n"), row);
	snprintf(want, sizeof(want), " %s ", verdict);
	return strstr(line, want) != NULL;
}

static int no_event(void *arg, const struct rec_event *ev)
{
	(void)arg, (void)ev;
	return 0;
}

static json_object *worker_of(json_object *doc, pid_t pid)
{
	return tj_worker(doc, pid, 0);
}

Test(limit_quota, a_throttled_loop_reads_its_quota_and_throttling, .timeout = 60, .fini = remove_group)
{
	if (!make_group())
		cr_skip_test("no writable cpu controller (v1 cpu/ or v2 with cpu delegated): needs root");
	/* wants 0.5 CPU: 50% busy in 20-ms periods */
	const char *busy_args[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	const char *free_args[] = { "--idle", "0.9", "--seconds", "20", "--plain", NULL };
	pid_t held = tc_spawn_example("duty_cycle", busy_args, NULL);
	pid_t free_loop = tc_spawn_example("duty_cycle", free_args, NULL);
	join(held);
	usleep(300 * 1000);
	char cmd[512], *out = NULL;
	snprintf(cmd, sizeof(cmd), "%d,%d", (int)held, (int)free_loop);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "-p", cmd, "--duration", "3", "--json", NULL };
	cr_assert_eq(ts_run(argv, &out, 20000), 0, "list: %s", out ? out : "");
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "list's JSON does not parse: %s", out);
	json_object *h = worker_of(doc, held), *f = worker_of(doc, free_loop);
	cr_log_info("v%d: held quota %.2f throttled %.1f%% cpu %.1f%% wait %.1f%%; free quota %g throttled %.1f%%", version,
		    tj_num(h, "quota_cpus"), tj_num(h, "throttled_pct"), tj_num(h, "cpu_pct"), tj_num(h, "cpu_wait_pct"),
		    tj_num(f, "quota_cpus"), tj_num(f, "throttled_pct"));
	cr_expect_float_eq(tj_num(h, "quota_cpus"), 0.2, 1e-6);
	cr_expect_geq(tj_num(h, "throttled_pct"), 20, "throttled %.1f%%", tj_num(h, "throttled_pct"));
	cr_expect(tj_null(f, "quota_cpus"), "a loop without a quota shows null, not %s",
		  json_object_to_json_string(f));
	cr_expect_leq(tj_num(f, "throttled_pct"), 1, "the free loop throttled %.1f%%", tj_num(f, "throttled_pct"));
	cr_expect_str_eq(tj_str(h, "limit"), "quota", "%s", tj_str(h, "limit_reason"));
	cr_expect_eq(tj_num(h, "limit_quota"), 1);
	cr_expect_str_eq(tj_str(f, "limit"), "none", "%s", tj_str(f, "limit_reason"));
	cr_expect_eq(tj_num(f, "limit_quota"), 0);
	json_object_put(doc);
	free(out);

	/* check takes a threshold on it: the held loop fails 'throttled_pct<10' */
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)held);
	char *chk[] = { (char *)ts_loopstat_bin(), "check", "-p", pid, "--duration", "5", "throttled_pct<10", NULL };
	out = NULL;
	int rc = ts_run(chk, &out, 20000);
	cr_expect_eq(rc, 1, "check 'throttled_pct<10' on a throttled loop exited %d: %s", rc, out ? out : "");
	free(out);
	tc_kill(held);
	tc_kill(free_loop);
}

/* The verdict as a threshold and a trigger: check passes limit==quota on
 * a loop held back by its quota and fails limit!=quota; record --ring
 * with --trigger limit==quota writes one recording whose limit readings
 * say quota, its throttled share as the reading, and report shows them. */
Test(limit_quota, limit_equals_quota_in_check_and_as_a_trigger, .timeout = 60, .fini = remove_group)
{
	if (!make_group())
		cr_skip_test("no writable cpu controller (v1 cpu/ or v2 with cpu delegated): needs root");
	const char *busy_args[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	/* 0.05 CPU: throttled even on a host too busy to give the loop 0.2 */
	char p[320];
	snprintf(p, sizeof(p), "%s/%s", group, version == 1 ? "cpu.cfs_quota_us" : "cpu.max");
	cr_assert_eq(ts_write_file(p, version == 1 ? "5000" : "5000 100000", version == 1 ? 4 : 11), 0);
	pid_t held = tc_spawn_example("duty_cycle", busy_args, NULL);
	join(held);
	usleep(300 * 1000);
	char pid[16], *out = NULL;
	snprintf(pid, sizeof(pid), "%d", (int)held);
	/* both in one run: one passes, the other fails (exit 1) */
	char *chk[] = { (char *)ts_loopstat_bin(), "check", "-p", pid, "--duration", "3", "limit==quota", "limit!=quota",
			NULL };
	int rc = ts_run(chk, &out, 20000);
	cr_expect_eq(rc, 1, "check on a throttled loop exited %d: %s", rc, out ? out : "");
	const char *eq = out ? strstr(out, "limit==quota ") : NULL, *ne = out ? strstr(out, "limit!=quota ") : NULL;
	cr_assert(eq && ne, "each threshold has its row, named as written: %s", out ? out : "");
	cr_expect(row_says(eq, "pass"), "limit==quota passes: %s", out);
	cr_expect(row_says(ne, "fail"), "limit!=quota fails: %s", out);
	free(out);

	char *dir = ts_tmpdir("quota-flight");
	out = NULL;
	char *rec[] = { (char *)ts_loopstat_bin(), "record", "-p", pid, "-r", "100", "--ring", "2s", "--trigger",
			"limit==quota", "--after", "1s", "--duration", "4", "-o", dir, NULL };
	rc = ts_run(rec, &out, 20000);
	cr_expect_eq(rc, 0, "record --ring: exit %d: %s", rc, out ? out : "");
	free(out);
	DIR *d = opendir(dir);
	cr_assert(d);
	char name[256] = "";
	int n = 0;
	for (struct dirent *de; (de = readdir(d));)
		if (strncmp(de->d_name, "flight-", 7) == 0 && strstr(de->d_name, "quota"))
			n++, snprintf(name, sizeof(name), "%s", de->d_name);
	closedir(d);
	cr_assert_eq(n, 1, "one recording for the trigger (the cooldown holds the rest back)");
	char *path = ts_path_in(dir, name);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	struct rec_meta *rm = malloc(sizeof(*rm));
	long line = 0;
	cr_assert_eq(rec_read(f, rm, no_event, NULL, &line), 0, "%s:%ld", path, line);
	fclose(f);
	cr_expect_eq(rm->ntriggers, 1);
	cr_expect_str_eq(rm->triggers[0].text, "limit==quota");
	const struct rec_limit_tally *q = NULL;
	for (unsigned i = 0; i < rm->nlimits; i++)
		if (rm->limits[i].pid == held && strcmp(rm->limits[i].limit, "quota") == 0)
			q = &rm->limits[i];
	cr_assert(q, "the recording holds the loop's quota readings (%u tallies)", rm->nlimits);
	cr_expect_geq(q->seconds, 1);
	cr_expect(q->nread && q->reading_max >= 10, "the reading is its throttled share: up to %.1f%%", q->reading_max);
	free(rm);
	out = NULL;
	char *rep[] = { (char *)ts_loopstat_bin(), "report", path, NULL };
	rc = ts_run(rep, &out, 20000);
	cr_expect_eq(rc, 0, "report: %s", out ? out : "");
	cr_expect(out && strstr(out, "limits (flight recorder") && strstr(out, " quota "), "%s", out ? out : "");
	free(out);
	free(path);
	ts_rmtree_free(dir);
	tc_kill(held);
}

/* The verdict belongs to the process that spends the quota: a busy loop
 * and an idle one in the same 0.05-CPU group both read the group's quota
 * and throttling, but only the busy one is held back, and its reason
 * names the group and its own pid; the idle one is not said to be. */
Test(limit_quota, only_the_process_spending_the_quota_is_held_back, .timeout = 60, .fini = remove_group)
{
	if (!make_group())
		cr_skip_test("no writable cpu controller (v1 cpu/ or v2 with cpu delegated): needs root");
	const char *busy_args[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	const char *idle_args[] = { "--idle", "0.99", "--seconds", "20", "--plain", NULL };
	/* 0.05 CPU: throttled even on a host too busy to give the loop 0.2 */
	char p[320];
	snprintf(p, sizeof(p), "%s/%s", group, version == 1 ? "cpu.cfs_quota_us" : "cpu.max");
	cr_assert_eq(ts_write_file(p, version == 1 ? "5000" : "5000 100000", version == 1 ? 4 : 11), 0);
	pid_t busy = tc_spawn_example("duty_cycle", busy_args, NULL);
	pid_t idle = tc_spawn_example("duty_cycle", idle_args, NULL);
	join(busy);
	join(idle);
	usleep(300 * 1000);
	char pids[64], *out = NULL;
	snprintf(pids, sizeof(pids), "%d,%d", (int)busy, (int)idle);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "-p", pids, "--duration", "4", "--json", NULL };
	cr_assert_eq(ts_run(argv, &out, 20000), 0, "list: %s", out ? out : "");
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "list's JSON does not parse: %s", out);
	json_object *b = worker_of(doc, busy), *i = worker_of(doc, idle);
	cr_log_info("busy: throttled %.1f%% cpu %.1f%% limit %s (%s); idle: throttled %.1f%% cpu %.1f%% limit %s (%s)",
		    tj_num(b, "throttled_pct"), tj_num(b, "cpu_pct"), tj_str(b, "limit"), tj_str(b, "limit_reason"),
		    tj_num(i, "throttled_pct"), tj_num(i, "cpu_pct"), tj_str(i, "limit"), tj_str(i, "limit_reason"));
	/* both see the group: its quota bounds the idle one's headroom too */
	cr_expect_float_eq(tj_num(b, "quota_cpus"), 0.05, 1e-6);
	cr_expect_float_eq(tj_num(i, "quota_cpus"), 0.05, 1e-6);
	cr_expect_geq(tj_num(b, "throttled_pct"), 10, "the group is throttled");
	cr_expect_geq(tj_num(i, "throttled_pct"), 10, "the idle loop reads its group's throttling");
	/* the busy one is held back, and told by whom */
	cr_expect_str_eq(tj_str(b, "limit"), "quota", "%s", tj_str(b, "limit_reason"));
	cr_expect_eq(tj_num(b, "limit_quota"), 1);
	char want[320];
	snprintf(want, sizeof(want), "cgroup %s quota 0.05 CPU spent by PID %d", strrchr(group, '/'), (int)busy);
	cr_expect(strstr(tj_str(b, "limit_reason"), want), "the reason names the group and its spender: '%s', not '%s'",
		  tj_str(b, "limit_reason"), want);
	/* the idle one only shares the group: not held back */
	cr_expect_str_neq(tj_str(i, "limit"), "quota", "%s", tj_str(i, "limit_reason"));
	cr_expect_str_neq(tj_str(i, "limit"), "cpu", "its waits are the group's throttling: %s", tj_str(i, "limit_reason"));
	cr_expect_eq(tj_num(i, "limit_quota"), 0);
	cr_expect(!strstr(tj_str(i, "limit_reason"), "held"), "the idle loop is said to be held back: %s",
		  tj_str(i, "limit_reason"));
	json_object_put(doc);
	free(out);
	tc_kill(busy);
	tc_kill(idle);
}

/* A process moved into a group while loopstat runs takes that group's
 * quota: the cgroup is looked up again (every 10 s), not once per run. */
Test(limit_quota, a_loop_moved_into_a_group_takes_its_quota, .timeout = 60, .fini = remove_group)
{
	if (!make_group())
		cr_skip_test("no writable cpu controller (v1 cpu/ or v2 with cpu delegated): needs root");
	const char *args[] = { "--idle", "0.95", "--seconds", "30", "--plain", NULL };
	pid_t loop = tc_spawn_example("duty_cycle", args, NULL);
	char pid[16], *out = NULL;
	snprintf(pid, sizeof(pid), "%d", (int)loop);
	char *const argv[] = { (char *)ts_loopstat_bin(), "list", "-p", pid, "--duration", "12", "--json", NULL };
	char *const *const argvs[] = { argv };
	char *outs[1] = { NULL };
	int rcs[1] = { -1 };
	/* list runs in the background of ts_run_all: move the loop while it samples */
	pid_t mover = fork();
	cr_assert(mover >= 0);
	if (mover == 0) {
		usleep(2000 * 1000);
		char p[320], n[32];
		snprintf(p, sizeof(p), "%s/cgroup.procs", group);
		int len = snprintf(n, sizeof(n), "%d", (int)loop);
		_exit(ts_write_file(p, n, (size_t)len) == 0 ? 0 : 1);
	}
	ts_run_all(1, argvs, outs, rcs, 30000);
	int st = 0;
	waitpid(mover, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "moving %d into %s failed", (int)loop, group);
	out = outs[0];
	cr_assert_eq(rcs[0], 0, "list: %s", out ? out : "");
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "%s", out);
	json_object *w = worker_of(doc, loop);
	cr_assert(w, "no worker %d: %s", (int)loop, out);
	cr_expect_float_eq(tj_num(w, "quota_cpus"), 0.2, 1e-6, "the moved loop reads quota %g", tj_num(w, "quota_cpus"));
	json_object_put(doc);
	free(out);
	tc_kill(loop);
}

/* Three spinners and a loop on one CPU: the loop waits for it. */
Test(limit_quota, a_loop_sharing_its_cpu_is_limited_by_the_cpu, .timeout = 60)
{
	cpu_set_t one, all;
	cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0);   /* the children inherit it */
	const char *loop_args[] = { "--idle", "0.6", "--seconds", "20", "--plain", NULL };
	const char *spin_args[] = { "--idle", "0", "--seconds", "20", "--plain", NULL };
	pid_t loop = tc_spawn_example("duty_cycle", loop_args, NULL);
	pid_t s1 = tc_spawn_example("duty_cycle", spin_args, NULL), s2 = tc_spawn_example("duty_cycle", spin_args, NULL),
	      s3 = tc_spawn_example("duty_cycle", spin_args, NULL);
	cr_assert_eq(sched_setaffinity(0, sizeof(all), &all), 0);   /* loopstat samples from anywhere */
	char pid[16], *out = NULL;
	snprintf(pid, sizeof(pid), "%d", (int)loop);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "-p", pid, "--duration", "3", "--json", NULL };
	cr_assert_eq(ts_run(argv, &out, 20000), 0, "list: %s", out ? out : "");
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc);
	json_object *w = worker_of(doc, loop);
	cr_log_info("shared cpu: idle %.1f%% cpu %.1f%% wait %.1f%% limit %s (%s)", tj_num(w, "idle_pct"), tj_num(w, "cpu_pct"),
		    tj_num(w, "cpu_wait_pct"), tj_str(w, "limit"), tj_str(w, "limit_reason"));
	cr_expect_geq(tj_num(w, "cpu_wait_pct"), 20);
	cr_expect_str_eq(tj_str(w, "limit"), "cpu", "%s", tj_str(w, "limit_reason"));
	cr_expect_eq(tj_num(w, "limit_cpu"), 1);
	json_object_put(doc);
	free(out);
	tc_kill(loop);
	tc_kill(s1);
	tc_kill(s2);
	tc_kill(s3);
}
