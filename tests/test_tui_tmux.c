/* The real `loopstat top` under tmux against real workers: keys, resize, quit, signals, terminal restore, and --replay of a recording. */
#include <criterion/criterion.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_shm.h"
#include "collect/recording.h"
#include "support/support.h"

#define WAIT_MS 15000   /* ASan builds start slowly; every wait polls and stops early */
#define MAX_WORKERS 4

static char *dir;
static char sock[64];
static pid_t workers[MAX_WORKERS];
static int nworkers;
static int tmux_started;   /* kill-server complains when there is none */

static void setup(void)
{
	dir = ts_tmpdir("tui");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
	snprintf(sock, sizeof(sock), "loopstat-test-%d", (int)getpid());
	nworkers = 0;
}

/* Runs tmux with our private socket; NULL-terminated arguments. */
static int tmux_out(char **out, ...)
{
	char *argv[32] = { "/usr/bin/tmux", "-L", sock, "-f", "/dev/null" };
	int n = 5;
	va_list ap;
	va_start(ap, out);
	for (char *a; (a = va_arg(ap, char *)) && n < 31;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return ts_run(argv, out, 5000);
}

#define tmux(...) tmux_out(NULL, __VA_ARGS__, NULL)

static void teardown(void)
{
	if (tmux_started)
		tmux("kill-server");
	for (int i = 0; i < nworkers; i++) {
		kill(workers[i], SIGTERM);
		waitpid(workers[i], NULL, 0);
	}
	ts_rmtree_free(dir);
}

TestSuite(tui_tmux, .init = setup, .fini = teardown, .timeout = 90);

/* build/examples/counters next to the loopstat under test */
static const char *counters_bin(void)
{
	static char path[4096];
	char bin[4096];
	snprintf(bin, sizeof(bin), "%s", ts_loopstat_bin());
	snprintf(path, sizeof(path), "%s/examples/counters", dirname(bin));
	return path;
}

/* Workers stay mostly idle: the dashboard's text does not depend on the
 * load, and timing-sensitive suites may run on the same cores. */
static pid_t start_worker(int busy_pct)
{
	char busy[16];
	snprintf(busy, sizeof(busy), "%d", busy_pct);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execl(counters_bin(), "counters", "-b", busy, "-s", "80", (char *)NULL);
		_exit(127);
	}
	workers[nworkers++] = pid;
	return pid;
}

static char *capture(void)
{
	char *out = NULL;
	tmux_out(&out, "capture-pane", "-p", "-t", "t", NULL);
	return out ? out : strdup("");
}

/* The pane with its attributes as escape sequences. */
static char *capture_escapes(void)
{
	char *out = NULL;
	tmux_out(&out, "capture-pane", "-p", "-e", "-t", "t", NULL);
	return out ? out : strdup("");
}

/* The captured line (with escapes) that holds s, or NULL; caller frees. */
static char *line_with(const char *s)
{
	char *scr = capture_escapes(), *hit = strstr(scr, s), *line = NULL;
	if (hit) {
		char *b = hit, *e = hit + strcspn(hit, "\n");
		while (b > scr && b[-1] != '\n')
			b--;
		line = strndup(b, (size_t)(e - b));
	}
	free(scr);
	return line;
}

/* An SGR sequence setting a foreground colour (30..37, or 38;...). */
static int has_colour(const char *s)
{
	for (const char *p = s; (p = strstr(p, "\033[")); p++) {
		const char *q = p + 2;
		while (*q && *q != 'm') {
			if (q[0] == '3' && q[1] >= '0' && q[1] <= '8' && (q == p + 2 || q[-1] == ';'))
				return 1;
			q++;
		}
	}
	return 0;
}

static char *display(const char *fmt)
{
	char *out = NULL;
	tmux_out(&out, "display-message", "-p", "-t", "t", fmt, NULL);
	if (out)
		out[strcspn(out, "\n")] = '\0';
	return out ? out : strdup("");
}

