/* Every event loop on the host, by default: real servers nobody instrumented, found by the sweep. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_sweep.h"
#include "support/carbon.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"
#include "support/users.h"

#define MAX_SERVERS 16

static pid_t servers[MAX_SERVERS];
static int nservers;
static struct ts_user user;
static char *dir;

static void setup(void)
{
	/* the suites run with LOOPSTAT_DISCOVER=instrumented: this one tests the default */
	unsetenv("LOOPSTAT_DISCOVER");
	dir = ts_tmpdir("discover");
	setenv("LOOPSTAT_SHM_DIR", dir, 1); /* no segment: --instrumented finds nothing */
}

static void teardown(void)
{
	for (int i = 0; i < nservers; i++) {
		kill(servers[i], SIGKILL);
		waitpid(servers[i], NULL, 0);
	}
	ts_user_del(&user);
	ts_rmtree_free(dir);
}

TestSuite(discover, .init = setup, .fini = teardown, .timeout = 60);

static int have(const char *path)
{
	return access(path, X_OK) == 0;
}

/* Starts argv (as `as` when not NULL) and waits until it listens on port. */
static pid_t start(char *const argv[], int port, const struct ts_user *as)
{
	cr_assert_lt(nservers, MAX_SERVERS);
	pid_t pid = servers[nservers++] = tc_spawn_quiet(argv, as);
	tc_wait_listen(port, argv[0]);
	usleep(200000); /* back in its poll after the test's connections */
	return pid;
}

static json_object *list_json3(const char *a1, const char *a2, const char *a3)
{
	return tj_list_with(20000, "1", a1, a2, a3, NULL);
}

static json_object *list_json(const char *a1, const char *a2)
{
	return list_json3(a1, a2, NULL);
}

static char *script(const char *name, const char *text)
{
	char *path = ts_path_in(dir, name);
	cr_assert_eq(ts_write_file(path, text, strlen(text)), 0);
	return path;
}

/* A server nobody instrumented, started from argv listening on port:
 * plain list finds it, with a service, idle, not instrumented. */
static void listed_uninstrumented(const char *what, char *const argv[], int port)
{
	pid_t pid = start(argv, port, NULL);
	json_object *doc = list_json(NULL, NULL);
	json_object *swept = tj_get(doc, "swept");
	cr_expect_gt(json_object_get_int(tj_get(swept, "processes")), 0);
	cr_expect_geq(json_object_get_int(tj_get(swept, "loops")), 1);
	json_object *w = tj_find(doc, pid, 0);
	cr_assert(w, "%s (pid %d) is listed: %s", what, pid, json_object_to_json_string(doc));
	cr_expect_gt(strlen(json_object_get_string(tj_get(w, "service"))), 0, "%s has a service", what);
	cr_expect_gt(json_object_get_double(tj_get(w, "idle_pct")), 80.0, "%s idles", what);
	cr_expect_eq(json_object_get_boolean(tj_get(w, "instrumented")), 0);
	json_object_put(doc);
}

/* Skips the test, saying why, when the program at path is not installed. */
static void need(const char *path)
{
	if (!have(path))
		cr_skip_test("%s is not installed", path);
}

Test(discover, plain_list_finds_python_asyncio)
{
	need("/usr/bin/python3");
	char port[16];
	int p = carbon_free_port();
	snprintf(port, sizeof(port), "%d", p);
	char *py = script("srv.py", "import asyncio, sys\n"
				    "async def h(r, w): w.close()\n"
				    "async def main():\n"
				    "    s = await asyncio.start_server(h, '127.0.0.1', int(sys.argv[1]))\n"
				    "    await asyncio.sleep(60)\n"
				    "asyncio.run(main())\n");
	char *argv[] = { "/usr/bin/python3", py, port, NULL };
	listed_uninstrumented("python3 asyncio", argv, p);

	/* --instrumented: the old default, none of them, nothing to show */
	char *out = NULL;
	int rc = ts_loopstat(&out, 20000, "list", "--json", "--duration", "0.5", "--instrumented", NULL);
	cr_expect_eq(rc, 4, "--instrumented with no segment: exit 4: %s", out ? out : "");
	free(out);
	free(py);
}

