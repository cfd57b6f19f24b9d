/* The listen backlog of a real loop: 40 connections waiting on a loop that does not accept them read accept_queue 40 of its backlog 128 (and max >= 20) and limit "backlog" in list's JSON, and fail check's accept_queue_max<20; a loop without a listening socket reads none; probe_listen's rows and matching. */
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

#include "probe_listen.h"
#include "support/list_json.h"
#include "support/support.h"

#define BACKLOG 128
#define WAITING 40

/* A child asleep in epoll_wait for good: a loop with nothing to do. */
static pid_t spawn_idle_loop(void)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int ep = epoll_create1(0);
		struct epoll_event ev;
		for (;;)
			epoll_wait(ep, &ev, 1, -1);
	}
	return pid;
}

/* A child with a listening socket on 127.0.0.1 it never accepts from,
 * asleep in epoll_wait; its port in *port. */
static pid_t spawn_deaf_listener(int *port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_geq(s, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(s, BACKLOG), 0);
	socklen_t len = sizeof(a);
	cr_assert_eq(getsockname(s, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	pid_t pid = spawn_idle_loop();   /* inherits the socket */
	close(s);
	return pid;
}

static json_object *list_json(pid_t pid)
{
	char spid[16], *out = NULL;
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "-p", spid, "--duration", "2", "--json", NULL };
	cr_assert_eq(ts_run(argv, &out, 20000), 0, "list: %s", out ? out : "");
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "%s", out);
	free(out);
	json_object *ws;
	cr_assert(json_object_object_get_ex(doc, "workers", &ws) && json_object_array_length(ws) == 1);
	json_object *w = json_object_get(json_object_array_get_idx(ws, 0));
	json_object_put(doc);
	return w;
}

Test(listen, waiting_connections_fill_the_accept_queue, .timeout = 60)
{
	int port;
	pid_t pid = spawn_deaf_listener(&port);
	int c[WAITING];
	for (int i = 0; i < WAITING; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		cr_assert_eq(connect(c[i], (struct sockaddr *)&a, sizeof(a)), 0, "connection %d", i);
	}
	/* the probe: the child's socket is among its fds and in the table */
	struct probe_listen_set set;
	cr_assert_eq(probe_listen_scan(pid, &set), 0);
	cr_assert_geq(set.n, 1);
	struct probe_listen_row rows[4096];
	int n = probe_listen_table(pid, set.netns, rows, 4096);
	cr_assert_gt(n, 0);
	struct probe_listen l;
	probe_listen_match(&set, rows, n, &l);
	cr_expect_eq(l.sockets, 1);
	cr_expect_eq(l.queue, WAITING);
	cr_expect_eq(l.limit, BACKLOG);

	json_object *w = list_json(pid);
	cr_log_info("accept queue %.0f (max %.0f) of %.0f", tj_num(w, "accept_queue"), tj_num(w, "accept_queue_max"),
		    tj_num(w, "accept_queue_limit"));
	cr_expect_eq(tj_num(w, "accept_queue"), WAITING);
	cr_expect_geq(tj_num(w, "accept_queue_max"), 20);
	cr_expect_eq(tj_num(w, "accept_queue_limit"), BACKLOG);
	json_object *lim;
	cr_expect(json_object_object_get_ex(w, "limit", &lim) && lim && strcmp(json_object_get_string(lim), "backlog") == 0,
		  "an idle loop with 40 connections waiting: %s", json_object_to_json_string(w));
	json_object_put(w);

	/* check takes thresholds on it */
	char spid[16], *out = NULL;
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	char *chk[] = { (char *)ts_loopstat_bin(), "check", "-p", spid, "--duration", "2", "accept_queue_max<20", NULL };
	int rc = ts_run(chk, &out, 20000);
	cr_expect_eq(rc, 1, "check 'accept_queue_max<20' exited %d: %s", rc, out ? out : "");
	free(out);
	for (int i = 0; i < WAITING; i++)
		close(c[i]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(listen, a_loop_without_a_listening_socket_reads_none, .timeout = 30)
{
	pid_t pid = spawn_idle_loop();
	json_object *w = list_json(pid);
	cr_expect(tj_null(w, "accept_queue") && tj_null(w, "accept_queue_limit"), "no listen is null: %s",
		  json_object_to_json_string(w));
	json_object_put(w);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