/* Polls the pane until it shows (or, with absent, stops showing) s. */
static int wait_text(const char *s, int absent)
{
	long long deadline = ts_now_ms() + WAIT_MS;
	while (ts_now_ms() < deadline) {
		char *scr = capture();
		int found = strstr(scr, s) != NULL;
		free(scr);
		if (found != absent)
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

#define assert_shows(s) do { \
		int ok_ = wait_text(s, 0); \
		char *scr_ = capture(); \
		cr_assert(ok_, "pane never showed '%s':\n%s", s, scr_); \
		free(scr_); \
	} while (0)

#define assert_hides(s) do { \
		int ok_ = wait_text(s, 1); \
		char *scr_ = capture(); \
		cr_assert(ok_, "pane still shows '%s':\n%s", s, scr_); \
		free(scr_); \
	} while (0)

/* Starts `loopstat ARGS` in a detached session of cols x lines, from a
 * bash script that prints its exit status and stays: tmux does not always
 * reap a pane's process in time to report pane_dead_status, and bash lets
 * Ctrl-C reach loopstat without dying itself when loopstat handles it. */
static void start_top(int cols, int lines, const char *args)
{
	char script[8192], path[4096], cmd[4200], x[16], y[16];
	snprintf(path, sizeof(path), "%s/run.sh", dir);
	snprintf(script, sizeof(script),
		 "export LOOPSTAT_SHM_DIR='%s' LANG=C.UTF-8 TERM=screen TZ=UTC\n"
		 "'%s' %s\n"
		 "echo loopstat-exit=$?\n"
		 "exec sleep 600\n", dir, ts_loopstat_bin(), args);
	cr_assert_eq(ts_write_file(path, script, strlen(script)), 0);
	snprintf(cmd, sizeof(cmd), "exec /bin/bash '%s'", path);
	snprintf(x, sizeof(x), "%d", cols);
	snprintf(y, sizeof(y), "%d", lines);
	tmux_started = 1;
	/* a server just killed may still hold the socket for a moment */
	int rc = -1;
	for (int i = 0; i < 50 && rc != 0; i++) {
		rc = tmux("new-session", "-d", "-s", "t", "-x", x, "-y", y, cmd);
		if (rc != 0)
			usleep(100000);
	}
	cr_assert_eq(rc, 0, "tmux new-session");
}

static void keys(const char *k)
{
	cr_assert_eq(tmux("send-keys", "-t", "t", k), 0, "send-keys %s", k);
}

/* loopstat's pid: the only child of the pane's bash */
static pid_t top_pid(void)
{
	char *pane = display("#{pane_pid}"), path[128];
	snprintf(path, sizeof(path), "/proc/%s/task/%s/children", pane, pane);
	free(pane);
	FILE *f = fopen(path, "r");
	cr_assert(f, "%s", path);
	int pid = 0;
	cr_assert_eq(fscanf(f, "%d", &pid), 1, "no child in %s", path);
	fclose(f);
	return pid;
}

/* Waits until loopstat has exited; returns its exit status. */
static int wait_exit(void)
{
	long long deadline = ts_now_ms() + WAIT_MS;
	while (ts_now_ms() < deadline) {
		char *scr = capture(), *e = strstr(scr, "loopstat-exit=");
		int st = e ? atoi(e + strlen("loopstat-exit=")) : -1;
		free(scr);
		if (e)
			return st;
		usleep(100 * 1000);
	}
	cr_assert_fail("loopstat top did not exit");
	return -1;
}

/* " PID ": a pid as a table cell, not part of a longer number */
static char *pid_text(pid_t pid)
{
	static char buf[2][16];
	static int i;
	i ^= 1;
	snprintf(buf[i], sizeof(buf[i]), " %d ", (int)pid);
	return buf[i];
}

