/* The sampled lag is honest about its resolution: null with lag_why (and check inconclusive, never failed) for sub-ms spans close together and nginx under a keep-alive client, read for 200-ms spans and gaps. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <json-c/json.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_bpf.h"
#include "support/carbon.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

TestSuite(lag_resolution, .timeout = 40);

/* loop_truth running spans of `spans` (its --spans) each followed by
 * idle_ms in epoll_wait, for 20 s at most. */
static pid_t spawn_spans(const char *spans, const char *idle_ms)
{
	const char *args[] = { "--case", "nested", "--spans", spans, "--idle-ms", idle_ms, "--seconds", "20", NULL };
	pid_t pid = tc_spawn_example("loop_truth", args, NULL);
	usleep(200 * 1000);
	return pid;
}

/* `list --json --source proc` of pid for duration s: its one worker (the
 * document in *doc, the caller's to put). */
static json_object *list_proc(pid_t pid, const char *duration, json_object **doc, char *const *check, char **check_out,
			      int *check_rc)
{
	char p[16], *out[2] = { NULL, NULL };
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *list[] = { (char *)ts_loopstat_bin(), "list", "--json", "--source", "proc", "--duration", (char *)duration,
			 "-p", p, NULL };
	char *const *argvs[] = { list, check };
	int rc[2] = { 0, 0 };
	ts_run_all(check ? 2 : 1, argvs, out, rc, 30000);
	cr_assert_eq(rc[0], 0, "list exit %d: %s", rc[0], out[0]);
	*doc = json_tokener_parse(out[0]);
	cr_assert(*doc, "not JSON: %s", out[0]);
	free(out[0]);
	if (check) {
		*check_out = out[1];
		*check_rc = rc[1];
	}
	return tj_worker(*doc, pid, 0);
}

/* A child sending keep-alive GETs to port back to back (ab -c 1 -k). */
static pid_t spawn_client(int port)
{
	pid_t parent = getpid(), pid = fork();
	cr_assert_geq(pid, 0);
	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	static const char req[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	for (;;) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
			close(s);
			usleep(10000);
			continue;
		}
		char buf[1024];
		ssize_t n = 1;
		while (n > 0 && write(s, req, sizeof(req) - 1) == (ssize_t)sizeof(req) - 1)
			n = read(s, buf, sizeof(buf));   /* the whole short answer in one read */
		close(s);
	}
}

/*
 * nginx (one process, no master) answering a keep-alive client back to
 * back, the case: its spans are tens of microseconds. Under proc
 * `check 'lag_p99_ms<50'` is inconclusive or a pass, never a fail; under
 * bpf, which sees every span, it passes.
 */
Test(lag_resolution, nginx_under_a_keepalive_client_never_fails_lag_check)
{
	if (access("/usr/sbin/nginx", X_OK) != 0)
		cr_skip_test("nginx missing (nginx-light)");
	char *dir = ts_tmpdir("lag-nginx"), conf[512], text[2048];
	int port = carbon_free_port();
	snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
	snprintf(text, sizeof(text),
		 "daemon off; master_process off; pid %s/nginx.pid; error_log %s/error.log;\n"
		 "events { worker_connections 64; }\n"
		 "http { access_log off; client_body_temp_path %s; proxy_temp_path %s; fastcgi_temp_path %s;\n"
		 "uwsgi_temp_path %s; scgi_temp_path %s;\n"
		 "server { listen 127.0.0.1:%d; location / { return 200 \"ok\\n\"; } } }\n",
		 dir, dir, dir, dir, dir, dir, dir, port);
	cr_assert_eq(ts_write_file(conf, text, strlen(text)), 0);
	const char *argv[] = { "/usr/sbin/nginx", "-c", conf, "-p", dir, NULL };
	pid_t nginx = tc_spawn_argv(argv, NULL);
	usleep(300 * 1000);
	pid_t client = spawn_client(port);
	usleep(300 * 1000);
	char p[16], *out[2] = { NULL, NULL };
	snprintf(p, sizeof(p), "%d", (int)nginx);
	char *proc[] = { (char *)ts_loopstat_bin(), "check", "--source", "proc", "--duration", "3", "-p", p,
			 "lag_p99_ms<50", NULL };
	char *bpf[] = { (char *)ts_loopstat_bin(), "check", "--source", "bpf", "--duration", "3", "-p", p,
			"lag_p99_ms<50", NULL };
	char why[256];
	int with_bpf = probe_bpf_available(why, sizeof(why)), rc[2] = { 0, 0 };
	char *const *argvs[] = { proc, bpf };
	ts_run_all(with_bpf ? 2 : 1, argvs, out, rc, 30000);
	tc_kill(client);
	tc_kill(nginx);
	ts_rmtree_free(dir);
	cr_log_info("proc: exit %d\n%s\nbpf: exit %d\n%s", rc[0], out[0], rc[1], with_bpf ? out[1] : why);
	cr_expect(rc[0] == 0 || rc[0] == 3, "proc: check 'lag_p99_ms<50' exited %d, never 1: %s", rc[0], out[0]);
	if (with_bpf)
		cr_expect_eq(rc[1], 0, "bpf: check 'lag_p99_ms<50' exited %d: %s", rc[1], out[1]);
	free(out[0]);
	free(out[1]);
}

