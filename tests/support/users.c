/*
 * users.c — a throwaway second user for the hardening tests.
 */
#include "users.h"
#include "support.h"
#include "children.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int tool(const char *path)
{
	return access(path, X_OK) == 0;
}

void ts_user_add(struct ts_user *u)
{
	memset(u, 0, sizeof(*u));
	if (geteuid() != 0)
		cr_skip_test("needs root to create a second user");
	if (!tool("/usr/sbin/useradd") || !tool("/usr/sbin/userdel"))
		cr_skip_test("useradd/userdel not installed");
	snprintf(u->name, sizeof(u->name), "lst%d", (int)getpid());
	char *argv[] = { "/usr/sbin/useradd", "-M", "-U", "-s", "/usr/sbin/nologin", u->name, NULL };
	int rc = ts_run(argv, NULL, 20000);
	struct passwd *pw = getpwnam(u->name);
	if (rc != 0 || !pw) {
		u->name[0] = '\0';
		cr_skip_test("useradd failed (status %d)", rc);
	}
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;
}

void ts_user_add_sweeping(struct ts_user *u)
{
	unsetenv("LOOPSTAT_DISCOVER");
	ts_user_add(u);
}

void ts_user_del(struct ts_user *u)
{
	if (!u->name[0])
		return;
	char *argv[] = { "/usr/sbin/userdel", u->name, NULL };
	ts_run(argv, NULL, 20000);
	u->name[0] = '\0';
}

int ts_become(const struct ts_user *u)
{
	if (setgroups(0, NULL) < 0 || setgid(u->gid) < 0 || setuid(u->uid) < 0)
		return -errno;
	return 0;
}

int ts_as_user(const struct ts_user *u, int (*fn)(void *arg), void *arg, int timeout_ms)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (ts_become(u) < 0)
			_exit(126);
		_exit(fn(arg) & 0xff);
	}
	long long deadline = ts_now_ms() + timeout_ms;
	int status;
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (ts_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return -1;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 2000000 }, NULL);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

pid_t ts_user_loop(const struct ts_user *u)
{
	pid_t pid = tc_fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (ts_become(u) < 0)
			_exit(120);
		prctl(PR_SET_PDEATHSIG, SIGKILL);   /* the change of credentials cleared it */
		int ep = epoll_create1(0);
		struct epoll_event ev;
		for (;;)
			epoll_wait(ep, &ev, 1, 20);
	}
	return pid;
}

void ts_user_nobody(struct ts_user *u)
{
	memset(u, 0, sizeof(*u));
	struct passwd *pw = getpwnam("nobody");
	if (!pw)
		cr_skip_test("no user nobody for a second user's loop");
	u->uid = pw->pw_uid;
	u->gid = pw->pw_gid;   /* no name: ts_user_del leaves it be */
}

void ts_need_nobody(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to become uid 65534 (setpriv)");
	if (access("/usr/bin/setpriv", X_OK) != 0)
		cr_skip_test("setpriv missing (util-linux)");
}