/* Polls until the row of pid `first` is shown above the row of `second`. */
static int wait_order(pid_t first, pid_t second)
{
	long long deadline = ts_now_ms() + WAIT_MS;
	while (ts_now_ms() < deadline) {
		char *scr = capture(), *x = strstr(scr, pid_text(first)), *y = strstr(scr, pid_text(second));
		int ok = x && y && x < y;
		free(scr);
		if (ok)
			return 1;
		usleep(100 * 1000);
	}
	return 0;
}

static void assert_terminal_restored(void)
{
	char *alt = display("#{alternate_on}");
	cr_assert_str_eq(alt, "0", "still on the alternate screen");
	free(alt);
	char *scr = capture();
	cr_assert_null(strstr(scr, "IDLE%"), "dashboard left on the screen:\n%s", scr);
	free(scr);
}


Test(tui_tmux, lists_real_workers_and_quits_cleanly)
{
	pid_t a = start_worker(10), b = start_worker(20);
	start_top(112, 30, "top");   /* every column, TOP-BLOCKER's title whole */
	assert_shows("IDLE%");
	assert_shows(pid_text(a));
	assert_shows(pid_text(b));
	assert_shows("TOP-BLOCKER");
	assert_shows("workers 2");
	assert_shows("counters");
	char *alt = display("#{alternate_on}");
	cr_assert_str_eq(alt, "1", "runs on the alternate screen");
	free(alt);
	char *scr = capture_escapes();
	cr_assert(has_colour(scr), "idle figures are coloured:\n%s", scr);
	free(scr);
	keys("q");
	cr_assert_eq(wait_exit(), 0);
	assert_terminal_restored();
}

Test(tui_tmux, sort_filter_help_and_detail_keys)
{
	pid_t a = start_worker(10), b = start_worker(20);
	start_top(100, 30, "top");
	assert_shows(pid_text(a));
	assert_shows(pid_text(b));

	assert_shows("sort IDLE%");
	keys("s");
	assert_shows("sort CPU%");
	keys("<");
	keys("<");
	assert_shows("sort BACKEND");
	keys("<");
	keys("<");
	keys("<");
	assert_shows("sort PID");
	cr_assert(a < b, "pids in start order");   /* no wrap-around in a test's lifetime */
	cr_assert(wait_order(a, b), "PID ascending puts %d above %d", (int)a, (int)b);
	keys("r");
	assert_shows("sort PID (reversed)");
	cr_assert(wait_order(b, a), "reversed puts %d above %d", (int)b, (int)a);

	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)a);
	keys("/");
	cr_assert_eq(tmux("send-keys", "-t", "t", "-l", pid), 0);
	keys("Enter");
	assert_shows("filter \"");
	assert_hides(pid_text(b));
	assert_shows(pid_text(a));
	keys("Escape");
	assert_shows(pid_text(b));

	keys("?");
	assert_shows("show or close this help");
	assert_shows("filter by name, tag or pid");
	keys("q");
	assert_hides("show or close this help");
	assert_shows(pid_text(b));

	keys("Home");
	keys("Enter");
	assert_shows("worker pid");
	assert_shows("Where the time goes");
	assert_shows("blocked");
	assert_shows("ops/s");
	keys("Escape");
	assert_hides("Where the time goes");
	assert_shows("IDLE%");

	keys("q");
	cr_assert_eq(wait_exit(), 0);
	assert_terminal_restored();
}

Test(tui_tmux, works_at_80x24_and_survives_resizes)
{
	pid_t a = start_worker(10);
	start_top(80, 24, "--no-color")   /* no command: top, on a terminal */;
	assert_shows(pid_text(a));
	assert_shows("STALL");
	char *scr = capture();
	cr_assert_null(strstr(scr, "TOP-BLOCKER"), "no room for TOP-BLOCKER at 80x24:\n%s", scr);
	free(scr);
	scr = capture_escapes();
	cr_assert_not(has_colour(scr), "--no-color:\n%s", scr);
	free(scr);

	cr_assert_eq(tmux("resize-window", "-t", "t", "-x", "130", "-y", "35"), 0);
	assert_shows("TOP-BLOCKER");
	cr_assert_eq(tmux("resize-window", "-t", "t", "-x", "50", "-y", "12"), 0);
	assert_hides("TOP-BLOCKER");
	assert_shows(pid_text(a));
	cr_assert_eq(tmux("resize-window", "-t", "t", "-x", "20", "-y", "5"), 0);
	assert_hides("STALL");
	cr_assert_eq(tmux("resize-window", "-t", "t", "-x", "80", "-y", "24"), 0);
	assert_shows("STALL");
	assert_shows(pid_text(a));
	keys("q");
	cr_assert_eq(wait_exit(), 0);
	assert_terminal_restored();
}

