/* The bpf source on real processes: idle, busy spans, run-queue wait, stalls and off-CPU time against the loops' own clocks and schedstat. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_bpf.h"
#include "support/children.h"
#include "support/support.h"

TestSuite(bpf, .timeout = 60);

static struct probe_bpf *open_or_skip(void)
{
	char why[256];
	struct probe_bpf *b = NULL;
	int err = probe_bpf_open(&b, why, sizeof(why));
	if (err < 0)
		cr_skip_test("bpf unavailable: %s", why);
	return b;
}

/* The thread tid's figures (its process watched); fails if absent. */
static void read_tid(struct probe_bpf *b, pid_t tgid, pid_t tid, struct probe_bpf_thread *out)
{
	static struct probe_bpf_thread t[64];
	int n = probe_bpf_read(b, tgid, t, 64);
	cr_assert_geq(n, 0, "probe_bpf_read: %s", strerror(-n));
	for (int i = 0; i < n; i++)
		if (t[i].tid == tid) {
			*out = t[i];
			return;
		}
	cr_assert_fail("thread %d of %d not in the kernel's figures (%d threads)", (int)tid, (int)tgid, n);
}

static double idle_pct(const struct probe_bpf_thread *a, const struct probe_bpf_thread *b)
{
	return 100.0 * (double)(b->poll_ns - a->poll_ns) / (double)(b->now_ns - a->now_ns);
}

static pid_t fork_child(void (*body)(void *), void *arg)
{
	pid_t pid = tc_fork();
	if (pid == 0) {
		body(arg);
		_exit(0);
	}
	return pid;
}

static void parked(void *arg)
{
	(void)arg;
	int ep = epoll_create1(0);
	struct epoll_event ev;
	for (;;)
		epoll_wait(ep, &ev, 1, -1);
}

/* Parked in epoll_wait since before the programs attached: seeded from /proc, idle ≈ 100. */
Test(bpf, parked_loop_idle_100)
{
	pid_t pid = fork_child(parked, NULL);
	usleep(200 * 1000);
	struct probe_bpf *b = open_or_skip();
	cr_assert_eq(probe_bpf_watch(b, pid), 0);
	struct probe_bpf_thread t0, t1;
	read_tid(b, pid, pid, &t0);
	usleep(1000 * 1000);
	read_tid(b, pid, pid, &t1);
	tc_kill(pid);
	cr_expect_eq(t1.loop, PROBE_BPF_LOOP_EPOLL, "loop kind %d", t1.loop);
	cr_expect_geq(idle_pct(&t0, &t1), 99.0, "idle %.2f", idle_pct(&t0, &t1));
	cr_expect_leq(idle_pct(&t0, &t1), 100.01, "idle %.2f", idle_pct(&t0, &t1));
	probe_bpf_close(b);
}

