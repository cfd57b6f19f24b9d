/* Roles on real processes: a plain list shows redis, nginx, node and asyncio but not bash under tmux or a curl download (--all shows them, JSON counts them), node's idle second loop folds into its main worker, and a host-wide check of the servers passes while a client exits during it. */
#include <criterion/criterion.h>

#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/carbon.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

#define MAX_KIDS 16

static pid_t kids[MAX_KIDS];
static int nkids;
static char *dir;
static char tmux_sock[64];

static void setup(void)
{
	/* the suites run with LOOPSTAT_DISCOVER=instrumented: this one tests the default */
	unsetenv("LOOPSTAT_DISCOVER");
	dir = ts_tmpdir("roles");
	setenv("LOOPSTAT_SHM_DIR", dir, 1);
	snprintf(tmux_sock, sizeof(tmux_sock), "loopstat-roles-%d", (int)getpid());
}

static void teardown(void)
{
	for (int i = 0; i < nkids; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);   /* an nginx worker is not ours to reap: ECHILD */
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "tmux -L %s kill-server >/dev/null 2>&1", tmux_sock);
	if (system(cmd)) {
		/* no server left: nothing to stop */
	}
	ts_rmtree_free(dir);
}

TestSuite(roles, .init = setup, .fini = teardown, .timeout = 90);

static int have(const char *cmd)
{
	char sh[160];
	snprintf(sh, sizeof(sh), "command -v %s >/dev/null 2>&1", cmd);
	return system(sh) == 0;
}

/* Starts argv (a command looked up in PATH), stdin and stdout on /dev/null. */
static pid_t spawn(char *const argv[])
{
	cr_assert_lt(nkids, MAX_KIDS);
	return kids[nkids++] = tc_spawn_quiet(argv, NULL);
}

/* spawn, then wait until it listens on port. */
static pid_t serve(char *const argv[], int port)
{
	pid_t pid = spawn(argv);
	tc_wait_listen(port, argv[0]);
	return pid;
}

static char *script(const char *name, const char *text)
{
	char *path = ts_path_in(dir, name);
	cr_assert_eq(ts_write_file(path, text, strlen(text)), 0);
	return path;
}

static const char *role_of(json_object *w)
{
	return json_object_get_string(tj_get(w, "role"));
}

/* The host's view narrowed to the names this test starts (-s: a service
 * is the process name here), so that another suite's thousands of loops
 * cannot crowd them out past --max-workers; -s keeps the default of
 * servers only, as a plain list has. */
#define OURS "^(python3|node|redis-server|nginx|bash|tmux: server|curl)$"

static json_object *list_json(const char *extra)
{
	return tj_list_with(30000, "2", "-s", OURS, extra, NULL);
}