Test(discover, plain_list_finds_node_http)
{
	need("/usr/bin/node");
	char port[16];
	int p = carbon_free_port();
	snprintf(port, sizeof(port), "%d", p);
	char *js = script("srv.js", "require('http').createServer((q, r) => r.end('x'))"
				    ".listen(+process.argv[2], '127.0.0.1');\n"
				    "setTimeout(() => process.exit(0), 60000);\n");
	char *argv[] = { "/usr/bin/node", js, port, NULL };
	listed_uninstrumented("node http", argv, p);
	free(js);
}

Test(discover, plain_list_finds_redis)
{
	need("/usr/bin/redis-server");
	char port[16];
	int p = carbon_free_port();
	snprintf(port, sizeof(port), "%d", p);
	char *argv[] = { "/usr/bin/redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "",
			 "--appendonly", "no", "--dir", dir, NULL };
	listed_uninstrumented("redis-server", argv, p);
}

Test(discover, plain_list_finds_ruby_eventmachine)
{
	need("/usr/bin/ruby");
	if (access("/usr/lib/ruby/vendor_ruby/eventmachine.rb", R_OK) != 0)
		cr_skip_test("ruby's eventmachine is not installed (/usr/lib/ruby/vendor_ruby/eventmachine.rb)");
	char port[16];
	int p = carbon_free_port();
	snprintf(port, sizeof(port), "%d", p);
	char *rb = script("srv.rb", "require 'eventmachine'\n"
				    "module H; def receive_data(d); close_connection; end; end\n"
				    "EM.run { EM.start_server('127.0.0.1', ARGV[0].to_i, H); "
				    "EM.add_timer(60) { EM.stop } }\n");
	char *argv[] = { "/usr/bin/ruby", rb, port, NULL };
	listed_uninstrumented("ruby EventMachine", argv, p);
	free(rb);
}

Test(discover, user_and_service_narrow_the_set)
{
	ts_user_add(&user);
	int p1 = carbon_free_port(), p2 = carbon_free_port();
	char a1[16], a2[16];
	snprintf(a1, sizeof(a1), "%d", p1);
	snprintf(a2, sizeof(a2), "%d", p2);
	char *py = script("srv.py", "import selectors, socket, sys\n"
				    "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
				    "sel = selectors.DefaultSelector(); sel.register(s, selectors.EVENT_READ)\n"
				    "while True:\n"
				    "    for k, _ in sel.select(60): k.fileobj.accept()[0].close()\n");
	chmod(dir, 0755);
	chmod(py, 0644);
	char *mine[] = { "/usr/bin/python3", py, a1, NULL };
	char *theirs[] = { "/usr/bin/python3", py, a2, NULL };
	pid_t root_srv = start(mine, p1, NULL);
	pid_t user_srv = start(theirs, p2, &user);

	json_object *doc = list_json("-u", user.name);
	cr_expect(tj_find(doc, user_srv, 0), "-u %s keeps its server", user.name);
	cr_expect(!tj_find(doc, root_srv, 0), "-u %s drops root's", user.name);
	json_object_put(doc);

	doc = list_json("-s", "^python");
	cr_expect(tj_find(doc, user_srv, 0) && tj_find(doc, root_srv, 0), "-s ^python keeps both");
	json_object *ws = tj_get(doc, "workers");
	for (size_t i = 0; i < json_object_array_length(ws); i++) {
		const char *svc = json_object_get_string(tj_get(json_object_array_get_idx(ws, i), "service"));
		cr_expect(strncmp(svc, "python", 6) == 0, "only python services: %s", svc);
	}
	json_object_put(doc);

	/* a user with no loop: nothing to show, exit 4 */
	char *out = NULL;
	int rc = ts_loopstat(&out, 20000, "list", "--duration", "0.5", "-u", "0", "-s", "^no-such-service$", NULL);
	cr_expect_eq(rc, 4, "nothing to show exits 4: %s", out ? out : "");
	free(out);
	free(py);
}

/* ---- the sweep itself, on children parked in known waits ------------------ */