Test(tui_tmux, pause_rate_and_delay_keys_show_in_the_header)
{
	start_worker(10);
	start_top(100, 30, "top -r 100 -d 2");
	assert_shows("rate 100 Hz");
	assert_shows("refresh 2 s");
	keys("+");
	assert_shows("rate 150 Hz");
	keys("-");
	keys("-");
	assert_shows("rate 67 Hz");
	keys("d");
	assert_shows("refresh 5 s");
	keys("Space");
	assert_shows("PAUSED");
	keys("Space");
	assert_hides("PAUSED");
	keys("q");
	cr_assert_eq(wait_exit(), 0);
}

Test(tui_tmux, sigterm_sigint_and_sighup_restore_the_terminal)
{
	start_worker(10);
	start_top(100, 30, "top");
	assert_shows("IDLE%");
	cr_assert_eq(kill(top_pid(), SIGTERM), 0);
	cr_assert_eq(wait_exit(), 128 + SIGTERM);
	assert_terminal_restored();

	tmux("kill-server");
	start_top(100, 30, "top");
	assert_shows("IDLE%");
	keys("C-c");
	cr_assert_eq(wait_exit(), 128 + SIGINT);
	assert_terminal_restored();

	/* a hung-up terminal must end it too, not leave it spinning on EOF */
	tmux("kill-server");
	start_top(100, 30, "top");
	assert_shows("IDLE%");
	cr_assert_eq(kill(top_pid(), SIGHUP), 0);
	cr_assert_eq(wait_exit(), 128 + SIGHUP);
	assert_terminal_restored();
}

/* Whether an SGR sequence in line sets dim (parameter 2), alone or
 * combined with others ("\033[2m", "\033[2;32m", "\033[32;2m"). */
static int has_dim(const char *line)
{
	for (const char *p = line; (p = strstr(p, "\033[")); ) {
		p += 2;
		for (;;) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end != p && v == 2 && (*end == ';' || *end == 'm'))
				return 1;
			if (*end != ';')
				break;
			p = end + 1;
		}
	}
	return 0;
}

Test(tui_tmux, workers_appear_and_exited_ones_dim_then_drop)
{
	pid_t a = start_worker(10);
	start_top(100, 30, "top");
	assert_shows(pid_text(a));
	assert_shows("workers 1");
	pid_t b = start_worker(10);
	assert_shows(pid_text(b));
	assert_shows("workers 2");

	cr_assert_eq(kill(a, SIGTERM), 0);
	cr_assert_eq(waitpid(a, NULL, 0), a);
	workers[0] = b;   /* teardown must not wait for a again */
	nworkers = 1;
	long long deadline = ts_now_ms() + WAIT_MS;
	int dimmed = 0;
	while (!dimmed && ts_now_ms() < deadline) {
		char *l = line_with(pid_text(a));
		dimmed = l && has_dim(l);
		free(l);
		usleep(100 * 1000);
	}
	char *scr = capture_escapes();
	cr_assert(dimmed, "exited worker %d never shown dim:\n%s", (int)a, scr);
	free(scr);
	assert_hides(pid_text(a));
	assert_shows(pid_text(b));
	keys("q");
	cr_assert_eq(wait_exit(), 0);
}

