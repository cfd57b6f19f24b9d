/* No false backlog: an idle loop whose accept queue filled with a burst of 40 connections and then drained reads the burst in accept_queue_max but not limit "backlog"; one whose queue stays full still does. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/carbon.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

#define BURST 40

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("drain");
}

static void teardown(void)
{
	ts_rmtree_free(dir);
}

TestSuite(listen_drain, .init = setup, .fini = teardown, .timeout = 60);

/*
 * A python epoll loop listening on port that, once told on its stdin,
 * leaves its listener out of its wait for hold_s seconds (idle in
 * epoll_wait all along, connections queueing), then accepts (and closes)
 * every connection as it comes. hold_s < 0: it never accepts.
 */
static pid_t start_server(int port, double hold_s, int *go)
{
	char *py = ts_path_in(dir, "srv.py");
	static const char text[] =
		"import os, selectors, socket, sys\n"
		"s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
		"s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen(128); s.setblocking(False)\n"
		"hold = float(sys.argv[2])\n"
		"sel = selectors.EpollSelector(); sel.register(0, selectors.EVENT_READ)\n"
		"while True:\n"
		"    for k, _ in sel.select(60):\n"
		"        if k.fileobj == 0:\n"
		"            os.read(0, 16); sel.unregister(0)\n"
		"            if hold >= 0:\n"
		"                sel.select(hold)\n"
		"                sel.register(s, selectors.EVENT_READ)\n"
		"        else:\n"
		"            while True:\n"
		"                try: s.accept()[0].close()\n"
		"                except BlockingIOError: break\n";
	cr_assert_eq(ts_write_file(py, text, sizeof(text) - 1), 0);
	char ps[16], hs[16];
	snprintf(ps, sizeof(ps), "%d", port);
	snprintf(hs, sizeof(hs), "%g", hold_s);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = tc_fork();
	if (pid == 0) {
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		execlp("python3", "python3", py, ps, hs, (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	*go = p[1];
	free(py);
	for (int i = 0; i < 500 && !carbon_port_open(port); i++)
		usleep(10000);
	cr_assert(carbon_port_open(port), "the server listens on %d", port);
	return pid;
}

/* After delay_ms: tells the server to hold, then opens BURST connections
 * at once and keeps them a while (a child, so that list runs meanwhile). */
static pid_t burst_after(int port, int go, int delay_ms)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		usleep((useconds_t)delay_ms * 1000);
		if (write(go, "h", 1) != 1)
			_exit(1);
		int c[BURST];
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		for (int i = 0; i < BURST; i++) {
			c[i] = socket(AF_INET, SOCK_STREAM, 0);
			if (connect(c[i], (struct sockaddr *)&a, sizeof(a)) < 0)
				_exit(2);
		}
		sleep(8);
		_exit(0);
	}
	return pid;
}

static json_object *list_of(pid_t pid, const char *duration)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	return tj_list(p, duration);
}

Test(listen_drain, an_idle_loop_whose_queue_drains_reads_no_backlog)
{
	int port = carbon_free_port(), go;
	pid_t srv = start_server(port, 2.0, &go);
	/* the burst waits in the queue from ~0.5 s to ~2.5 s of a 5-s list: a
	 * reading or two see it, the last ones see it drained */
	pid_t kid = burst_after(port, go, 500);
	json_object *doc = list_of(srv, "5");
	json_object *w = tj_worker(doc, srv, srv);
	cr_log_info("drained: idle %.1f%% accept queue %.0f (max %.0f) of %.0f: limit %s (%s)\n", tj_num(w, "idle_pct"),
		    tj_num(w, "accept_queue"), tj_num(w, "accept_queue_max"), tj_num(w, "accept_queue_limit"),
		    tj_str(w, "limit"), tj_str(w, "limit_reason"));
	cr_expect_geq(tj_num(w, "accept_queue_max"), 20, "the burst was read in the queue");
	cr_expect_eq(tj_num(w, "accept_queue"), 0, "the queue drained");
	cr_expect_geq(tj_num(w, "idle_pct"), 80, "the loop idles");
	cr_expect_str_neq(tj_str(w, "limit"), "backlog", "a queue that drained: %s", tj_str(w, "limit_reason"));
	cr_expect_eq(tj_num(w, "limit_backlog"), 0);
	json_object_put(doc);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
	close(go);
}

Test(listen_drain, an_idle_loop_whose_queue_stays_full_reads_backlog)
{
	int port = carbon_free_port(), go;
	pid_t srv = start_server(port, -1, &go);   /* never accepts */
	pid_t kid = burst_after(port, go, 0);
	usleep(300 * 1000);
	json_object *doc = list_of(srv, "3");
	json_object *w = tj_worker(doc, srv, srv);
	cr_log_info("full: accept queue %.0f (max %.0f): limit %s (%s)\n", tj_num(w, "accept_queue"),
		    tj_num(w, "accept_queue_max"), tj_str(w, "limit"), tj_str(w, "limit_reason"));
	cr_expect_geq(tj_num(w, "accept_queue"), BURST);   /* and the port checks' connections */
	cr_expect_str_eq(tj_str(w, "limit"), "backlog", "%s", tj_str(w, "limit_reason"));
	cr_expect_eq(tj_num(w, "limit_backlog"), 1);
	json_object_put(doc);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	kill(srv, SIGKILL);
	waitpid(srv, NULL, 0);
	close(go);
}