enum park { PARK_EPOLL, PARK_POLL_FDS, PARK_SELECT_FDS, PARK_SLEEP, PARK_POLL_NOFDS, PARK_N };

static pid_t park(enum park how)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid)
		return servers[nservers++] = pid;
	int p[2];
	if (pipe(p) < 0)
		_exit(1);
	switch (how) {
	case PARK_EPOLL: {
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN }, out;
		epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
		for (;;)
			epoll_wait(ep, &out, 1, -1);
	}
	case PARK_POLL_FDS: {
		struct pollfd fd = { .fd = p[0], .events = POLLIN };
		for (;;)
			poll(&fd, 1, -1);
	}
	case PARK_SELECT_FDS:
		for (;;) {
			fd_set r;
			FD_ZERO(&r);
			FD_SET(p[0], &r);
			select(p[0] + 1, &r, NULL, NULL, NULL);
		}
	case PARK_SLEEP:
		for (;;)
			sleep(60);
	case PARK_POLL_NOFDS:
		for (;;)
			poll(NULL, 0, 60000);
	default:
		_exit(0);
	}
}

struct found_set {
	pid_t pids[64];
	int n;
	const pid_t *kids;   /* only these are looked into: the host's other loops come and go */
	int nkids;
	int asked_kthreadd, asked_self;
};

static int only_kids(const struct probe_sweep_proc *p, void *arg)
{
	struct found_set *f = arg;
	f->asked_kthreadd |= p->pid == 2;
	f->asked_self |= p->pid == getpid();
	for (int i = 0; i < f->nkids; i++)
		if (f->kids[i] == p->pid)
			return 1;
	return 0;
}

static int note_found(const struct probe_sweep_proc *p, pid_t tid, void *arg)
{
	struct found_set *f = arg;
	if (f->n < 64 && tid == p->pid)
		f->pids[f->n++] = p->pid;
	return 1;
}

static int in(const struct found_set *f, pid_t pid)
{
	for (int i = 0; i < f->n; i++)
		if (f->pids[i] == pid)
			return 1;
	return 0;
}

Test(discover, the_sweep_finds_event_waits_and_looks_less_at_the_rest)
{
	pid_t kids[PARK_N];
	for (int i = 0; i < PARK_N; i++)
		kids[i] = park((enum park)i);
	usleep(300000);
	struct probe_sweep *sw;
	cr_assert_eq(probe_sweep_new(&sw), 0);
	struct probe_sweep_ops ops = { .want = only_kids, .found = note_found };
	struct found_set f = { .n = 0, .kids = kids, .nkids = PARK_N };
	struct probe_sweep_counts c1, c2, c3;
	cr_assert_eq(probe_sweep_run(sw, &ops, &f, &c1), 0);
	cr_expect(in(&f, kids[PARK_EPOLL]), "epoll_wait is an event wait");
	cr_expect(in(&f, kids[PARK_POLL_FDS]), "poll with fds is an event wait");
	cr_expect(in(&f, kids[PARK_SELECT_FDS]), "select with fds is an event wait");
	cr_expect(!in(&f, kids[PARK_SLEEP]), "a sleep is not");
	cr_expect(!in(&f, kids[PARK_POLL_NOFDS]), "poll with no fds is a sleep");
	cr_expect(!f.asked_kthreadd, "kthreadd is a kernel thread: never looked at");
	cr_expect(!f.asked_self, "nor is this process");
	int found = f.n;
	/* the next sweeps report nothing again and read only what is due: the
	 * loops never, the two sleepers less and less often (backoff 1, 2, 4 ..,
	 * less up to half of it) */
	unsigned later = 0;
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(probe_sweep_run(sw, &ops, &f, &c3), 0);
		later += c3.reads;
	}
	cr_expect_eq(f.n, found, "a loop is reported once");
	cr_expect_leq(later, 10, "reads: %u at first, then %u over 8 sweeps (16 if the sleepers were read each time)",
		      c1.reads, later);
	cr_expect_eq(c3.loops, 3);
	/* a loop that exits is forgotten; its pid's next process starts afresh */
	kill(kids[PARK_EPOLL], SIGKILL);
	waitpid(kids[PARK_EPOLL], NULL, 0);
	cr_assert_eq(probe_sweep_run(sw, &ops, &f, &c2), 0);
	cr_expect_eq(c2.loops, c3.loops - 1);
	cr_log_info("sweep tables: %zu bytes for %u threads\n", probe_sweep_memory(sw), c3.threads);
	probe_sweep_delete(sw);
}

