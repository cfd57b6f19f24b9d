/* Discovery: processes by pid list and name pattern (libproc2 and fixture trees), threads of a process. */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "probe_discover.h"
#include "probe_proc.h"
#include "support/probe_child.h"

static char child_name[16];

static void park_named(void *arg, int ready_fd)
{
	(void)arg;
	prctl(PR_SET_NAME, child_name);
	tchild_ready(ready_fd);
	for (;;)
		pause();
}

static int has_pid(const struct probe_proc_info *v, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (v[i].pid == pid)
			return 1;
	return 0;
}

Test(probe_discover, by_name_on_real_proc, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	snprintf(child_name, sizeof(child_name), "lsd%d", (int)getpid() % 100000);
	pid_t a = tchild_fork(park_named, NULL), b = tchild_fork(park_named, NULL);
	cr_assert_gt(a, 0);
	cr_assert_gt(b, 0);

	char pattern[64];
	snprintf(pattern, sizeof(pattern), "^%s$", child_name);
	struct probe_matcher m;
	cr_assert_eq(probe_matcher_init(&m, pattern, PROBE_MATCH_COMM), 0);
	struct probe_proc_info found[8];
	int n = probe_discover_match(&m, found, 8);
	cr_assert_eq(n, 2, "found %d", n);
	cr_assert(found[0].pid < found[1].pid);
	cr_assert(has_pid(found, n, a) && has_pid(found, n, b));
	cr_assert_str_eq(found[0].comm, child_name);
	cr_assert_eq(found[0].threads, 1);
	cr_assert_gt(found[0].start_time, 0);
	/* cap smaller than the matches: the count is still the total */
	cr_assert_eq(probe_discover_match(&m, found, 1), 2);
	probe_matcher_done(&m);

	/* on the command line the children look like this test's worker
	 * process (Criterion may re-exec it under another argv[0]); the caller
	 * itself is never reported */
	char self_cmd[256], cmd_pattern[600];
	cr_assert_gt(probe_read_file("/proc/self/cmdline", self_cmd, sizeof(self_cmd)), 0);
	char *p = cmd_pattern;
	*p++ = '^';
	for (const char *c = self_cmd; *c && p < cmd_pattern + sizeof(cmd_pattern) - 5; c++)
		p += sprintf(p, (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ? "%c" : "[%c]", *c);
	*p = '\0';
	cr_assert_eq(probe_matcher_init(&m, cmd_pattern, PROBE_MATCH_CMDLINE), 0);
	/* other runs of this suite (another build tree, another checkout) match
	 * too; the count may exceed the array, what is read must not */
	static struct probe_proc_info many[1024];
	n = probe_discover_match(&m, many, 1024);
	cr_assert_geq(n, 2);
	cr_assert_leq(n, 1024, "%d processes share this test's command line", n);
	cr_assert(has_pid(many, n, a) && has_pid(many, n, b));
	cr_assert_not(has_pid(many, n, getpid()));
	probe_matcher_done(&m);

	tchild_reap(a);
	tchild_reap(b);
	cr_assert_eq(probe_matcher_init(&m, pattern, PROBE_MATCH_COMM), 0);
	cr_assert_eq(probe_discover_match(&m, found, 8), 0);
	probe_matcher_done(&m);
}

Test(probe_discover, bad_patterns, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_matcher m;
	cr_assert_eq(probe_matcher_init(&m, "(unclosed", PROBE_MATCH_COMM), -EINVAL);
	cr_assert_eq(probe_matcher_init(&m, "x", 0), -EINVAL);
	cr_assert_eq(probe_matcher_init(&m, NULL, PROBE_MATCH_COMM), -EINVAL);
}

Test(probe_discover, by_pid_list, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	snprintf(child_name, sizeof(child_name), "lsp%d", (int)getpid() % 100000);
	pid_t a = tchild_fork(park_named, NULL);
	cr_assert_gt(a, 0);
	pid_t pids[] = { a, getpid(), -5, 0, INT_MAX - 1 };
	struct probe_proc_info out[5];
	int n = probe_discover_pids(pids, 5, out);
	cr_assert_eq(n, 2);
	cr_assert_eq(out[0].pid, a);
	cr_assert_str_eq(out[0].comm, child_name);
	cr_assert_eq(out[1].pid, getpid());
	tchild_reap(a);
	cr_assert_eq(probe_discover_pids(pids, 1, out), 0);
}

static int stop_pipe[2];

static void *thread_park(void *arg)
{
	char c;
	*(volatile pid_t *)arg = gettid();
	ssize_t r = read(stop_pipe[0], &c, 1);
	(void)r;
	return NULL;
}

Test(probe_discover, threads_of_a_process, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	cr_assert_eq(pipe(stop_pipe), 0);
	pthread_t th[3];
	volatile pid_t tid[3] = { 0, 0, 0 };
	for (int i = 0; i < 3; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, thread_park, (void *)&tid[i]), 0);
	for (int i = 0; i < 3; i++)
		while (!tid[i])
			usleep(100);
	pid_t tids[64];
	int n = probe_discover_threads(getpid(), tids, 64);
	cr_assert_geq(n, 4);
	for (int i = 1; i < n && i < 64; i++)
		cr_assert_lt(tids[i - 1], tids[i]);
	for (int i = 0; i < 3; i++) {
		int seen = 0;
		for (int j = 0; j < n; j++)
			seen |= tids[j] == tid[i];
		cr_assert(seen, "thread %d not listed", (int)tid[i]);
	}
	cr_assert_eq(probe_discover_threads(getpid(), tids, 1), n);
	cr_assert_eq(write(stop_pipe[1], "xxx", 3), 3);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	/* join returns when the kernel clears the thread's tid, a little
	 * before /proc stops listing it: wait for the listing, boundedly */
	int left = probe_discover_threads(getpid(), tids, 64);
	for (int tries = 0; left != n - 3 && tries < 200; tries++) {
		usleep(10000);
		left = probe_discover_threads(getpid(), tids, 64);
	}
	cr_assert_eq(left, n - 3);
	cr_assert_eq(probe_discover_threads(INT_MAX - 1, tids, 64), -ESRCH);
}