/* A process's first child (nginx's workers, a tmux pane's shell), 0 if none. */
static pid_t children_of(pid_t pid, pid_t *out, int cap)
{
	char path[64], text[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(path, "r");
	int n = 0;
	if (f && fgets(text, sizeof(text), f))
		for (char *p = text, *e; n < cap && (out[n] = (pid_t)strtol(p, &e, 10)) > 0; p = e)
			n++;
	if (f)
		fclose(f);
	return n;
}

/* A large file served slowly (8 KB every 50 ms by a python http.server
 * handler) and read by curl: a download of about `seconds`. */
static pid_t start_download(int seconds, pid_t *server)
{
	char *py = script("slow.py", "import http.server, sys, time\n"
				     "n = int(sys.argv[2]) * 20\n"
				     "class H(http.server.BaseHTTPRequestHandler):\n"
				     "    def do_GET(self):\n"
				     "        self.send_response(200)\n"
				     "        self.send_header('Content-Length', str(n * 8192))\n"
				     "        self.end_headers()\n"
				     "        for i in range(n):\n"
				     "            self.wfile.write(b'x' * 8192)\n"
				     "            self.wfile.flush()\n"
				     "            time.sleep(0.05)\n"
				     "http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n");
	int port = carbon_free_port();
	char ps[16], secs[16], url[96];
	snprintf(ps, sizeof(ps), "%d", port);
	snprintf(secs, sizeof(secs), "%d", seconds);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big", port);
	char *hv[] = { "python3", py, ps, secs, NULL };
	*server = serve(hv, port);
	char *cv[] = { "curl", "-s", "-o", "/dev/null", url, NULL };
	pid_t curl = spawn(cv);
	free(py);
	return curl;
}

Test(roles, a_plain_list_shows_the_servers_not_the_shell_or_the_download)
{
	if (!have("curl") || !have("tmux"))
		cr_skip_test("curl or tmux is not installed");
	pid_t srv[8] = { 0 };
	const char *what[8] = { 0 };
	int nsrv = 0;

	int p = carbon_free_port();
	char port[4][16];
	snprintf(port[0], sizeof(port[0]), "%d", p);
	char *py = script("aio.py", "import asyncio, sys\n"
				    "async def h(r, w): w.close()\n"
				    "async def main():\n"
				    "    s = await asyncio.start_server(h, '127.0.0.1', int(sys.argv[1]))\n"
				    "    await asyncio.sleep(80)\n"
				    "asyncio.run(main())\n");
	char *pyv[] = { "python3", py, port[0], NULL };
	what[nsrv] = "python3 asyncio";
	srv[nsrv++] = serve(pyv, p);
	pid_t node = 0;
	if (have("node")) {
		p = carbon_free_port();
		snprintf(port[1], sizeof(port[1]), "%d", p);
		char *js = script("srv.js", "require('http').createServer((q, r) => r.end('x'))"
					    ".listen(+process.argv[2], '127.0.0.1');\n"
					    "setTimeout(() => process.exit(0), 80000);\n");
		char *nv[] = { "node", js, port[1], NULL };
		what[nsrv] = "node";
		node = srv[nsrv++] = serve(nv, p);
		free(js);
	}
	if (have("redis-server")) {
		p = carbon_free_port();
		snprintf(port[2], sizeof(port[2]), "%d", p);
		char *rv[] = { "redis-server", "--port", port[2], "--bind", "127.0.0.1", "--save", "",
			       "--appendonly", "no", "--dir", dir, NULL };
		what[nsrv] = "redis-server";
		srv[nsrv++] = serve(rv, p);
	}
	if (access("/usr/sbin/nginx", X_OK) == 0) {
		p = carbon_free_port();
		char conf[1024];
		snprintf(conf, sizeof(conf),
			 "daemon off; worker_processes 2; pid %s/nginx.pid; error_log %s/nginx.err;\n"
			 "events { worker_connections 64; }\n"
			 "http { access_log off; client_body_temp_path %s; proxy_temp_path %s;\n"
			 "  fastcgi_temp_path %s; uwsgi_temp_path %s; scgi_temp_path %s;\n"
			 "  server { listen 127.0.0.1:%d; location / { return 200 \"x\"; } } }\n",
			 dir, dir, dir, dir, dir, dir, dir, p);
		char *cf = script("nginx.conf", conf);
		char *xv[] = { "/usr/sbin/nginx", "-c", cf, "-e", "stderr", NULL };
		pid_t master = serve(xv, p);
		pid_t workers[2];
		usleep(300 * 1000);
		int nw = children_of(master, workers, 2);
		cr_expect_eq(nw, 2, "nginx started 2 workers");
		for (int i = 0; i < nw; i++) {
			what[nsrv] = "nginx worker";
			srv[nsrv++] = workers[i];
			kids[nkids++] = workers[i];   /* they outlive a killed master */
		}
		free(cf);
	} else {
		cr_log_warn("nginx is not installed: not tried\n");
	}

	/* an interactive bash under tmux, and a download that outlasts the test */
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "tmux -L %s new-session -d -x 80 -y 24 'bash --norc -i'", tmux_sock);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	pid_t pane = 0;
	snprintf(cmd, sizeof(cmd), "tmux -L %s list-panes -F '#{pane_pid}'", tmux_sock);
	for (int i = 0; i < 100 && !pane; i++) {
		FILE *f = popen(cmd, "r");
		char line[32] = "";
		if (f && fgets(line, sizeof(line), f))
			pane = (pid_t)atoi(line);
		if (f)
			pclose(f);
		if (!pane)
			usleep(20000);
	}
	cr_assert_gt(pane, 0, "tmux's pane");
	pid_t http, curl = start_download(120, &http);
	usleep(500 * 1000);   /* bash at its prompt, curl into its transfer */

	json_object *doc = list_json(NULL);
	cr_log_info("left out: %s\n", json_object_to_json_string(tj_get(doc, "left_out")));
	for (int i = 0; i < nsrv; i++) {
		json_object *w = tj_find(doc, srv[i], 0);
		cr_expect(w, "%s (pid %d) is listed", what[i], (int)srv[i]);
		if (w)
			cr_expect_str_eq(role_of(w), "server", "%s is a server", what[i]);
	}
	cr_expect(!tj_find(doc, pane, 0), "bash under tmux (pid %d) is not listed", (int)pane);
	cr_expect(!tj_find(doc, curl, 0), "curl (pid %d) is not listed", (int)curl);
	json_object *left = tj_get(doc, "left_out");
	cr_expect_geq(json_object_get_int(tj_get(left, "interactive")), 1, "bash is counted as left out");
	cr_expect_geq(json_object_get_int(tj_get(left, "client")), 1, "curl is counted as left out");
	pid_t helper = 0;
	if (node) {
		/* node's idle second loop: folded into its main worker, not listed */
		json_object *m = tj_find(doc, node, node), *hs = m ? tj_get(m, "helpers") : NULL;
		cr_expect(hs && json_object_array_length(hs) >= 1, "node's second loop is folded into its main worker");
		if (hs && json_object_array_length(hs))
			helper = json_object_get_int(json_object_array_get_idx(hs, 0));
		cr_expect(!helper || !tj_find(doc, node, helper), "node's helper loop %d is not listed apart", (int)helper);
		json_object *ws = tj_get(doc, "workers");
		int nnode = 0;
		for (size_t i = 0; i < json_object_array_length(ws); i++)
			nnode += json_object_get_int(tj_get(json_object_array_get_idx(ws, i), "pid")) == node;
		cr_expect_eq(nnode, 1, "node is one worker");
	}
	json_object_put(doc);

	/* --all: every loop, with its role; nothing left out */
	doc = list_json("--all");
	for (int i = 0; i < nsrv; i++)
		cr_expect(tj_find(doc, srv[i], 0), "--all: %s (pid %d) is listed", what[i], (int)srv[i]);
	json_object *w = tj_find(doc, pane, 0);
	cr_expect(w, "--all: bash (pid %d) is listed", (int)pane);
	if (w)
		cr_expect_str_eq(role_of(w), "interactive");
	w = tj_find(doc, curl, 0);
	cr_expect(w, "--all: curl (pid %d) is listed", (int)curl);
	if (w)
		cr_expect_str_eq(role_of(w), "client");
	if (helper) {
		w = tj_find(doc, node, helper);
		cr_expect(w, "--all: node's helper loop is listed");
		if (w)
			cr_expect_str_eq(role_of(w), "helper");
	}
	left = tj_get(doc, "left_out");
	json_object_object_foreach(left, role, n)
		cr_expect_eq(json_object_get_int(n), 0, "--all leaves no %s out", role);
	json_object_put(doc);
	free(py);
}

