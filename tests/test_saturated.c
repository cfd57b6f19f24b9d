/* A loop saturated from the start (its listener's accept queue never empty, its epoll_wait never blocks) is a worker when named with -p, under proc and bpf: idle <= 5, limit loop or backlog, accept_queue_max read. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <json-c/json.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_bpf.h"
#include "support/list_json.h"
#include "support/support.h"

#define BACKLOG 64
#define WAITING 40

TestSuite(saturated, .timeout = 40);

/* A child whose epoll loop watches a listener on 127.0.0.1 with WAITING
 * connections queued that it never takes: every epoll_wait returns at
 * once, and each wake costs it 0.1 ms on a CPU and a 5-ms synchronous
 * wait (a sleep: busy, yet little CPU, so a loaded machine's run queue
 * does not make it "cpu"). *conns: the waiting ends. */
static pid_t spawn_saturated(int conns[WAITING])
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(s, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(s, BACKLOG), 0);
	socklen_t len = sizeof(a);
	cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
	for (int i = 0; i < WAITING; i++) {
		conns[i] = socket(AF_INET, SOCK_STREAM, 0);
		cr_assert_eq(connect(conns[i], (struct sockaddr *)&a, sizeof(a)), 0, "connection %d", i);
	}
	pid_t parent = getpid(), pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = s }, out;
		epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
		for (;;) {
			epoll_wait(ep, &out, 1, -1);
			uint64_t until = ts_mono_ns() + 100000;
			while (ts_mono_ns() < until)
				;
			usleep(5000);
		}
	}
	close(s);
	return pid;
}

static void saturated_is_a_worker(const char *source)
{
	int conns[WAITING];
	pid_t pid = spawn_saturated(conns);
	char p[16], *out = NULL;
	snprintf(p, sizeof(p), "%d", (int)pid);
	int rc = ts_loopstat(&out, 30000, "list", "--json", "--source", source, "--duration", "3", "-p", p, NULL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < WAITING; i++)
		close(conns[i]);
	cr_assert_eq(rc, 0, "%s: list exited %d (4: no worker to measure): %s", source, rc, out);
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "not JSON: %s", out);
	json_object *w = tj_worker(doc, pid, pid);
	double idle = tj_num(w, "idle_pct");
	const char *limit = tj_str(w, "limit");
	cr_log_info("%s: idle %.2f limit %s accept_queue_max %.0f", source, idle, limit, tj_num(w, "accept_queue_max"));
	cr_expect_leq(idle, 5, "%s: idle %.2f", source, idle);
	cr_expect(!strcmp(limit, "loop") || !strcmp(limit, "backlog"), "%s: limit %s (%s)", source, limit,
		  tj_str(w, "limit_reason"));
	cr_expect_eq(tj_num(w, "accept_queue_max"), WAITING, "%s: accept_queue_max", source);
	json_object_put(doc);
	free(out);
}

Test(saturated, listed_under_proc) { saturated_is_a_worker("proc"); }

Test(saturated, listed_under_bpf)
{
	char why[256];
	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("bpf unavailable: %s", why);
	saturated_is_a_worker("bpf");
}
