/* Backend choice (option, $FL_BACKEND, fallback to libev when io_uring is refused by seccomp), the wait fd each backend publishes and really polls, and waitpid without pidfds. */
#include "support/fl_test.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fd_kind(int fd, char *out, size_t cap)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, out, cap - 1);
	if (n < 0)
		return -1;
	out[n] = '\0';
	return 0;
}

static const char *expected_kind(const char *backend)
{
	return strcmp(backend, "libev") == 0 ? "anon_inode:[eventpoll]" : "anon_inode:[io_uring]";
}

/* ---- the wait fd is the fd the loop blocks on --------------------------- */

struct watch {
	pid_t tid;
	int   wait_fd;
	long  nr, arg0;   /* syscall seen while the loop slept */
	int   seen;
};

/* Samples the loop thread's syscall until it is seen in its poll. */
static void *watcher(void *arg)
{
	struct watch *w = arg;
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)w->tid);
	for (int i = 0; i < 2000 && !w->seen; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		long nr, a0;
		if (n > 0) {
			buf[n] = '\0';
			if (sscanf(buf, "%ld 0x%lx", &nr, &a0) == 2 &&
			    (nr == SYS_epoll_wait || nr == SYS_epoll_pwait || nr == SYS_io_uring_enter)) {
				w->nr = nr;
				w->arg0 = a0;
				w->seen = 1;
			}
		}
		usleep(1000);
	}
	return NULL;
}

static void *wait_fd_main(void *arg)
{
	(void)arg;
	struct loopstat_shm_slot *s = fl_stats_slot();
	char kind[64];
	cr_assert_str_eq(fl_backend_name(), fl_test_backend);
	cr_assert_eq(s->backend, strcmp(fl_test_backend, "libev") == 0 ? LOOPSTAT_BACKEND_LIBEV
									  : LOOPSTAT_BACKEND_IO_URING);
	cr_assert_eq(fd_kind((int)s->wait_fd, kind, sizeof(kind)), 0);
	cr_assert_str_eq(kind, expected_kind(fl_test_backend));

	struct watch w = { .tid = (pid_t)syscall(SYS_gettid), .wait_fd = (int)s->wait_fd };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, watcher, &w), 0);
	for (int i = 0; i < 20 && !w.seen; i++)
		fl_sleep(0.1); /* the loop blocks in its poll meanwhile */
	pthread_join(t, NULL);
	cr_assert(w.seen, "never seen in a poll");
	cr_assert_eq(w.arg0, w.wait_fd, "polls fd %ld (syscall %ld), publishes %d", w.arg0, w.nr, w.wait_fd);
	return NULL;
}

Test(backend, published_wait_fd_is_the_polled_fd, .timeout = 30)
{
	fl_test_run(wait_fd_main, NULL);
}

/* ---- choice ------------------------------------------------------------- */

static void *name_main(void *arg)
{
	*(const char **)arg = fl_backend_name();
	return NULL;
}

static const char *run_named(const char *option)
{
	const char *name = NULL;
	struct fl_options o = { .backend = option };
	int err = fl_run(name_main, &name, &o, NULL);
	return err ? strerror(-err) : name;
}

Test(backend, option_overrides_env_default_is_io_uring, .timeout = 10, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	unsetenv("FL_BACKEND");
	cr_assert_str_eq(run_named(NULL), "io_uring");
	setenv("FL_BACKEND", "libev", 1);
	cr_assert_str_eq(run_named(NULL), "libev");
	cr_assert_str_eq(run_named("io_uring"), "io_uring");
	setenv("FL_BACKEND", "io_uring", 1);
	cr_assert_str_eq(run_named("libev"), "libev");
	setenv("FL_BACKEND", "kqueue", 1);
	cr_assert_str_eq(run_named(NULL), strerror(EINVAL));
	unsetenv("FL_BACKEND");
	cr_assert(fl_backend_available("libev"));
	cr_assert(fl_backend_available("io_uring"));
	cr_assert(!fl_backend_available("kqueue"));
	fl_test_assert_no_leaks();
}

/* ---- fallback ----------------------------------------------------------- */

/* What the child saw, one bit per check that failed. */
enum { BAD_NAME = 1, BAD_KIND = 2, BAD_FD = 4, BAD_SECOND = 8, BAD_EXPLICIT = 16, BAD_SECCOMP = 32,
       BAD_OPS = 64, BAD_AVAILABLE = 128 };

static void *fallback_main(void *arg)
{
	int *bad = arg;
	struct loopstat_shm_slot *s = fl_stats_slot();
	char kind[64];
	if (!fl_backend_name() || strcmp(fl_backend_name(), "libev") != 0)
		*bad |= BAD_NAME;
	if (s->backend != LOOPSTAT_BACKEND_LIBEV)
		*bad |= BAD_KIND;
	if (fd_kind((int)s->wait_fd, kind, sizeof(kind)) < 0 || strcmp(kind, "anon_inode:[eventpoll]") != 0)
		*bad |= BAD_FD;
	int p[2];
	char c = 0;
	if (pipe(p) < 0 || fl_write(p[1], "y", 1) != 1 || fl_read(p[0], &c, 1) != 1 || c != 'y' ||
	    fl_sleep(0.001) != 0)
		*bad |= BAD_OPS;
	close(p[0]);
	close(p[1]);
	return NULL;
}

