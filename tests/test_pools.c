/* Helper pools of real processes: four condvar threads busy ~95% beside an idle epoll loop read as a pool of 4 and limit "pool"; a pool saturated from its start (never waiting) is caught as busy helpers, and export says limit_pool 1; a half-busy pool reads its share and no limit; node's libuv pool with UV_THREADPOOL_SIZE=2 under eight pbkdf2 calls is found; a loop without helpers reads as before. */
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

#include "support/children.h"
#include "support/list_json.h"
#include "support/node_child.h"
#include "support/support.h"

#define MAX_TIDS 16

struct pool_child {
	pid_t pid;
	pid_t tids[MAX_TIDS];
	int   ntids;
};

/* Starts examples/pool with args and reads its "pool PID loop TID threads A,B,.." line. */
static void spawn_pool(const char *const args[], struct pool_child *c)
{
	int fd;
	char line[512];
	size_t len = 0;
	memset(c, 0, sizeof(*c));
	c->pid = tc_spawn_example("pool", args, &fd);
	long long end = ts_now_ms() + 5000;
	while (len < sizeof(line) - 1 && !memchr(line, '\n', len) && ts_now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t r = read(fd, line + len, sizeof(line) - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	line[len] = '\0';
	close(fd);
	char *t = strstr(line, "threads ");
	cr_assert(t, "pool printed no thread list: '%s'", line);
	for (char *p = t + 8; *p && *p != '\n' && c->ntids < MAX_TIDS; p++) {
		c->tids[c->ntids++] = (pid_t)strtol(p, &p, 10);
		if (*p != ',')
			break;
	}
}

/* The worker whose tid is the process's (the examples' loop is their main thread). */
static json_object *main_worker(json_object *doc, pid_t pid)
{
	return tj_worker(doc, pid, pid);
}

/* The worker's pool of kind, or NULL. */
static json_object *pool_of(json_object *w, const char *kind)
{
	json_object *ps = tj_pools(w);
	for (size_t i = 0; i < json_object_array_length(ps); i++) {
		json_object *p = json_object_array_get_idx(ps, i);
		if (!strcmp(tj_str(p, "kind"), kind))
			return p;
	}
	return NULL;
}

/* The pool names exactly the child's pool threads. */
static void expect_threads(json_object *pool, const struct pool_child *c)
{
	json_object *ts;
	cr_assert(json_object_object_get_ex(pool, "threads", &ts));
	cr_expect_eq(tj_num(pool, "nthreads"), c->ntids);
	cr_assert_eq(json_object_array_length(ts), (size_t)c->ntids);
	for (int i = 0; i < c->ntids; i++) {
		int found = 0;
		for (size_t k = 0; k < json_object_array_length(ts); k++)
			found |= json_object_get_int(json_object_array_get_idx(ts, k)) == c->tids[i];
		cr_expect(found, "pool thread %d missing", (int)c->tids[i]);
	}
}

static void log_worker(const char *what, json_object *w)
{
	cr_log_info("%s: idle %.1f%% wait %.1f%% pool %g threads busy %.1f%% limit %s (%s) pools %s", what,
		    tj_num(w, "idle_pct"), tj_num(w, "cpu_wait_pct"), tj_num(w, "pool_threads"), tj_num(w, "pool_busy_pct"),
		    tj_str(w, "limit"), tj_str(w, "limit_reason"), json_object_to_json_string(json_object_object_get(w, "pools")));
}

Test(pools, four_busy_condvar_threads_beside_an_idle_loop_limit_it, .timeout = 60)
{
	/* jobs sleep (a pool doing blocking I/O): the shares do not hang on a free CPU */
	const char *args[] = { "--threads", "4", "--busy", "95", "--seconds", "30", NULL };
	struct pool_child c;
	spawn_pool(args, &c);
	cr_assert_eq(c.ntids, 4);
	/* check takes a threshold on it, beside the list: a pool busy ~95% by
	 * its own clock (its jobs sleep) fails 'pool_busy_pct<50', judged on
	 * the value: five 1-s batches of a loaded host can stretch the
	 * interval below 50 (inconclusive). The two samplers leave a CPU free. */
	char pid[16], *out = NULL;
	snprintf(pid, sizeof(pid), "%d", (int)c.pid);
	char *chk[] = { (char *)ts_loopstat_bin(), "check", "-p", pid, "--duration", "5", "--point-estimate",
			"pool_busy_pct<50", NULL };
	int rc;
	/* 10 s: each thread read ~125 times, so each is seen in its 5% of waits
	 * (fewer under load, when a late thread finds a job queued) */
	json_object *doc = tj_list_beside(pid, "10", chk, &out, &rc);
	json_object *w = main_worker(doc, c.pid);
	log_worker("busy pool", w);
	/* the loop only posts jobs: idle 80 % and more by design, less the
	 * wait for a CPU on waking that the samples see and its clock would not */
	cr_expect_geq(tj_num(w, "idle_pct"), 80 - tj_num(w, "cpu_wait_pct"), "idle %.1f%%, cpu wait %.1f%%",
		      tj_num(w, "idle_pct"), tj_num(w, "cpu_wait_pct"));
	cr_expect_eq(tj_num(w, "pool_threads"), 4);
	cr_expect_geq(tj_num(w, "pool_busy_pct"), 80);
	cr_expect_str_eq(tj_str(w, "limit"), "pool", "%s", tj_str(w, "limit_reason"));
	cr_expect_eq(tj_num(w, "limit_pool"), 1);
	json_object *p = pool_of(w, "condvar");
	cr_assert(p, "no condvar pool");
	expect_threads(p, &c);
	cr_expect_geq(tj_num(p, "busy_pct"), 80);
	cr_expect_neq(strcmp(tj_str(p, "key"), "(null)"), 0, "a condvar pool has its key");
	json_object_put(doc);
	cr_expect_eq(rc, 1, "check 'pool_busy_pct<50' on a busy pool exited %d: %s", rc, out ? out : "");
	free(out);
	tc_kill(c.pid);
}

Test(pools, a_pool_saturated_from_its_start_is_caught_as_busy_helpers, .timeout = 60)
{
	const char *args[] = { "--threads", "2", "--saturated", "--work", "spin", "--seconds", "30", NULL };
	struct pool_child c;
	spawn_pool(args, &c);
	cr_assert_eq(c.ntids, 2);
	json_object *doc = tj_list_pid(c.pid, "5");
	json_object *w = main_worker(doc, c.pid);
	log_worker("saturated pool", w);
	json_object *p = pool_of(w, "busy_helpers");
	cr_assert(p, "the saturated pool was not caught");
	cr_expect(!pool_of(w, "condvar"), "a pool that never waits has no condvar");
	expect_threads(p, &c);
	cr_expect_geq(tj_num(p, "busy_pct"), 90);
	cr_expect_str_eq(tj_str(p, "key"), "(null)");
	cr_expect_eq(tj_num(w, "pool_threads"), 2);
	cr_expect_geq(tj_num(w, "pool_busy_pct"), 90);
	cr_expect_str_eq(tj_str(w, "limit"), "pool", "%s", tj_str(w, "limit_reason"));
	json_object_put(doc);

	/* export's 0/1 limit series walk the limit kinds: pool's is 1 */
	char pid[16], *out = NULL;
	snprintf(pid, sizeof(pid), "%d", (int)c.pid);
	char *exp[] = { (char *)ts_loopstat_bin(), "export", "--graphite", "127.0.0.1:1", "--dry-run", "-p", pid,
			"--duration", "4", NULL };
	cr_assert_eq(ts_run(exp, &out, 30000), 0, "export: %s", out ? out : "");
	cr_expect(strstr(out, ".limit_pool 1 "), "no limit_pool 1 in:\n%s", out);
	cr_expect(strstr(out, ".limit_loop 0 ") && strstr(out, ".pool_threads 2 "), "%s", out);
	free(out);
	tc_kill(c.pid);
}

Test(pools, a_half_busy_pool_reads_its_share_and_no_limit, .timeout = 60)
{
	const char *args[] = { "--threads", "4", "--busy", "50", "--seconds", "30", NULL };
	struct pool_child c;
	spawn_pool(args, &c);
	json_object *doc = tj_list_pid(c.pid, "8");
	json_object *w = main_worker(doc, c.pid);
	log_worker("half-busy pool", w);
	json_object *p = pool_of(w, "condvar");
	cr_assert(p, "no condvar pool");
	expect_threads(p, &c);
	/* 10 ms jobs every 20 ms, and the wake-up after each: 50% and a little */
	cr_expect(fabs(tj_num(w, "pool_busy_pct") - 50) <= 12, "busy %.1f%%, want 50 +- 12", tj_num(w, "pool_busy_pct"));
	cr_expect(fabs(tj_num(p, "busy_pct") - 50) <= 12, "pool busy %.1f%%", tj_num(p, "busy_pct"));
	cr_expect_eq(tj_num(w, "pool_threads"), 4);
	cr_expect_str_eq(tj_str(w, "limit"), "none", "%s", tj_str(w, "limit_reason"));
	cr_expect_eq(tj_num(w, "limit_pool"), 0);
	json_object_put(doc);
	tc_kill(c.pid);
}

Test(pools, a_loop_without_helpers_reads_as_before, .timeout = 60)
{
	const char *args[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	pid_t pid = tc_spawn_example("duty_cycle", args, NULL);
	json_object *doc = tj_list_pid(pid, "3");
	json_object *w = main_worker(doc, pid), *ps = tj_pools(w);
	log_worker("plain loop", w);
	cr_expect_eq(json_object_array_length(ps), 0);
	cr_expect(tj_null(w, "pool_threads") && tj_null(w, "pool_busy_pct"), "no pool is null: %s",
		  json_object_to_json_string(w));
	cr_expect_eq(tj_num(w, "limit_pool"), 0);
	cr_expect_str_neq(tj_str(w, "limit"), "pool");
	json_object_put(doc);
	tc_kill(pid);
}

/* node's main loop beside its libuv threadpool of 2, both threads kept
 * busy by eight pbkdf2 calls: they never wait, so they are busy helpers */
Test(pools, node_threadpool_under_pbkdf2_is_found, .timeout = 60)
{
	pid_t pid = node_pbkdf2_start();
	cr_assert_eq(node_pbkdf2_settled(pid), 0, "node %d: its pool never ran, or its main thread never slept", (int)pid);
	json_object *doc = tj_list_pid(pid, "5");
	json_object *w = main_worker(doc, pid), *ps = tj_pools(w);
	log_worker("node", w);
	json_object *found = NULL;
	for (size_t i = 0; i < json_object_array_length(ps); i++) {
		json_object *p = json_object_array_get_idx(ps, i);
		if (tj_num(p, "nthreads") == 2 && tj_num(p, "busy_pct") >= 80)
			found = p;
	}
	cr_expect(found, "node's threadpool of 2 was not found");
	if (found)
		cr_log_info("node's pool: %s", json_object_to_json_string(found));
	cr_expect_eq(tj_num(w, "pool_threads"), 2);
	cr_expect_geq(tj_num(w, "pool_busy_pct"), 80);
	cr_expect_str_eq(tj_str(w, "limit"), "pool", "%s", tj_str(w, "limit_reason"));
	json_object_put(doc);
	tc_kill(pid);
}
