/* record --ring: a stall in a recorded window writes one recording holding the ring before it; SIGUSR2, --cooldown, --max-bytes, a failed write. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collect/recording.h"
#include "profile/flight_dir.h"
#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("flight"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(flight, .init = setup, .fini = teardown, .timeout = 45);

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The loop's own stall: 300 ms on the CPU, once. */
__attribute__((noinline)) double flight_stall_once(double until);
__attribute__((noinline)) double flight_stall_once(double until)
{
	volatile double x = 1;
	while (now_s() < until)
		for (int i = 0; i < 1 << 14; i++)
			x = x * 1.0000001 + 1e-9;
	return x;
}

/* An epoll loop: 20 ms waits and a little work, one stall of stall_s after
 * stall_after_s, then the same work until killed. */
static pid_t spawn_loop(double stall_after_s, double stall_s)
{
	pid_t pid = tc_fork();
	if (pid)
		return pid;
	int ep = epoll_create1(0), p[2];
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || pipe(p) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0)
		_exit(1);
	double t0 = now_s();
	int stalled = 0;
	for (;;) {
		epoll_wait(ep, &ev, 1, 20);
		volatile double x = 1;
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001;
		if (!stalled && now_s() - t0 >= stall_after_s) {
			stalled = 1;
			flight_stall_once(now_s() + stall_s);
		}
	}
}

/* Runs record with argv, sends it SIGUSR2 after usr2_ms; its stdout in
 * out, its exit status returned (0..255, -1 when killed). */
