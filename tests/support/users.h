/*
 * users.h — a real second user for the tests that need one: created with
 * useradd at the start of a test, removed with userdel after it.
 */
#ifndef TESTS_USERS_H
#define TESTS_USERS_H

#include <sys/types.h>

struct ts_user {
	char  name[32];
	uid_t uid;
	gid_t gid;
};

/*
 * Creates a throwaway user "lst<pid>" (no home, no login shell, its own
 * group). Skips the test cleanly (cr_skip_test) when not root or when
 * useradd is missing or fails. Pair with ts_user_del(), e.g. in .fini.
 */
void ts_user_add(struct ts_user *u);
/* ts_user_add for the suites that sweep the host as a plain loopstat
 * does: first clears LOOPSTAT_DISCOVER (run-tests.sh makes --instrumented
 * the suites' default). */
void ts_user_add_sweeping(struct ts_user *u);
/* Removes the user and its group (no-op if it was never created). */
void ts_user_del(struct ts_user *u);

/*
 * Forks a child that drops to the user (setgroups, setgid, setuid) and
 * returns fn(arg) as its exit status (0..255); waits at most timeout_ms.
 * Returns the status, or -1 if the child timed out or died of a signal.
 */
int ts_as_user(const struct ts_user *u, int (*fn)(void *arg), void *arg, int timeout_ms);

/* In a forked child: become the user; returns 0 or -errno. */
int ts_become(const struct ts_user *u);

/* A loop of user u: a child that waits in epoll_wait, waking every 20 ms,
 * killed when the test dies. Stop it with tc_kill. */
pid_t ts_user_loop(const struct ts_user *u);
/* u as the system's user nobody (an existing user, not made nor removed). */
void ts_user_nobody(struct ts_user *u);

/* A shell command's prefix that runs the rest as nobody (uid and gid
 * 65534, no groups); ts_need_nobody skips the test (cr_skip_test) where
 * it cannot: not root, or no setpriv. */
#define TS_AS_NOBODY "/usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups --"
void ts_need_nobody(void);

#endif /* TESTS_USERS_H */
