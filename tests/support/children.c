/*
 * children.c — child processes with known behaviour for sampler tests.
 */
#include "children.h"
#include "carbon.h"
#include "fiberloop.h"
#include "support.h"
#include "users.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* In the child: SIGKILL when the test process dies, also if it died
 * between fork() and here (then the signal would never come). */
static void die_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
}

/* build/examples/NAME beside the loopstat under test */
static void example_path(const char *name, char *buf, size_t len)
{
	char bin[512];
	snprintf(bin, sizeof(bin), "%s", ts_loopstat_bin());
	char *slash = strrchr(bin, '/');
	if (slash)
		*slash = '\0';
	else
		snprintf(bin, sizeof(bin), ".");
	snprintf(buf, len, "%s/examples/%s", bin, name);
}

pid_t tc_spawn_example(const char *name, const char *const args[], int *stdout_fd)
{
	char path[600];
	const char *argv[16];
	int n = 0;
	example_path(name, path, sizeof(path));
	argv[n++] = path;
	for (int i = 0; args && args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return tc_spawn_argv(argv, stdout_fd);
}

pid_t tc_spawn_argv(const char *const argv[], int *stdout_fd)
{
	const char *path = argv[0];
	int p[2], exec_p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(pipe2(exec_p, O_CLOEXEC), 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		die_with_parent(parent);
		/* output nobody reads goes to /dev/null, not a closed pipe (SIGPIPE) */
		int out = stdout_fd ? p[1] : open("/dev/null", O_WRONLY);
		dup2(out, STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		close(exec_p[0]);
		execv(path, (char *const *)argv);
		int e = errno;
		ssize_t w = write(exec_p[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(p[1]);
	/* back only once the child is the example: a monitor that looked at it
	 * before the exec would see the test's name, not the example's */
	close(exec_p[1]);
	int e = 0;
	ssize_t r;
	while ((r = read(exec_p[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(exec_p[0]);
	cr_assert_eq(r, 0, "exec %s: %s", path, strerror(e));
	if (stdout_fd)
		*stdout_fd = p[0];
	else
		close(p[0]);
	return pid;
}

double tc_read_self_idle(int fd, int timeout_ms)
{
	char buf[256];
	size_t len = 0;
	long long end = ts_now_ms() + timeout_ms;
	while (len < sizeof(buf) - 1 && ts_now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	const char *line = strstr(buf, "self_idle_pct ");
	cr_assert(line, "no self_idle_pct line in '%s'", buf);
	return strtod(line + 14, NULL);
}

/* Returns once the child sits in syscall nr (bounded: fails the test after 5 s). */
static void wait_in_syscall(pid_t pid, long nr)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(path, "r");
		long got = -2;
		if (f) {
			if (fgets(buf, sizeof(buf), f))
				got = strtol(buf, NULL, 10);
			fclose(f);
		}
		if (got == nr && strncmp(buf, "running", 7) != 0)
			return;
		usleep(10000);
	}
	cr_assert_fail("child %d never entered syscall %ld", (int)pid, nr);
}

pid_t tc_spawn_blocked_read(int *pipe_fd_in_child, int *write_end)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		die_with_parent(parent);
		char c;
		close(p[1]);
		for (;;)
			if (read(p[0], &c, 1) <= 0)
				pause();
	}
	*pipe_fd_in_child = p[0];
	close(p[0]);
	wait_in_syscall(pid, SYS_read);
	*write_end = p[1]; /* kept open so that the child's read blocks */
	return pid;
}

struct hogger {
	double idle_s, hog_s;
	int rounds;
	volatile double *hog_at;   /* shared with the test; NULL: not told */
};

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *hog(void *arg)
{
	const struct hogger *h = arg;
	double start = mono_s(), end = start + h->hog_s;
	if (h->hog_at)
		*h->hog_at = start;
	while (mono_s() < end)
		;
	return NULL;
}

static void *hogger_main(void *arg)
{
	struct hogger *h = arg;
	for (int i = 0; i < h->rounds; i++) {
		fl_sleep(h->idle_s);
		fl_await(fl_spin(hog, h, "hog"), NULL);
	}
	fl_sleep(3600);
	return NULL;
}

pid_t tc_spawn_hogger(const char *tag, double idle_s, double hog_s, int rounds)
{
	return tc_spawn_hogger_clocked(tag, idle_s, hog_s, rounds, NULL);
}

pid_t tc_spawn_hogger_clocked(const char *tag, double idle_s, double hog_s, int rounds, volatile double *hog_at)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		die_with_parent(parent);
		struct hogger h = { idle_s, hog_s, rounds, hog_at };
		struct fl_options o = { .tag = tag };
		_exit(fl_run(hogger_main, &h, &o, NULL) == 0 ? 0 : 1);
	}
	return pid;
}

struct named {
	const char *fiber_tag;
	int ready_fd;            /* written once the tagged fiber runs, then closed */
	struct tc_spans *spans;  /* shared with the test; NULL: not counted */
};

/* The runtime's bucket of a span of ns (runtime/src/sched.c). */
static int span_bucket(double ns)
{
	int k = ns >= 1 ? (int)floor(log2(ns)) - LOOPSTAT_SPAN_SHIFT : 0;
	return k < 0 ? 0 : k >= LOOPSTAT_SPAN_BUCKETS ? LOOPSTAT_SPAN_BUCKETS - 1 : k;
}

static void *named_fiber(void *arg)
{
	struct named *n = arg;
	if (write(n->ready_fd, "r", 1) != 1)
		_exit(1);
	close(n->ready_fd);
	double resumed = mono_s();
	for (;;) {
		double end = mono_s() + 0.02;
		while (mono_s() < end)
			;
		if (n->spans)
			n->spans->n[span_bucket((mono_s() - resumed) * 1e9)]++;
		fl_sleep(0.03);
		resumed = mono_s();
	}
	return NULL;
}

static void *named_main(void *arg)
{
	struct named *n = arg;
	fl_await(fl_spin(named_fiber, n, n->fiber_tag), NULL);
	return NULL;
}

pid_t tc_spawn_named(const char *comm, const char *loop_tag, const char *fiber_tag)
{
	return tc_spawn_named_clocked(comm, loop_tag, fiber_tag, NULL);
}

struct tc_spans *tc_spans_new(void)
{
	void *p = mmap(NULL, sizeof(struct tc_spans), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(p, MAP_FAILED);
	memset(p, 0, sizeof(struct tc_spans));
	return p;
}

void tc_spans_delete(struct tc_spans *spans) { munmap(spans, sizeof(*spans)); }

pid_t tc_spawn_named_clocked(const char *comm, const char *loop_tag, const char *fiber_tag, struct tc_spans *spans)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		die_with_parent(parent);
		close(p[0]);
		prctl(PR_SET_NAME, comm);
		struct named n = { fiber_tag, p[1], spans };
		struct fl_options o = { .tag = loop_tag };
		_exit(fl_run(named_main, &n, &o, NULL) == 0 ? 0 : 1);
	}
	close(p[1]);
	struct pollfd pf = { .fd = p[0], .events = POLLIN };
	char c;
	cr_assert(poll(&pf, 1, 5000) == 1 && read(p[0], &c, 1) == 1, "worker %d never ran its fiber", (int)pid);
	close(p[0]);
	return pid;
}

/* The burner's own function: spins until `until`, the clock read only
 * once in many iterations so that its samples land here, not in the vDSO. */
__attribute__((noinline)) double tc_stall_burn(double until);
__attribute__((noinline)) double tc_stall_burn(double until)
{
	volatile double x = 1;
	for (;;) {
		for (int i = 0; i < 1 << 16; i++)
			x = x * 1.0000001 + 1e-9;
		if (mono_s() >= until)
			return x;
	}
}

pid_t tc_spawn_burner(double idle_s, double burn_s)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		die_with_parent(parent);
		int ep = epoll_create1(0), p[2];
		struct epoll_event ev = { .events = EPOLLIN };
		if (ep < 0 || pipe(p) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0)
			_exit(1);
		for (;;) {
			epoll_wait(ep, &ev, 1, (int)(idle_s * 1000));
			tc_stall_burn(mono_s() + burn_s);
		}
	}
	return pid;
}

pid_t tc_fork(void)
{
	pid_t parent = getpid(), pid = fork();
	cr_assert_geq(pid, 0, "fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
	}
	return pid;
}

pid_t tc_spawn_quiet(char *const argv[], const struct ts_user *as)
{
	pid_t pid = tc_fork();
	if (pid == 0) {
		if (as && ts_become(as) < 0)
			_exit(126);
		if (as)   /* a change of credentials cleared it */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0), dup2(null, 1), dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

void tc_wait_listen(int port, const char *what)
{
	for (int i = 0; i < 1000 && !carbon_port_open(port); i++)
		usleep(10000);
	cr_assert(carbon_port_open(port), "%s listens on %d", what, port);
}

void tc_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

void tc_kill_all(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			tc_kill(pids[i]);
}

pid_t tc_spawn_published(const char *name, const char *const args[], const char *shm_dir, int *stdout_fd)
{
	pid_t pid = tc_spawn_example(name, args, stdout_fd);
	char seg[600];
	for (int i = 0; i < 300 && ts_shm_segment(shm_dir, pid, seg, sizeof(seg)) != 0; i++)
		usleep(10000);
	cr_assert_eq(ts_shm_segment(shm_dir, pid, seg, sizeof(seg)), 0, "%s %d never published in %s", name, (int)pid,
	             shm_dir);
	return pid;
}