static int run_with_usr2(const char *const argv[], int usr2_ms, char *out, size_t len)
{
	int fd;
	pid_t rec = tc_spawn_argv(argv, &fd);
	usleep((useconds_t)usr2_ms * 1000);
	kill(rec, SIGUSR2);
	int status;
	cr_assert_eq(waitpid(rec, &status, 0), rec);
	ssize_t got = read(fd, out, len - 1);
	out[got > 0 ? got : 0] = '\0';
	close(fd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The flight recordings in dir, names into names[] (up to max). */
static int recordings(char names[][256], int max)
{
	DIR *d = opendir(dir);
	cr_assert(d);
	int n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "flight-", 7) == 0 && l > 4 && strcmp(de->d_name + l - 4, ".rec") == 0 && n < max)
			snprintf(names[n++], 256, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

struct scan {
	uint64_t first_ns, last_ns;
	uint64_t stall_ns;       /* the stall's, with our function in its stack; 0: none */
	uint32_t stall_ms;
	long     events;
};

static int on_event(void *arg, const struct rec_event *ev)
{
	struct scan *s = arg;
	if (!s->events++ || ev->t_ns < s->first_ns)
		s->first_ns = ev->t_ns;
	if (ev->t_ns > s->last_ns)
		s->last_ns = ev->t_ns;
	if (ev->stall_ms && !s->stall_ns)
		for (int i = 0; i < ev->nframes; i++)
			if (strstr(ev->frames[i], "flight_stall_once")) {
				s->stall_ns = ev->t_ns;
				s->stall_ms = ev->stall_ms;
			}
	return 0;
}

static void read_recording(const char *name, struct rec_meta *rm, struct scan *s)
{
	char *path = ts_path_in(dir, name);
	FILE *f = fopen(path, "r");
	cr_assert(f, "open %s", path);
	long line = 0;
	memset(s, 0, sizeof(*s));
	int err = rec_read(f, rm, on_event, s, &line);
	fclose(f);
	cr_assert_eq(err, 0, "%s: line %ld: %d", path, line, err);
	cr_assert_eq(rm->cut, 0, "%s has its trailer", path);
	free(path);
}

/* A stall of 300 ms after stall_after_s under a ring of ring_s, recorded
 * for run_s: one recording, the ring's seconds before the stall in it,
 * and the stall's stack names the function. */
static void one_stall(int stall_after_s, int ring_s, int run_s)
{
	pid_t pid = spawn_loop(stall_after_s, 0.3);
	char p[16], ring[16], run[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	snprintf(ring, sizeof(ring), "%ds", ring_s);
	snprintf(run, sizeof(run), "%d", run_s);
	char *out = NULL;
	int rc = ts_loopstat(&out, (run_s + 20) * 1000, "record", "-p", p, "-r", "100", "--ring", ring, "--trigger",
			     "lag_max_ms>200", "--after", "2s", "--duration", run, "-o", dir, NULL);
	tc_kill(pid);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
	cr_assert(strstr(out, "bound "), "the ring's bound is printed: %s", out);
	char names[4][256];
	int n = recordings(names, 4);
	cr_assert_eq(n, 1, "exactly one recording: %d\n%s", n, out);
	cr_expect(strstr(names[0], "lag_max_msgt200") && strstr(names[0], p), "named by trigger and pid: %s", names[0]);
	struct rec_meta rm;
	struct scan s;
	read_recording(names[0], &rm, &s);
	cr_assert_eq(rm.ntriggers, 1, "one trigger record: %s", out);
	cr_expect_str_eq(rm.triggers[0].text, "lag_max_ms>200");
	cr_expect_eq(rm.triggers[0].pid, pid);
	cr_assert_neq(s.stall_ns, 0, "the stall, its stack naming flight_stall_once: %s", out);
	double before = (double)(s.stall_ns - s.first_ns) / 1e9;
	cr_expect_geq(before, (double)ring_s, "the ring's %d s before the stall: %.2f s", ring_s, before);
	cr_expect_geq((double)(s.last_ns - s.stall_ns) / 1e9, 1.5, "the --after seconds after it: %.2f s, from %.2f s "
		      "to %.2f s, the stall at %.2f s, the trigger at %.2f s\n%s", (double)(s.last_ns - s.stall_ns) / 1e9,
		      (double)s.first_ns / 1e9, (double)s.last_ns / 1e9, (double)s.stall_ns / 1e9,
		      (double)rm.triggers[0].t_ns / 1e9, out);
	/* caught as it passed --stall-ms (100 ms), not at its end */
	cr_expect_geq(s.stall_ms, 100, "a stall caught at %u ms", s.stall_ms);
	/* and report reads it as any recording */
	char *path = ts_path_in(dir, names[0]);
	char *rep = NULL;
	rc = ts_loopstat(&rep, 20000, "report", path, NULL);
	cr_expect_eq(rc, 0, "report: exit %d: %s", rc, rep);
	cr_expect(strstr(rep, "flight_stall_once"), "report names the function: %s", rep);
	cr_expect(strstr(rep, "triggers (flight recorder") && strstr(rep, "lag_max_ms>200  by "),
		  "report lists the trigger: %s", rep);
	free(rep);
	/* --around the trigger: 4 s of it, the stall in them */
	rc = ts_loopstat(&rep, 20000, "report", path, "--around", "trigger", "--span", "4s", NULL);
	cr_expect_eq(rc, 0, "report --around: exit %d: %s", rc, rep);
	double over = 0;
	const char *o = strstr(rep, " samples over ");
	cr_expect(o && sscanf(o, " samples over %lf s", &over) == 1 && over > 3 && over <= 4.01,
		  "a 4-s window: %s", rep);
	cr_expect(strstr(rep, "flight_stall_once"), "the stall is in the window: %s", rep);
	free(rep);
	free(path);
	free(out);
}

/* Stall after 6 s under a 5 s ring (make test's scale: the minute
 * runs in make check, below). */
Test(flight, one_stall_one_recording_with_the_ring_before_it)
{
	one_stall(6, 5, 10);
}

/* The issue's own: a 60-s ring, the stall after 62 s of work (make check). */
Test(flight, one_stall_under_a_minute_of_ring, .timeout = 120)
{
	const char *truth = getenv("LOOPSTAT_TRUTH");
	if (!truth || strcmp(truth, "full") != 0)
		cr_skip_test("the 60-s ring runs in make check (LOOPSTAT_TRUTH=full): 70 s");
	one_stall(62, 60, 70);
}

/* Stalls every 1.5 s under --cooldown 1m: one recording for the trigger;
 * SIGUSR2 later writes one more, and nothing else does. */
Test(flight, sigusr2_writes_one_and_cooldown_holds_back_the_next)
{
	pid_t burner = tc_spawn_burner(1.2, 0.3);
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)burner);
	const char *argv[] = { ts_loopstat_bin(), "record", "-p", p, "-r", "100", "--ring", "3s", "--trigger",
			       "lag_max_ms>200", "--after", "1s", "--cooldown", "1m", "--duration", "8", "-o", dir, NULL };
	char out[4096];
	int rc = run_with_usr2(argv, 5500, out, sizeof(out));
	tc_kill(burner);
	cr_assert_eq(rc, 0, "record's exit %d: %s", rc, out);
	char names[8][256];
	int n = recordings(names, 8);
	int trig = 0, usr2 = 0;
	for (int i = 0; i < n; i++) {
		trig += strstr(names[i], "lag_max_ms") != NULL;
		usr2 += strstr(names[i], "SIGUSR2") != NULL;
	}
	cr_expect_eq(trig, 1, "one recording for the trigger, the cooldown holding back the rest: %d of %d\n%s", trig, n,
		     out);
	cr_expect_eq(usr2, 1, "one for SIGUSR2: %d of %d\n%s", usr2, n, out);
	cr_expect_eq(n, 2, "%s", out);
	for (int i = 0; i < n; i++) {
		struct rec_meta rm;
		struct scan s;
		read_recording(names[i], &rm, &s);
		cr_expect_geq(rm.ntriggers, 1, "%s holds its trigger", names[i]);
		cr_expect_gt(s.events, 100, "%s holds the ring's events", names[i]);
	}
}

/* Options without --ring, a bad trigger, no directory: usage errors. */
Test(flight, usage_errors_exit_2)
{
	char *out = NULL;
	cr_expect_eq(ts_loopstat(&out, 5000, "record", "--trigger", "lag_max_ms>200", "-o", dir, NULL), 2, "%s", out);
	free(out);
	cr_expect_eq(ts_loopstat(&out, 5000, "record", "--ring", "10s", "--trigger", "nosuch>1", "-o", dir, NULL), 2,
		     "%s", out);
	free(out);
	cr_expect_eq(ts_loopstat(&out, 5000, "record", "--ring", "10s", "-o", "-", NULL), 2, "%s", out);
	free(out);
	cr_expect_eq(ts_loopstat(&out, 5000, "record", "--ring", "10s", "--ring-bytes", "12", "-o", dir, NULL), 2,
		     "%s", out);
	free(out);
	cr_expect_eq(ts_loopstat(&out, 5000, "report", "x.rec", "--around", "soon", NULL), 2, "%s", out);
	free(out);
	/* a recording without a trigger has nothing to be --around */
	char *plain = ts_path_in(dir, "plain.rec");
	FILE *f = fopen(plain, "w");
	cr_assert(f);
	fputs("loopstat-record 1\nm rate_hz 100\ns 1 1/1 x\ne 1000 1 1 0 1 232 3 0 0 0 0 0 1 0 0 0 0\n"
	      "m duration_s 1\n", f);
	fclose(f);
	cr_expect_eq(ts_loopstat(&out, 5000, "report", plain, "--around", "trigger", NULL), 4, "%s", out);
	free(out);
	free(plain);
}

static void make_file(const char *name, size_t bytes)
{
	char *p = ts_path_in(dir, name);
	FILE *f = fopen(p, "w");
	cr_assert(f, "%s", p);
	for (size_t i = 0; i < bytes; i++)
		fputc('x', f);
	fclose(f);
	free(p);
}

static int exists(const char *name)
{
	char *p = ts_path_in(dir, name);
	int ok = access(p, F_OK) == 0;
	free(p);
	return ok;
}

/* --max-bytes: after a recording, the oldest flight recordings go first
 * until the directory's hold at most SIZE; other files are not counted
 * nor touched, a link is never followed. */
Test(flight, max_bytes_removes_the_oldest_first)
{
	make_file("flight-20000101T000000Z-old1.rec", 10000);
	make_file("flight-20000102T000000Z-old2.rec", 10000);
	make_file("flight-20000103T000000Z-old3.rec", 10000);
	make_file("notes.txt", 50000);
	char *victim = ts_path_in(dir, "victim"), *link = ts_path_in(dir, "flight-19990101T000000Z-link.rec");
	make_file("victim", 100);
	cr_assert_eq(symlink(victim, link), 0);
	pid_t burner = tc_spawn_burner(0.5, 0.05);
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)burner);
	const char *argv[] = { ts_loopstat_bin(), "record", "-p", p, "-r", "100", "--ring", "2s", "--after", "0",
			       "--max-bytes", "40K", "--duration", "4", "-o", dir, NULL };
	char out[4096];
	int rc = run_with_usr2(argv, 2500, out, sizeof(out));
	tc_kill(burner);
	cr_assert_eq(rc, 0, "record's exit %d: %s", rc, out);
	char names[8][256];
	int n = recordings(names, 8), mine = -1;
	for (int i = 0; i < n; i++)
		if (strstr(names[i], "SIGUSR2"))
			mine = i;
	cr_assert_geq(mine, 0, "the new recording is kept");
	char *path = ts_path_in(dir, names[mine]);
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	free(path);
	/* the oldest first, as many as the cap needs */
	long total = st.st_size + 30000;
	int removed = 0;
	const char *old[] = { "flight-20000101T000000Z-old1.rec", "flight-20000102T000000Z-old2.rec",
			      "flight-20000103T000000Z-old3.rec" };
	for (int i = 0; i < 3 && total > 40 * 1024; i++, removed++) {
		cr_expect(!exists(old[i]), "%s removed (the recording: %ld bytes)", old[i], (long)st.st_size);
		total -= 10000;
	}
	for (int i = removed; i < 3; i++)
		cr_expect(exists(old[i]), "%s kept", old[i]);
	cr_expect_gt(removed, 0, "the cap removed something: the recording has %ld bytes", (long)st.st_size);
	cr_expect(exists("notes.txt") && exists("victim"), "other files untouched");
	free(victim);
	free(link);
}