/* A check of the host's servers while a download ends in the middle of it:
 * the client was never judged, so its exit changes nothing (exit 0); with
 * --all it is judged, and its exit leaves its thresholds undecided (what
 * the roles spare a check of the servers). */
Test(roles, a_client_ending_mid_check_leaves_a_host_check_alone)
{
	if (!have("curl"))
		cr_skip_test("curl is not installed");
	int p = carbon_free_port();
	char port[16];
	snprintf(port, sizeof(port), "%d", p);
	/* a server with a name of its own, so that -s picks it and no other test's */
	char *py = script("named.py", "import asyncio, sys\n"
				      "open('/proc/self/comm', 'w').write('rolesrv')\n"
				      "async def h(r, w): w.close()\n"
				      "async def main():\n"
				      "    s = await asyncio.start_server(h, '127.0.0.1', int(sys.argv[1]))\n"
				      "    await asyncio.sleep(80)\n"
				      "asyncio.run(main())\n");
	char *pyv[] = { "python3", py, port, NULL };
	pid_t srv = serve(pyv, p);
	const char *extra[2] = { NULL, "--all" };
	for (int round = 0; round < 2; round++) {
		pid_t http, curl = start_download(3, &http);   /* ~3 s: ends within the 4 s check */
		usleep(300 * 1000);   /* curl into its transfer: found when the check starts */
		char *out = NULL;
		long long t0 = ts_now_ms();
		int rc = ts_loopstat(&out, 30000, "check", "--duration", "4", "-s", "^(rolesrv|curl)$", "--json",
				     "idle_pct>=1", extra[round], NULL);
		cr_log_info("check %s: exit %d after %lld ms\n", extra[round] ? extra[round] : "(servers)", rc,
			    ts_now_ms() - t0);
		char pid[32], client[32];
		snprintf(pid, sizeof(pid), "\"pid\":%d,", (int)srv);
		snprintf(client, sizeof(client), "\"pid\":%d,", (int)curl);
		cr_expect(out && strstr(out, pid), "the server was judged: %s", out ? out : "");
		if (round == 0) {
			cr_expect_eq(rc, 0, "a check of the servers passes: %s", out ? out : "");
			cr_expect(out && !strstr(out, client), "the client was not judged: %s", out ? out : "");
		} else {
			cr_expect_neq(rc, 0, "with --all the client's exit counts: %s", out ? out : "");
			cr_expect(out && strstr(out, client), "with --all the client was judged: %s", out ? out : "");
		}
		free(out);
	}
	free(py);
}