/*
 * 0.2-ms spans each 0.3 ms apart (a server under `ab -c 1 -k`): a 10-ms
 * sampling period puts many spans and gaps between two samples, so the
 * samples' runs are chance, not spans. lag_* is null with a reason, and
 * check 'lag_p99_ms<50' is inconclusive or a pass, never a fail.
 */
Test(lag_resolution, sub_ms_spans_close_together_are_null_with_a_reason)
{
	pid_t pid = spawn_spans("0.2x1", "0.3");
	char p[16], *check_out = NULL;
	int check_rc;
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *check[] = { (char *)ts_loopstat_bin(), "check", "--source", "proc", "--duration", "3", "-p", p,
			  "lag_p99_ms<50", NULL };
	json_object *doc, *w = list_proc(pid, "3", &doc, check, &check_out, &check_rc);
	tc_kill(pid);
	const char *why = tj_str(w, "lag_why");
	cr_log_info("idle %.1f%%; lag_why: %s\ncheck: %s", tj_num(w, "idle_pct"), why, check_out);
	cr_expect(tj_null(w, "lag_p50_ms"), "lag_p50_ms %.2f: unresolved", tj_num(w, "lag_p50_ms"));
	cr_expect(tj_null(w, "lag_p99_ms"), "lag_p99_ms %.2f: unresolved", tj_num(w, "lag_p99_ms"));
	cr_expect(tj_null(w, "lag_max_ms"), "lag_max_ms %.2f: unresolved", tj_num(w, "lag_max_ms"));
	cr_expect(strstr(why, "lag_p99_ms") && strstr(why, "sampling period"), "lag_why names the row and the period: %s",
		  why);
	cr_expect(check_rc == 0 || check_rc == 3, "check 'lag_p99_ms<50' exited %d, never 1: %s", check_rc, check_out);
	cr_expect(check_rc != 3 || strstr(check_out, "inconclusive"), "%s", check_out);
	free(check_out);
	json_object_put(doc);
}

/* 200-ms spans with 200-ms gaps are 20 sampling periods each: resolved
 * (every lag_* read, no lag_why), the median within a period or two of
 * 200 ms (one more for a wait for a CPU on waking); the tail's accuracy
 * is test_lag's. */
Test(lag_resolution, long_spans_and_gaps_are_read)
{
	pid_t pid = spawn_spans("200x1", "200");
	json_object *doc, *w = list_proc(pid, "3", &doc, NULL, NULL, NULL);
	tc_kill(pid);
	double p50 = tj_num(w, "lag_p50_ms"), p99 = tj_num(w, "lag_p99_ms"), max = tj_num(w, "lag_max_ms");
	cr_log_info("p50 %.2f p99 %.2f max %.2f", p50, p99, max);
	const double period_ms = 10;
	cr_expect(p50 >= 200 - period_ms && p50 <= 200 + 3 * period_ms, "lag_p50_ms %.2f against 200", p50);
	cr_expect(p99 >= p50, "lag_p99_ms %.2f, read and at least p50", p99);
	cr_expect(max >= p99, "lag_max_ms %.2f, read and at least p99", max);
	cr_expect(tj_null(w, "lag_why") || !json_object_object_get_ex(w, "lag_why", NULL), "lag_why: %s",
		  tj_str(w, "lag_why"));
	json_object_put(doc);
}