/* A loop on a CPU at the sweep's look is looked at once more a moment
 * later (probe_sweep_relook) and found in its poll then, not a sweep
 * later; one still on a CPU is not. */
Test(discover, a_loop_busy_at_its_look_is_found_at_the_second)
{
	volatile int *go = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq((void *)go, MAP_FAILED);
	*go = 0;
	pid_t kids[2];
	for (int i = 0; i < 2; i++) {
		kids[i] = tc_fork();
		if (kids[i] == 0) {
			int ep = epoll_create1(0);
			struct epoll_event ev;
			while (!(i == 0 && __atomic_load_n(go, __ATOMIC_ACQUIRE)))
				;   /* the second spins for good */
			epoll_wait(ep, &ev, 1, -1);
			_exit(0);
		}
	}
	usleep(100000);
	struct probe_sweep *sw;
	cr_assert_eq(probe_sweep_new(&sw), 0);
	struct probe_sweep_ops ops = { .want = only_kids, .found = note_found };
	struct found_set f = { .n = 0, .kids = kids, .nkids = 2 };
	struct probe_sweep_counts c;
	cr_assert_eq(probe_sweep_run(sw, &ops, &f, &c), 0);
	cr_expect_eq(f.n, 0, "both on a CPU at the sweep's look");
	__atomic_store_n(go, 1, __ATOMIC_RELEASE);
	usleep(100000);
	cr_expect_eq(probe_sweep_relook(sw, &ops, &f), 1, "the one now in its poll is found at the second look");
	cr_expect(in(&f, kids[0]) && !in(&f, kids[1]), "found: the first, not the spinner");
	cr_expect_eq(probe_sweep_relook(sw, &ops, &f), 0, "a sweep's second look is taken once");
	cr_assert_eq(probe_sweep_run(sw, &ops, &f, &c), 0);
	cr_expect_eq(c.loops, 1, "the sweep after keeps it");
	cr_expect_eq(f.n, 1, "and reports it once");
	probe_sweep_delete(sw);
	tc_kill_all(kids, 2);
	munmap((void *)go, sizeof(int));
}

