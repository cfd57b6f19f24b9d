/*
 * probe_child.c — parked children and fixture trees for the probe tests.
 */
#include "probe_child.h"

#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t tchild_fork(tchild_park_fn park, void *arg)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		close(fds[0]);
		park(arg, fds[1]);
		_exit(0);
	}
	close(fds[1]);
	struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
	char c;
	int ok = poll(&pfd, 1, 5000) == 1 && read(fds[0], &c, 1) == 1;
	close(fds[0]);
	if (!ok) {
		tchild_reap(pid);
		return -1;
	}
	return pid;
}

void tchild_ready(int ready_fd)
{
	char c = 'r';
	if (write(ready_fd, &c, 1) != 1)
		_exit(2);
	close(ready_fd);
}

void tchild_reap(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int tchild_wait_state(struct probe_syscall *p, enum probe_sc_state want, int timeout_ms,
		      struct probe_sc_sample *out)
{
	long long deadline = now_ms() + timeout_ms;
	for (;;) {
		if (probe_syscall_sample(p, out) == 0 && out->state == want)
			return 0;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(200);
	}
}

int tchild_fixture_dir(char *buf, size_t len)
{
	if (snprintf(buf, len, "/tmp/loopstat-fixture-XXXXXX") >= (int)len)
		return -ENAMETOOLONG;
	return mkdtemp(buf) ? 0 : -errno;
}

static int mkdirs_for(char *path)
{
	for (char *s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		int r = mkdir(path, 0755);
		*s = '/';
		if (r < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

int tchild_fixture_write(const char *root, const char *rel, const char *text)
{
	return tchild_fixture_write_n(root, rel, text, strlen(text));
}

int tchild_fixture_write_n(const char *root, const char *rel, const char *data, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	int err = mkdirs_for(path);
	if (err < 0)
		return err;
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fwrite(data, 1, len, f);
	return fclose(f) == 0 ? 0 : -errno;
}

int tchild_fixture_symlink(const char *root, const char *rel, const char *target)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	int err = mkdirs_for(path);
	if (err < 0)
		return err;
	return symlink(target, path) == 0 ? 0 : -errno;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void tchild_fixture_remove(const char *root)
{
	if (strncmp(root, "/tmp/loopstat-fixture-", 22) == 0)
		nftw(root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tchild_need_ring(int r)
{
	if (r == -ENOSYS || r == -EPERM || r == -EACCES)
		cr_skip_test("io_uring unavailable here (%d)", r);
	cr_assert_eq(r, 1, "no ring: %d", r);
}

void tchild_park_busy(void *arg, int ready_fd)
{
	(void)arg;
	tchild_ready(ready_fd);
	for (volatile unsigned long i = 0;; i++)
		;
}

void tchild_park_pause(void *arg, int ready_fd)
{
	(void)arg;
	tchild_ready(ready_fd);
	for (;;)
		pause();
}

void tchild_park_sleep(void *arg, int ready_fd)
{
	(void)arg;
	struct timespec ts = { 3600, 0 };
	tchild_ready(ready_fd);
	for (;;)
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

void tchild_park_read(void *arg, int ready_fd)
{
	int fd = (int)(intptr_t)arg;
	char c;
	tchild_ready(ready_fd);
	for (;;)
		if (read(fd, &c, 1) < 0)
			_exit(3);
}

void tchild_park_epoll_wait(void *arg, int ready_fd)
{
	int epfd = (int)(intptr_t)arg;
	struct epoll_event ev;
	tchild_ready(ready_fd);
	for (;;)
		epoll_wait(epfd, &ev, 1, -1);
}
