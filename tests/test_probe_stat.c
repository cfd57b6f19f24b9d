/* stat: comm with ") (" inside (fixture and a real renamed child), malformed stat files. */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "probe_proc.h"
#include "probe_stat.h"
#include "support/probe_child.h"

#define TAIL " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24\n"

static char root[PATH_MAX];

static void fixture_init(void)
{
	cr_assert_eq(tchild_fixture_dir(root, sizeof(root)), 0);
	setenv(PROBE_PROC_ROOT_ENV, root, 1);
}

static void fixture_fini(void)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	tchild_fixture_remove(root);
}

TestSuite(probe_stat, .init = fixture_init, .fini = fixture_fini);

Test(probe_stat, comm_with_parens, .timeout = PROBE_TEST_TIMEOUT)
{
	/* fields after the state: ppid=1 ... utime=11 stime=12 ... threads=17 starttime=19 */
	cr_assert_eq(tchild_fixture_write(root, "42/stat", "42 (a) (b) S" TAIL), 0);
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(42, 0, &st), 0);
	cr_assert_str_eq(st.comm, "a) (b");
	cr_assert_eq(st.state, 'S');
	cr_assert_eq(st.ppid, 1);
	cr_assert_eq(st.flags, 6);
	cr_assert_eq(st.utime, 11);
	cr_assert_eq(st.stime, 12);
	cr_assert_eq(st.threads, 17);
	cr_assert_eq(st.start_time, 19);

	cr_assert_eq(tchild_fixture_write(root, "42/task/43/stat", "43 () () R" TAIL), 0);
	cr_assert_eq(probe_stat_read(42, 43, &st), 0);
	cr_assert_str_eq(st.comm, ") (");
	cr_assert_eq(st.state, 'R');
}

Test(probe_stat, malformed, .timeout = PROBE_TEST_TIMEOUT)
{
	static const char *bad[] = {
		"", "42", "42 (x", "42 (x)", "42 (x) ", "42 (x) S", "42 (x) S 1 2 3",
		"42 (x) S 1 2 3 4 5 6 7 8 9 10 x 12 13 14 15 16 17 18 19",
		"42 x) S" TAIL, ")(" TAIL,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(tchild_fixture_write(root, "50/stat", bad[i]), 0);
		struct probe_stat st;
		int r = probe_stat_read(50, 0, &st);
		cr_assert(r == -EINVAL || r == -ESRCH, "\"%s\": %d", bad[i], r);
	}
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(51, 0, &st), -ESRCH);
}

static void park_renamed(void *arg, int ready_fd)
{
	(void)arg;
	prctl(PR_SET_NAME, "w) (x");
	tchild_ready(ready_fd);
	for (;;)
		pause();
}

Test(probe_stat, real_child_named_with_parens, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	pid_t pid = tchild_fork(park_renamed, NULL);
	cr_assert_gt(pid, 0);
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(pid, pid, &st), 0);
	cr_assert_str_eq(st.comm, "w) (x");
	cr_assert_eq(st.ppid, getpid());
	cr_assert_eq(st.threads, 1);
	tchild_reap(pid);
}

Test(probe_stat, image_fields, .timeout = PROBE_TEST_TIMEOUT)
{
	/* fields 4-52: field f holds f*10; rsslim (25) is ~0 as the kernel shows
	 * it, exit_signal (38) -1 as a thread's */
	char text[1024];
	int n = snprintf(text, sizeof(text), "42 (a b) S");
	for (int f = 4; f <= 52; f++)
		n += f == 25 ? snprintf(text + n, sizeof(text) - (size_t)n, " 18446744073709551615")
		   : f == 38 ? snprintf(text + n, sizeof(text) - (size_t)n, " -1")
			     : snprintf(text + n, sizeof(text) - (size_t)n, " %d", f * 10);
	snprintf(text + n, sizeof(text) - (size_t)n, "\n");
	cr_assert_eq(tchild_fixture_write(root, "42/stat", text), 0);
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(42, 0, &st), 0);
	static const int fields[PROBE_STAT_IMAGE_FIELDS] = { 26, 27, 28, 45, 46, 47, 48, 49, 50, 51 };
	for (int i = 0; i < PROBE_STAT_IMAGE_FIELDS; i++)
		cr_assert_eq(st.image[i], (uint64_t)fields[i] * 10, "image[%d]", i);
	cr_assert_eq(st.start_time, 220);

	/* a line that stops before field 51 (an old kernel): no image, still parsed */
	cr_assert_eq(tchild_fixture_write(root, "42/stat", "42 (a) S" TAIL), 0);
	cr_assert_eq(probe_stat_read(42, 0, &st), 0);
	for (int i = 0; i < PROBE_STAT_IMAGE_FIELDS; i++)
		cr_assert_eq(st.image[i], 0);
}
