/* A pooled runtime's rows, whatever the load: an idle Go server (GOMAXPROCS=3, stripped) is one scheduler row of 3 threads from its environment with its Ms as members, named in the text table, grouped by --by runtime and labelled in Prometheus output; a tokio server's row names its spawn_blocking thread as the blocking pool's; Netty's loops stay loops with their thread names; a ForkJoinPool of 2 is a jvm scheduler of 2 threads. */
#include <criterion/criterion.h>

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/children.h"
#include "support/list_json.h"
#include "support/rt_child.h"
#include "support/support.h"

/* The only row of pid; fails unless there is exactly one of kind. */
static json_object *only_row(json_object *doc, pid_t pid, const char *kind)
{
	json_object *rows[2];
	int n = tj_rows(doc, pid, kind, rows, 2);
	cr_assert_eq(n, 1, "%d %s rows of %d: %s", n, kind, (int)pid, json_object_to_json_string(doc));
	return rows[0];
}

Test(sched_rows, go_is_one_row_of_gomaxprocs, .timeout = 60)
{
	rc_need("goserver-stripped");
	int fd;
	pid_t pid = rc_spawn_go("goserver-stripped", 3, 0.0, &fd);
	char pids[32];
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	json_object *doc = tj_list(pids, "1.5");
	json_object *w = only_row(doc, pid, "scheduler");
	cr_expect_str_eq(tj_str(w, "runtime"), "go");
	cr_expect_eq(tj_num(w, "tid"), 0);
	cr_expect_eq(tj_num(w, "threads"), 3);
	cr_expect_str_eq(tj_str(w, "threads_from"), "GOMAXPROCS");
	cr_expect_str_eq(tj_str(w, "limit"), "none", "%s", json_object_to_json_string(w));
	json_object *ms = tj_get(w, "members");
	cr_expect_geq(json_object_array_length(ms), 3, "its Ms: %s", json_object_to_json_string(ms));
	/* and no row of a single M of it */
	json_object *ws;
	cr_assert(json_object_object_get_ex(doc, "workers", &ws));
	for (size_t i = 0; i < json_object_array_length(ws); i++)
		cr_expect(tj_num(json_object_array_get_idx(ws, i), "pid") != pid ||
			  !strcmp(tj_str(json_object_array_get_idx(ws, i), "kind"), "scheduler"));
	json_object_put(doc);
	char *out = NULL;
	cr_assert_eq(ts_loopstat(&out, 30000, "list", "-p", pids, "--duration", "1", NULL), 0, "%s", out);
	cr_expect(strstr(out, "go scheduler, 3 threads (GOMAXPROCS)"), "%s", out);
	free(out);
	cr_assert_eq(ts_loopstat(&out, 30000, "list", "-p", pids, "--duration", "1", "--by", "runtime", NULL), 0, "%s", out);
	cr_expect(strstr(out, "RUNTIME ") && strstr(out, "\ngo ") && strstr(out, "\n1 runtime, 1 worker"), "%s", out);
	free(out);
	/* Prometheus labels say what it is */
	char *dir = ts_tmpdir("schedrows"), *prom = ts_path_in(dir, "x.prom");
	cr_assert_eq(ts_loopstat(&out, 30000, "export", "-p", pids, "--duration", "1", "--prometheus-textfile", prom, NULL),
		     0, "%s", out);
	free(out);
	char *text = ts_read_file(prom), want[128];
	snprintf(want, sizeof(want), "pid=\"%d\",tid=\"0\",kind=\"scheduler\",runtime=\"go\"} ", (int)pid);
	cr_expect(text && strstr(text, want), "%s lacks %s", text, want);
	free(text);
	free(prom);
	ts_rmtree_free(dir);
	tc_kill(pid);
	close(fd);
}

Test(sched_rows, tokio_names_its_blocking_pool, .timeout = 90)
{
	rc_need("tokioserver");
	int fd;
	pid_t blocking;
	pid_t pid = rc_spawn_tokio(0.0, &fd, &blocking);
	json_object *doc = tj_list_pid(pid, "2");
	json_object *w = only_row(doc, pid, "scheduler");
	cr_expect_str_eq(tj_str(w, "runtime"), "tokio");
	cr_expect_eq(tj_num(w, "threads"), 2, "%s", json_object_to_json_string(w));
	json_object *ms = tj_get(w, "members"), *sleeper = tj_member(w, blocking);
	int workers = 0;
	for (size_t i = 0; i < json_object_array_length(ms); i++)
		workers += !strcmp(tj_str(json_object_array_get_idx(ms, i), "role"), "worker");
	cr_expect_eq(workers, 2, "%s", json_object_to_json_string(ms));
	cr_expect(sleeper && !strcmp(tj_str(sleeper, "role"), "blocking"), "the spawn_blocking thread %d: %s",
		  (int)blocking, json_object_to_json_string(ms));
	json_object_put(doc);
	tc_kill(pid);
	close(fd);
}

Test(sched_rows, netty_loops_keep_their_rows, .timeout = 120)
{
	rc_need("netty/NettyServer.class");
	pid_t pid = rc_spawn_netty(0.1);
	pid_t loops[8];
	int nl = 0;
	for (int i = 0; i < 100 && (nl = rc_threads_named(pid, "nioEventLoopGro", loops, 8)) < 3; i++)
		usleep(100000);
	cr_assert_eq(nl, 3);
	json_object *doc = tj_list_pid(pid, "2");
	for (int i = 0; i < nl; i++) {
		json_object *w = tj_worker(doc, pid, loops[i]);
		cr_expect_str_eq(tj_str(w, "kind"), "loop");
		cr_expect_str_eq(tj_str(w, "runtime"), "jvm");
		cr_expect_str_eq(tj_str(w, "group"), "nioEventLoopGro");
	}
	json_object_put(doc);
	tc_kill(pid);
}

Test(sched_rows, forkjoinpool_is_a_scheduler, .timeout = 120)
{
	rc_need("netty/FjpLoad.class");
	pid_t pid = rc_spawn_fjp(0.1);
	json_object *doc = tj_list_pid(pid, "2");
	json_object *w = only_row(doc, pid, "scheduler");
	cr_expect_str_eq(tj_str(w, "runtime"), "jvm");
	cr_expect_eq(tj_num(w, "threads"), 2, "%s", json_object_to_json_string(w));
	json_object_put(doc);
	tc_kill(pid);
}