/* Reads fd to its end (at most len - 1 bytes, NUL-terminated), closes it. */
static void slurp(int fd, char *buf, size_t len)
{
	size_t got = 0;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	while (got < len - 1 && poll(&pf, 1, 10000) == 1) {
		ssize_t r = read(fd, buf + got, len - 1 - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	close(fd);
}

/* loop_truth CASE for 4 s with 30 % of each period in a synchronous wait
 * and 20 % working, watched from its exec: the kernel's time in its loop
 * poll over the loop's own wall time, against the loop's own idle, within
 * 0.5 points; the synchronous wait, when it is a poll-family wait on fds
 * (sync_on_fds), is another's. */
static void truth_case(const char *kase, int sync_on_fds)
{
	struct probe_bpf *b = open_or_skip();
	int out;
	const char *args[] = { "--case", kase, "--block", "0.3", "--work", "0.2", "--seconds", "4", NULL };
	pid_t pid = tc_spawn_example("loop_truth", args, &out);
	cr_assert_eq(probe_bpf_watch(b, pid), 0);
	char text[1024];
	slurp(out, text, sizeof(text));
	waitpid(pid, NULL, 0);
	double self_idle, self_blocked, wall;
	const char *l = strstr(text, "self idle_pct ");
	cr_assert(l && sscanf(l, "self idle_pct %lf blocked_pct %lf wall_s %lf", &self_idle, &self_blocked, &wall) == 3,
		  "%s", text);
	struct probe_bpf_thread t;
	read_tid(b, pid, pid, &t);
	double idle = 100.0 * (double)t.poll_ns / (wall * 1e9);
	cr_expect(fabs(idle - self_idle) <= 0.5, "%s: bpf idle %.2f, the loop's own %.2f (loop fd %d)", kase, idle,
		  self_idle, t.loop_fd);
	cr_expect_eq(t.loop, PROBE_BPF_LOOP_EPOLL);
	if (sync_on_fds)
		cr_expect_gt(t.other_wait_ns, 0.25 * wall * 1e9,
			     "%s: the synchronous wait (30 %%) is not the loop's: %.2f s", kase, t.other_wait_ns / 1e9);
	probe_bpf_close(b);
}

Test(bpf, truth_sync_poll_idle) { truth_case("sync_poll", 1); }
Test(bpf, truth_nested_idle) { truth_case("nested", 1); }
/* select() on the epoll fd, then epoll_wait(0): the select is the loop's
 * wait (the kernel reads the set for the epoll fd); the sync wait is a
 * select on no fds, a sleep */
Test(bpf, truth_em_select_idle) { truth_case("em_select", 0); }

/* The child's own "spans n N p50 X p99 Y max Z" line (ms), once it ended. */
static void read_truth(int fd, unsigned long *n, double *p50, double *p99, double *max)
{
	char buf[512] = "";
	size_t len = 0;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	while (len < sizeof(buf) - 1 && poll(&pf, 1, 10000) == 1) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	const char *l = strstr(buf, "spans n ");
	cr_assert(l && sscanf(l, "spans n %lu p50 %lf p99 %lf max %lf", n, p50, p99, max) == 4, "%s", buf);
}

/* 1-ms spans with one of 40 ms in 50, watched from its exec to its end:
 * the kernel's histogram against the loop's own measure of the same spans
 * (on a loaded machine a 40-ms spin may take longer; the loop's clock is
 * the truth): p50 within 20 %, p99 and max within 10 %. */
Test(bpf, spans_p50_p99_max)
{
	struct probe_bpf *b = open_or_skip();
	int out;
	const char *args[] = { "--case", "nested", "--spans", "1x49,40x1", "--idle-ms", "20", "--seconds", "4", NULL };
	pid_t pid = tc_spawn_example("loop_truth", args, &out);
	cr_assert_eq(probe_bpf_watch(b, pid), 0);
	unsigned long tn;
	double tp50, tp99, tmax;
	read_truth(out, &tn, &tp50, &tp99, &tmax);
	waitpid(pid, NULL, 0);
	close(out);
	struct probe_bpf_thread t;
	read_tid(b, pid, pid, &t);
	double p50 = probe_bpf_quantile(t.hist, 0.50, t.span_max_ns, NULL, NULL) / 1e6;
	double p99 = probe_bpf_quantile(t.hist, 0.99, t.span_max_ns, NULL, NULL) / 1e6;
	double max = probe_bpf_quantile(t.hist, 1.0, t.span_max_ns, NULL, NULL) / 1e6;
	cr_expect(t.spans + 1 >= tn && t.spans <= tn + 1, "%lu spans, the loop's own %lu", (unsigned long)t.spans, tn);
	cr_expect(fabs(p50 - tp50) <= 0.2 * tp50, "p50 %.3f ms, the loop's own %.3f", p50, tp50);
	cr_expect(fabs(p99 - tp99) <= 0.1 * tp99, "p99 %.3f ms, the loop's own %.3f", p99, tp99);
	cr_expect(fabs(max - tmax) <= 0.1 * tmax, "max %.3f ms, the loop's own %.3f", max, tmax);
	cr_expect(fabs(tp50 - 1) <= 0.2 && tp99 >= 36, "the loop ran its spans: p50 %.3f p99 %.3f", tp50, tp99);
	probe_bpf_close(b);
}

static void pin_cpu0(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void hog(void *arg)
{
	(void)arg;
	pin_cpu0();
	for (volatile unsigned long i = 0;; i++)
		;
}

/* wakes every ms from epoll_wait and works 1 ms */
static void ticker(void *arg)
{
	(void)arg;
	pin_cpu0();
	int ep = epoll_create1(0);
	struct epoll_event ev;
	for (;;) {
		epoll_wait(ep, &ev, 1, 1);
		uint64_t until = ts_mono_ns() + 1000000;
		while (ts_mono_ns() < until)
			;
	}
}

static uint64_t run_delay_ns(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	char *s = ts_read_file(path);
	cr_assert(s, "%s", path);
	unsigned long long run, delay;
	cr_assert_eq(sscanf(s, "%llu %llu", &run, &delay), 2, "%s", s);
	free(s);
	return delay;
}

/* A loop sharing CPU 0 with a hog waits for it: the kernel's run-queue
 * wait is schedstat's run_delay within 10 %, and at least 10 % of the time. */
Test(bpf, runqueue_wait_with_hog)
{
	struct probe_bpf *b = open_or_skip();
	pid_t h = fork_child(hog, NULL), w = fork_child(ticker, NULL);
	usleep(200 * 1000);
	cr_assert_eq(probe_bpf_watch(b, w), 0);
	usleep(100 * 1000);
	struct probe_bpf_thread t0, t1;
	uint64_t d0 = run_delay_ns(w);
	read_tid(b, w, w, &t0);
	usleep(2000 * 1000);
	uint64_t d1 = run_delay_ns(w);
	read_tid(b, w, w, &t1);
	tc_kill(w);
	tc_kill(h);
	double rq = (double)(t1.rq_ns - t0.rq_ns), truth = (double)(d1 - d0), wall = (double)(t1.now_ns - t0.now_ns);
	cr_expect_geq(rq / wall, 0.10, "run-queue wait %.1f %% of the time", 100 * rq / wall);
	cr_expect(fabs(rq - truth) <= 0.10 * truth, "run-queue wait %.1f ms, schedstat's run_delay %.1f ms", rq / 1e6,
		  truth / 1e6);
	cr_expect_gt(t1.rq_count, t0.rq_count);
	probe_bpf_close(b);
}

/* As nobody (uid 65534, no capabilities) the programs are refused, with the reason. */
Test(bpf, unprivileged_refused)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char why[256] = "";
		struct probe_bpf *b = NULL;
		if (geteuid() == 0 && (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
			_exit(3);
		int err = probe_bpf_open(&b, why, sizeof(why));
		int avail = probe_bpf_available(NULL, 0);
		dprintf(p[1], "%d %d %s", err, avail, why);
		_exit(0);
	}
	close(p[1]);
	char buf[320] = "";
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child exit %d", WEXITSTATUS(st));
	cr_assert_gt(n, 0);
	int err, avail;
	char why[256] = "";
	cr_assert_geq(sscanf(buf, "%d %d %255[^\n]", &err, &avail, why), 2, "%s", buf);
	cr_expect_lt(err, 0, "%s", buf);
	cr_expect_eq(avail, 0, "%s", buf);
	cr_expect(strstr(why, "CAP_BPF") || strstr(why, "built without bpf"), "reason: %s", why);
}

struct stalls_seen {
	int n, with_stack;
	double longest_ms, next_ms;   /* the two longest */
	pid_t tid;
};

static void on_stall(const struct probe_bpf_stall *s, void *arg)
{
	struct stalls_seen *seen = arg;
	if (s->tid != seen->tid)
		return;
	seen->n++;
	seen->with_stack += s->nframes > 0;
	double ms = s->span_ns / 1e6;
	if (ms > seen->longest_ms) {
		seen->next_ms = seen->longest_ms;
		seen->longest_ms = ms;
	} else if (ms > seen->next_ms) {
		seen->next_ms = ms;
	}
}

/* Spans of 40 ms among 1-ms ones with a 20-ms threshold: one ring-buffer
 * event per long span, with the user stack, none for the short ones. */
Test(bpf, stalls_through_the_ring_buffer)
{
	struct probe_bpf *b = open_or_skip();
	cr_assert_eq(probe_bpf_set_stall_ms(b, 20), 0);
	int out;
	const char *args[] = { "--case", "nested", "--spans", "1x9,40x1", "--idle-ms", "10", "--seconds", "3", NULL };
	pid_t pid = tc_spawn_example("loop_truth", args, &out);
	cr_assert_eq(probe_bpf_watch(b, pid), 0);
	char text[1024];
	slurp(out, text, sizeof(text));
	waitpid(pid, NULL, 0);
	unsigned long n;
	double p50, p99, max;
	const char *l = strstr(text, "spans n ");
	cr_assert(l && sscanf(l, "spans n %lu p50 %lf p99 %lf max %lf", &n, &p50, &p99, &max) == 4, "%s", text);
	struct stalls_seen seen = { .tid = pid };
	int got = probe_bpf_drain(b, on_stall, &seen);
	cr_assert_geq(got, 0, "probe_bpf_drain: %s", strerror(-got));
	/* one event per span past 20 ms, the kernel's histogram says how many
	 * (a 1-ms span preempted that long on a loaded machine is one too;
	 * one more may be the last span, cut by the loop's end) */
	struct probe_bpf_thread t;
	read_tid(b, pid, pid, &t);
	uint64_t lo = 0, hi = 0;
	for (int k = 0; k < PROBE_BPF_HIST; k++) {
		lo += probe_bpf_bucket_lo(k) >= 20000000 ? t.hist[k] : 0;
		hi += k + 1 < PROBE_BPF_HIST && probe_bpf_bucket_lo(k + 1) > 20000000 ? t.hist[k] : 0;
	}
	long want = (long)n / 10;   /* a 40-ms span in every 10 */
	cr_expect(lo >= (uint64_t)want - 1, "%lu spans past 20 ms, %ld of 40 ms", (unsigned long)lo, want);
	cr_expect(seen.n >= (int)lo && seen.n <= (int)hi + 1, "%d stall events, %lu to %lu spans past 20 ms", seen.n,
		  (unsigned long)lo, (unsigned long)hi);
	cr_expect_eq(seen.with_stack, seen.n, "every event carries the user stack");
	/* the longest may be the loop's end: out of its poll while it prints
	 * and exits, which the loop does not count as a span */
	cr_expect(seen.longest_ms >= 20 && seen.next_ms <= max + 1, "longest %.1f and %.1f ms (loop's max %.1f)",
		  seen.longest_ms, seen.next_ms, max);
	probe_bpf_close(b);
}

static void blocked_reader(void *arg)
{
	int *p = arg;
	char c;
	close(p[1]);
	for (;;)
		if (read(p[0], &c, 1) <= 0)
			pause();
}

/* A thread blocked in read(2) on a pipe is off the CPU in read for all
 * of the time, by the kernel's count. */
Test(bpf, offcpu_by_syscall)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork_child(blocked_reader, p);
	struct probe_bpf *b = open_or_skip();
	usleep(200 * 1000);
	cr_assert_eq(probe_bpf_watch(b, pid), 0);
	uint64_t t0 = ts_mono_ns();
	usleep(500 * 1000);
	cr_assert_eq(write(p[1], "x", 1), 1);   /* wakes it: the off-CPU stint ends, counted */
	usleep(100 * 1000);
	uint64_t t1 = ts_mono_ns();
	static struct probe_bpf_off off[4096];
	int n = probe_bpf_offcpu(b, off, 4096);
	tc_kill(pid);
	cr_assert_geq(n, 0, "probe_bpf_offcpu: %s", strerror(-n));
	double read_ms = 0;
	for (int i = 0; i < n; i++)
		if (off[i].tid == pid && off[i].nr == SYS_read)
			read_ms += off[i].ns / 1e6;
	double wall_ms = (t1 - t0) / 1e6;
	cr_expect(read_ms >= 0.9 * 500 && read_ms <= wall_ms + 1, "off CPU in read %.1f ms of %.1f", read_ms, wall_ms);
	probe_bpf_close(b);
}