Test(tui_tmux, threads_key_lists_threads_that_never_poll)
{
	/* a process asleep in nanosleep is sampled (-p) but is no event-loop worker */
	pid_t sleeper = fork();
	cr_assert_geq(sleeper, 0);
	if (sleeper == 0) {
		execl("/bin/sleep", "sleep", "80", (char *)NULL);
		_exit(127);
	}
	workers[nworkers++] = sleeper;
	char args[64];
	snprintf(args, sizeof(args), "top -p %d", (int)sleeper);
	start_top(100, 30, args);
	assert_shows("threads: event-loop workers");
	assert_shows("no event-loop workers found");
	keys("t");
	assert_shows("threads: all");
	assert_shows(pid_text(sleeper));
	assert_shows("sleep");
	keys("t");
	assert_shows("threads: event-loop workers");
	assert_hides(pid_text(sleeper));
	keys("q");
	cr_assert_eq(wait_exit(), 0);
}

Test(tui_tmux, services_key_groups_the_table_by_service)
{
	/* a plain poll loop (-p names it): its service is its process name */
	pid_t loop = fork();
	cr_assert_geq(loop, 0);
	if (loop == 0) {
		execl("/usr/bin/python3", "python3", "-c",
		      "import select, os; r, w = os.pipe(); select.select([r], [], [], 80)", (char *)NULL);
		_exit(127);
	}
	workers[nworkers++] = loop;
	char args[64];
	snprintf(args, sizeof(args), "top -p %d", (int)loop);
	start_top(120, 30, args);
	assert_shows(pid_text(loop));
	keys("S");
	assert_shows("SERVICE");
	assert_shows("python3");
	assert_shows("mean_idle_pct");
	assert_hides(pid_text(loop));
	keys("S");
	assert_shows(pid_text(loop));
	keys("q");
	cr_assert_eq(wait_exit(), 0);
}

Test(tui_tmux, top_without_a_terminal_fails_with_a_message)
{
	char *argv[] = { (char *)ts_loopstat_bin(), "top", NULL };
	char *out = NULL;
	int rc = ts_run(argv, &out, 10000);
	cr_assert_eq(rc, 1, "stdout is a pipe here: exit %d, %s", rc, out);
	free(out);
	char *bad[] = { (char *)ts_loopstat_bin(), "top", "-d", "0", NULL };
	cr_assert_eq(ts_run(bad, NULL, 10000), 2, "a zero delay is a usage error");
}

/* An uninstrumented loop that waits 20 ms in epoll_wait, then 20 ms blocked
 * in read() on a timerfd: half idle, half blocked on a known fd. */
static pid_t start_blocking_loop(void)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int ep = epoll_create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, 0);
		struct itimerspec its = { .it_value = { 0, 20 * 1000 * 1000 } };
		struct epoll_event ev;
		uint64_t ticks;
		if (ep < 0 || tfd < 0)
			_exit(1);
		for (int i = 0; i < 4000; i++) {
			epoll_wait(ep, &ev, 1, 20);
			timerfd_settime(tfd, 0, &its, NULL);
			if (read(tfd, &ticks, sizeof(ticks)) < 0)
				_exit(1);
		}
		_exit(0);
	}
	workers[nworkers++] = pid;
	return pid;
}

Test(tui_tmux, top_blocker_and_detail_name_the_syscall_and_fd)
{
	pid_t loop = start_blocking_loop();
	char args[64];
	snprintf(args, sizeof(args), "top -p %d", (int)loop);
	start_top(138, 30, args);   /* the blocker's 35 characters beside LAG99 and LIMIT */
	assert_shows(pid_text(loop));
	assert_shows("TOP-BLOCKER");
	assert_shows("timerfd");
	char *l = line_with(pid_text(loop));
	cr_assert(l && strstr(l, "read "), "the row names read():\n%s", l ? l : "(none)");
	free(l);
	keys("Enter");
	assert_shows("Blocked in");
	assert_shows("not instrumented");
	char *scr = capture();
	const char *b = strstr(scr, "Blocked in");
	cr_assert(b && strstr(b, "read") && strstr(b, "fd ") && strstr(b, "timerfd"), "%s", scr);
	free(scr);
	keys("q");
	keys("q");
	cr_assert_eq(wait_exit(), 0);
}