/* A service's figures: list --by service, export's service.<name>.<row>, check -s --fleet. */
Test(discover, services_roll_up_in_every_view)
{
	int p = carbon_free_port();
	char a[16];
	snprintf(a, sizeof(a), "%d", p);
	/* a name of its own: the suite's other python3 servers come and go
	 * meanwhile, and a worker gone mid-check is exit 4 */
	char *py = script("srv.py", "import ctypes, selectors, socket, sys\n"
				    "ctypes.CDLL(None).prctl(15, b'svcroll', 0, 0, 0)\n"
				    "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
				    "sel = selectors.DefaultSelector(); sel.register(s, selectors.EVENT_READ)\n"
				    "while True:\n"
				    "    for k, _ in sel.select(0.01): k.fileobj.accept()[0].close()\n");
	char *argv[] = { "/usr/bin/python3", py, a, NULL };
	start(argv, p, NULL);
	free(py);

	/* 3 s: a thread the first sweep caught between two waits is looked at again a second later */
	char *text = NULL;
	int rc0 = ts_loopstat(&text, 20000, "list", "--json", "--duration", "3", "-s", "^svcroll$", NULL);
	cr_assert_eq(rc0, 0, "list exited %d: %s", rc0, text ? text : "");
	json_object *doc = json_tokener_parse(text);
	cr_assert(doc, "%s", text);
	free(text);
	json_object *svcs = tj_get(tj_get(doc, "fleet"), "services");
	cr_assert_eq(json_object_array_length(svcs), 1, "one service");
	json_object *sv = json_object_array_get_idx(svcs, 0);
	cr_expect_str_eq(json_object_get_string(tj_get(sv, "name")), "svcroll");
	cr_expect_geq(json_object_get_int(tj_get(sv, "workers")), 1);
	cr_expect_gt(json_object_get_double(tj_get(sv, "idle_pct_min")), 50.0);
	json_object_put(doc);

	/* 3 s, as the first list, side by side: a sweep that catches the loop
	 * between two waits looks again a second later (0.5 s missed it 1 run
	 * in 3; 1.5 s, one look more, 1 clean-clone run in 3 under the
	 * sanitizers, four suites at a time) */
	char *by[] = { (char *)ts_loopstat_bin(), "list", "--by", "service", "--duration", "3", "-s", "^svcroll$", NULL };
	char *ex[] = { (char *)ts_loopstat_bin(), "export", "--dry-run", "--duration", "3", "--host", "h", "-s",
		       "^svcroll$", NULL };
	char *const *const views[] = { by, ex };
	char *vout[2] = { NULL, NULL };
	int vrc[2];
	ts_run_all(2, views, vout, vrc, 20000);
	cr_expect_eq(vrc[0], 0);
	cr_expect(vout[0] && strstr(vout[0], "SERVICE") && strstr(vout[0], "\nsvcroll "), "%s", vout[0] ? vout[0] : "");
	cr_expect_eq(vrc[1], 0);
	cr_expect(vout[1] && strstr(vout[1], "loopstat.h.service.svcroll.workers "), "%s", vout[1] ? vout[1] : "");
	free(vout[0]);
	free(vout[1]);

	/* its one worker wakes from select() every 10 ms and goes straight
	 * back (a state that changes: samples that can decide): it idles, so
	 * the service's least idle worker passes 80 % and fails 50 % at most.
	 * 4 s, side by side: check's interval is over batches of seconds, and
	 * 2 s gave it one degree of freedom (t = 12.7: inconclusive whenever
	 * the two seconds differed at all). --wait-for-workers 1: without it
	 * check looks for 2 s, and beside four other suites both of its looks
	 * caught the loop between two waits once (ci39: exit 4). */
	char *pass[] = { (char *)ts_loopstat_bin(), "check", "--fleet", "--duration", "4", "--wait-for-workers", "1",
			 "-s", "^svcroll$", "idle_pct_min>=80", NULL };
	char *fail[] = { (char *)ts_loopstat_bin(), "check", "--fleet", "--duration", "4", "--wait-for-workers", "1",
			 "-s", "^svcroll$", "idle_pct_min<=50", NULL };
	char *const *const checks[] = { pass, fail };
	char *outs[2] = { NULL, NULL };
	int rcs[2];
	ts_run_all(2, checks, outs, rcs, 20000);
	cr_expect_eq(rcs[0], 0, "an idle service passes idle_pct_min>=80: exit %d: %s", rcs[0], outs[0] ? outs[0] : "");
	cr_expect_eq(rcs[1], 1, "an idle service fails idle_pct_min<=50: exit %d: %s", rcs[1], outs[1] ? outs[1] : "");
	free(outs[0]);
	free(outs[1]);
}

/* Loops that come and go while list runs (fork, a short epoll wait, exit;
 * their pids are soon reused): the run ends cleanly with a valid document. */
Test(discover, churn_of_short_lived_loops)
{
	pid_t churner = fork();
	cr_assert_geq(churner, 0);
	if (churner == 0) {
		for (;;) {
			for (int i = 0; i < 20; i++)
				if (fork() == 0) {
					int ep = epoll_create1(0);
					struct epoll_event out;
					epoll_wait(ep, &out, 1, 5 + i % 40);
					_exit(0);
				}
			while (waitpid(-1, NULL, 0) > 0)
				;
		}
	}
	servers[nservers++] = churner;
	for (int round = 0; round < 2; round++) {
		json_object *doc = list_json3("--all", "-r", "200");   /* churning loops are no servers */
		json_object *ws = tj_get(doc, "workers");
		for (size_t i = 0; i < json_object_array_length(ws); i++) {
			json_object *w = json_object_array_get_idx(ws, i);
			cr_expect_gt(json_object_get_int(tj_get(w, "pid")), 0);
		}
		json_object_put(doc);
	}
}