/* A recording whose writing failed (a full disk) is removed, its temp
 * file too, and the recordings already there are untouched. */
Test(flight, a_failed_write_loses_the_new_recording_only)
{
	make_file("flight-20000101T000000Z-old.rec", 1000);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	cr_assert_geq(dfd, 0);
	struct flight_file ff;
	struct rec_meta rm = { .rate_hz = 100 };
	char err[512], name[NAME_MAX + 1];
	flight_file_name(dfd, 1e9, "lag_max_ms>200", 42, name, sizeof(name));
	cr_expect_str_eq(name, "flight-20010909T014640Z-lag_max_msgt200-pid42.rec");
	cr_assert_eq(flight_file_open(&ff, dfd, name, &rm, err, sizeof(err)), 0, "%s", err);
	struct rec_event ev = { .t_ns = 1, .pid = 1, .tid = 1, .cls = PROBE_POLL, .nr = -1, .fd = -1, .thread = "1/1 x" };
	cr_assert_eq(rec_write(ff.w, &ev), 0);
	int64_t bytes;
	cr_expect_eq(flight_file_close(&ff, dfd, -ENOSPC, 1, &bytes, err, sizeof(err)), -ENOSPC);
	cr_expect(strstr(err, "No space left"), "%s", err);
	cr_expect(!exists(name), "the new recording is lost");
	DIR *d = opendir(dir);
	int others = 0;
	for (struct dirent *de; (de = readdir(d));)
		others += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");   /* hidden temp files too */
	closedir(d);
	cr_expect_eq(others, 1, "only the old recording is left, no temp file");
	cr_expect(exists("flight-20000101T000000Z-old.rec"));
	close(dfd);
}