static int child_fallback(void)
{
	int bad = 0;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0) < 0 ||
	    seccomp_load(ctx) < 0)
		return BAD_SECCOMP;
	seccomp_release(ctx);
	/* asked before a loop starts, io_uring is not offered */
	if (fl_backend_available("io_uring") || !fl_backend_available("libev"))
		bad |= BAD_AVAILABLE;
	unsetenv("FL_BACKEND");
	if (fl_run(fallback_main, &bad, NULL, NULL) != 0)
		bad |= BAD_NAME;
	/* a second loop falls back silently: the line is said once */
	int bad2 = 0;
	if (fl_run(fallback_main, &bad2, NULL, NULL) != 0 || bad2)
		bad |= BAD_SECOND;
	/* io_uring asked for by name is not silently replaced */
	struct fl_options o = { .backend = "io_uring" };
	if (fl_run(fallback_main, &bad2, &o, NULL) != -ENOSYS)
		bad |= BAD_EXPLICIT;
	fl_stats_close(); /* _exit skips the atexit unlink */
	return bad;
}

Test(backend, default_falls_back_to_libev_when_io_uring_is_refused, .timeout = 20, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	int err[2];
	cr_assert_eq(pipe(err), 0);
	fflush(stderr);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(err[1], 2);
		close(err[0]);
		close(err[1]);
		_exit(child_fallback());
	}
	close(err[1]);
	char out[4096];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(out) - 1 && (n = read(err[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(err[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died: status 0x%x", st);
	cr_assert_eq(WEXITSTATUS(st), 0, "child checks failed: mask 0x%x; stderr: %s", WEXITSTATUS(st), out);
	/* exactly one line, naming both backends and the reason */
	char *nl = strchr(out, '\n');
	cr_assert_not_null(nl, "no line on stderr");
	cr_assert_eq(nl[1], '\0', "more than one line: %s", out);
	cr_assert_not_null(strstr(out, "io_uring"), "%s", out);
	cr_assert_not_null(strstr(out, "libev"), "%s", out);
	cr_assert_not_null(strstr(out, strerror(ENOSYS)), "%s", out);
}

/* ---- the caller's fds --------------------------------------------------- */

static void *modes_main(void *arg)
{
	(void)arg;
	int p[2], sv[2];
	char buf[8];
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	cr_assert_eq(fl_write(p[1], "ab", 2), 2);
	cr_assert_eq(fl_read(p[0], buf, sizeof(buf)), 2);
	cr_assert_eq(fl_send(sv[0], "cd", 2, 0), 2);
	cr_assert_eq(fl_recv(sv[1], buf, sizeof(buf), 0), 2);
	/* read/write/recv/send use per-call flags, not the fd's mode */
	int fds[4] = { p[0], p[1], sv[0], sv[1] };
	for (int i = 0; i < 4; i++)
		cr_assert_eq(fcntl(fds[i], F_GETFL) & O_NONBLOCK, 0, "fd %d made non-blocking", fds[i]);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	return NULL;
}

Test(backend, read_write_recv_send_leave_fd_mode_alone, .timeout = 10)
{
	fl_test_run(modes_main, NULL);
}

/* ---- waitpid without pidfds --------------------------------------------- */

static void *nopidfd_main(void *arg)
{
	int *bad = arg;
	pid_t pid = fork();
	if (pid == 0) {
		usleep(20000);
		_exit(3);
	}
	int st = 0;
	if (fl_waitpid(pid, &st) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 3)
		*bad |= 1;
	if (fl_waitpid(pid, &st) != -ESRCH)
		*bad |= 2; /* reaped: the same error as with a pidfd (pidfd_open's ESRCH) */
	return NULL;
}

static int child_nopidfd(void)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(pidfd_open), 0) < 0 ||
	    seccomp_load(ctx) < 0)
		return 64;
	seccomp_release(ctx);
	int bad = 0;
	for (const char *const *b = fl_test_backends(); *b; b++) {
		struct fl_options o = { .backend = *b };
		if (fl_run(nopidfd_main, &bad, &o, NULL) != 0)
			bad |= 4;
	}
	fl_stats_close();
	return bad;
}

Test(backend, waitpid_without_pidfd_polls_the_child, .timeout = 20, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0)
		_exit(child_nopidfd());
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died: status 0x%x", st);
	cr_assert_eq(WEXITSTATUS(st), 0, "child checks failed: mask 0x%x", WEXITSTATUS(st));
}