/* top --replay: a recording plays in the same dashboard, detail breakdown and service grouping included. */
Test(tui_tmux, replays_a_recording)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/run.rec", dir);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	struct rec_meta meta = { .rate_hz = 1000 };
	struct rec_writer *w = rec_writer_new(f, &meta);
	const char *frames[] = { "libc.so.6`read", "w`wait_for_pipe" };
	for (int i = 0; i < 20000; i++) {   /* 20 s: still playing while the test looks */
		struct rec_event ev = { .t_ns = 1000000000ull + (uint64_t)i * 1000000, .pid = 4242, .tid = 4243,
					    .instrumented = 1, .thread = "4242/4243 replayed", .cls = PROBE_POLL, .nr = 232,
					    .fd = 3, .target = "[idle] epoll_wait fd 3" };
		if (i % 10 < 5)
			ev = (struct rec_event){ .t_ns = ev.t_ns, .pid = 4242, .tid = 4243, .instrumented = 1,
						     .thread = ev.thread, .cls = PROBE_BLOCKED, .nr = 0, .fd = 6,
						     .syscall = "read", .target = "fd 6 pipe:[77]", .fiber = "reader",
						     .frames = frames, .nframes = 2, .sp = 0x7000, .pc = 0x1234 };
		ev.service = "replayed.service";   /* recorded: S groups by it, not by the name */
		cr_assert_eq(rec_write(w, &ev), 0);
	}
	cr_assert_eq(rec_writer_end(w, 20), 0);
	cr_assert_eq(fclose(f), 0);
	char args[4200];
	snprintf(args, sizeof(args), "top --replay '%s' -d 0.5", path);
	start_top(122, 30, args);   /* room for the blocker's 23 characters beside LAG99 and LIMIT */
	assert_shows("replayed");
	assert_shows(pid_text(4242));
	assert_shows("read 50% fd 6 pipe:[77]");
	keys("Enter");
	assert_shows("Since start");
	assert_shows("reader");
	keys("q");
	keys("S");
	assert_shows("replayed.service");
	keys("q");
	cr_assert_eq(wait_exit(), 0);
	assert_terminal_restored();
}

/* A replay that reaches its end says so and its clock stops at the
 * recording's last second; one cut short (no trailer, a partial last
 * line) plays its complete records and says so once the screen is back. */
Test(tui_tmux, replay_end_is_marked_and_a_cut_recording_plays)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/cut.rec", dir);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	struct rec_meta meta = { .rate_hz = 1000, .start_unix = 1700000000 };   /* 22:13:20 UTC */
	struct rec_writer *w = rec_writer_new(f, &meta);
	for (int i = 0; i < 2000; i++) {   /* 2 s */
		struct rec_event ev = { .t_ns = (uint64_t)i * 1000000, .pid = 4242, .tid = 4243, .instrumented = 0,
					.thread = "4242/4243 cutshort", .cls = PROBE_POLL, .nr = 232, .fd = 3,
					.target = "[idle] epoll_wait fd 3" };
		cr_assert_eq(rec_write(w, &ev), 0);
	}
	cr_assert_eq(fflush(f), 0);
	fputs("e 2000000000 4242 42", f);   /* a record cut mid-write, and no trailer */
	cr_assert_eq(fclose(f), 0);
	char args[4200];
	snprintf(args, sizeof(args), "top --replay '%s' -d 0.5", path);
	start_top(110, 30, args);
	assert_shows("cutshort");
	assert_shows("REPLAY ENDED");
	assert_shows("22:13:21");   /* the recording's clock, stopped at its last sample */
	sleep(2);
	assert_shows("22:13:21");
	keys("q");
	cr_assert_eq(wait_exit(), 0);
	assert_shows("was cut short");
}
