/* The loop's poll through the real CLI: a synchronous poll() on a socket and a nested epoll loop are blocked time, attributed and with the basis shown, within 3 points (plus the loop's own wait for a CPU) of the program's clock. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/children.h"
#include "support/support.h"

TestSuite(loop_poll_cli, .timeout = 60);

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "no '%s' in %s", key, json_object_to_json_string(o));
	return v;
}

/* "self idle_pct X blocked_pct Y wall_s Z" from loop_truth at its exit */
static void read_self(int fd, double *idle, double *blocked)
{
	char buf[512] = "";
	size_t len = 0;
	long long end = ts_now_ms() + 15000;
	while (ts_now_ms() < end && !strstr(buf, "wall_s")) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
	}
	const char *p = strstr(buf, "self idle_pct");
	cr_assert(p && sscanf(p, "self idle_pct %lf blocked_pct %lf", idle, blocked) == 2, "loop_truth said: %s", buf);
}

/* Runs CASE blocking B of each period for 4 s, samples it for 3 s through
 * `loopstat list --json`, and compares with what the program measured. */
static void check_case(const char *kase, const char *block, const char *want_syscall, const char *want_target,
		       const char *want_basis)
{
	const char *args[] = { "--case", kase, "--block", block, "--work", "0.1", "--seconds", "4", NULL };
	int out_fd;
	pid_t pid = tc_spawn_example("loop_truth", args, &out_fd);
	usleep(300000);
	char pids[16];
	snprintf(pids, sizeof(pids), "%d", (int)pid);
	/* --source proc: the sampler's loop-poll rule through the CLI is what
	 * this judges; test_bpf's truth cases judge the kernel's */
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--duration", "3", "--rate", "500",
			 "--source", "proc", "-p", pids, NULL };
	char *out = NULL;
	cr_assert_eq(ts_run(argv, &out, 20000), 0, "%s", out);
	double self_idle, self_blocked;
	read_self(out_fd, &self_idle, &self_blocked);
	waitpid(pid, NULL, 0);

	json_object *doc = json_tokener_parse(out), *ws = get(doc, "workers");
	cr_assert_eq(json_object_array_length(ws), 1, "%s", out);
	json_object *w = json_object_array_get_idx(ws, 0);
	double idle = json_object_get_double(get(w, "idle_pct"));
	double blocked = json_object_get_double(get(w, "blocked_pct"));
	double wait = json_object_get_double(get(w, "cpu_wait_pct"));
	const char *basis = json_object_get_string(get(w, "loop_basis"));
	cr_log_info("%s: sampled idle %.1f blocked %.1f vs self %.1f / %.1f (cpu wait %.1f), basis %s", kase, idle,
		    blocked, self_idle, self_blocked, wait, basis);
	/* the program's clock counts its wait for a CPU as idle, schedstat as running */
	cr_assert_float_eq(idle, self_idle, 3 + wait, "%s: idle %.1f vs its own %.1f", kase, idle, self_idle);
	cr_assert_gt(blocked, self_blocked - 3 - wait, "%s: the synchronous wait is blocked time: %.1f vs %.1f", kase,
		     blocked, self_blocked);
	cr_assert(strstr(basis, want_basis), "%s: basis '%s'", kase, basis);
	json_object *top = json_object_array_get_idx(get(w, "blocked_top"), 0);
	cr_assert(top, "%s: no blocker in %s", kase, out);
	cr_assert_str_eq(json_object_get_string(get(top, "syscall")), want_syscall);
	if (want_target)
		cr_assert(strstr(json_object_get_string(get(top, "target")), want_target), "%s: target '%s'", kase,
			  json_object_get_string(get(top, "target")));
	json_object_put(doc);
	free(out);
	close(out_fd);
}

Test(loop_poll_cli, synchronous_poll_on_a_socket_is_blocked_on_its_peer)
{
	check_case("sync_poll", "0.4", "poll", "tcp 127.0.0.1:", "epoll fd");
}

Test(loop_poll_cli, nested_epoll_loop_is_blocked_main_loop_idle)
{
	check_case("nested", "0.3", "epoll_wait", NULL, "epoll fd");
}

Test(loop_poll_cli, select_sleep_is_blocked_select_on_the_epoll_fd_is_idle)
{
	check_case("em_select", "0.3", "pselect6", NULL, "epoll fd"); /* glibc's select() is pselect6 */
}