#define TAIL " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24\n"

#define CMDLINE "puma 5.6 (tcp://0.0.0.0:9292)\0-C\0config.rb\0"

Test(probe_discover, fixture_tree, .timeout = PROBE_TEST_TIMEOUT)
{
	char root[PATH_MAX];
	cr_assert_eq(tchild_fixture_dir(root, sizeof(root)), 0);
	cr_assert_eq(tchild_fixture_write(root, "100/stat", "100 (ruby) S" TAIL), 0);
	cr_assert_eq(tchild_fixture_write_n(root, "100/cmdline", CMDLINE, sizeof(CMDLINE)), 0);
	cr_assert_eq(tchild_fixture_write(root, "100/task/100/stat", "100 (ruby) S" TAIL), 0);
	cr_assert_eq(tchild_fixture_write(root, "100/task/107/stat", "107 (worker) S" TAIL), 0);
	cr_assert_eq(tchild_fixture_write(root, "100/task/103/stat", "103 (worker) S" TAIL), 0);
	cr_assert_eq(tchild_fixture_write(root, "20/stat", "20 (ruby) (x) S" TAIL), 0);
	cr_assert_eq(tchild_fixture_write(root, "20/cmdline", ""), 0);
	cr_assert_eq(tchild_fixture_write(root, "30/stat", "30 (broken"), 0);
	/* a kernel thread (flags, field 9, has PF_KTHREAD): never a candidate */
	cr_assert_eq(tchild_fixture_write(root, "40/stat", "40 (ruby_k) I 2 0 0 0 -1 2129984 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "40/cmdline", ""), 0);
	cr_assert_eq(tchild_fixture_write(root, "self/stat", "1 (ruby) S" TAIL), 0);
	cr_assert_eq(tchild_fixture_write(root, "net/unix", ""), 0);
	setenv(PROBE_PROC_ROOT_ENV, root, 1);

	struct probe_matcher m;
	struct probe_proc_info out[8];
	cr_assert_eq(probe_matcher_init(&m, "^ruby", PROBE_MATCH_COMM), 0);
	cr_assert_eq(probe_discover_match(&m, out, 8), 2);
	cr_assert_eq(out[0].pid, 20);
	cr_assert_str_eq(out[0].comm, "ruby) (x");
	cr_assert_eq(out[1].pid, 100);
	cr_assert_eq(out[1].threads, 17);
	cr_assert_eq(out[1].start_time, 19);
	probe_matcher_done(&m);

	cr_assert_eq(probe_matcher_init(&m, "config\\.rb", PROBE_MATCH_CMDLINE), 0);
	cr_assert_eq(probe_discover_match(&m, out, 8), 1);
	cr_assert_eq(out[0].pid, 100);
	probe_matcher_done(&m);
	cr_assert_eq(probe_matcher_init(&m, "tcp://0\\.0\\.0\\.0:9292\\) -C", PROBE_MATCH_CMDLINE), 0);
	cr_assert_eq(probe_discover_match(&m, out, 8), 1);
	probe_matcher_done(&m);
	cr_assert_eq(probe_matcher_init(&m, "config", PROBE_MATCH_COMM), 0);
	cr_assert_eq(probe_discover_match(&m, out, 8), 0);
	probe_matcher_done(&m);

	pid_t tids[8];
	cr_assert_eq(probe_discover_threads(100, tids, 8), 3);
	cr_assert_eq(tids[0], 100);
	cr_assert_eq(tids[1], 103);
	cr_assert_eq(tids[2], 107);
	cr_assert_eq(probe_discover_threads(101, tids, 8), -ESRCH);

	pid_t pids[] = { 30, 100, 20, 40 };
	cr_assert_eq(probe_discover_pids(pids, 4, out), 2);
	cr_assert_eq(out[0].pid, 100);
	cr_assert_eq(out[1].pid, 20);

	unsetenv(PROBE_PROC_ROOT_ENV);
	tchild_fixture_remove(root);
}
