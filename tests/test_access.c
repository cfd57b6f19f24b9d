/* Refused access is loud: an unprivileged loopstat naming a root process exits 5 and says what to do. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/children.h"
#include "support/support.h"
#include "support/users.h"

TestSuite(access, .timeout = 30);

/* `loopstat ARGS` as the user nobody, stdout and stderr together. */
static int run_as_nobody(const char *args, char **out)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "exec " TS_AS_NOBODY " \"%s\" %s 2>&1",
		 ts_loopstat_bin(), args);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	return ts_run(argv, out, 20000);
}

Test(access, a_refused_target_exits_5_with_the_reason_and_the_fix)
{
	ts_need_nobody();
	int fd, wr;
	pid_t child = tc_spawn_blocked_read(&fd, &wr);
	char args[128], want[64], *out;
	snprintf(args, sizeof(args), "list -p %d --duration 0.3", (int)child);
	int rc = run_as_nobody(args, &out);
	cr_assert_eq(rc, 5, "exit %d: %s", rc, out);
	snprintf(want, sizeof(want), "access refused: pid %d runs as root", (int)child);
	cr_assert(strstr(out, want), "%s", out);
	cr_assert(strstr(out, "sudo loopstat"), "the fix is named: %s", out);
	free(out);

	snprintf(args, sizeof(args), "list --json -p %d --duration 0.3", (int)child);
	rc = run_as_nobody(args, &out);
	cr_assert_eq(rc, 5, "exit %d: %s", rc, out);
	snprintf(want, sizeof(want), "\"refused\":[{\"pid\":%d,\"reason\":\"pid %d runs as root", (int)child, (int)child);
	cr_assert(strstr(out, want), "%s", out);
	free(out);
	tc_kill(child);
	close(wr);
}

Test(access, a_readable_target_beside_a_refused_one_is_measured)
{
	ts_need_nobody();
	int fd, wr;
	pid_t child = tc_spawn_blocked_read(&fd, &wr);
	char args[128], *out, bin[512];
	/* nobody may read its own processes: a worker of its own, started
	 * beside loopstat (examples/ is next to the binary) */
	snprintf(bin, sizeof(bin), "%s", ts_loopstat_bin());
	char *slash = strrchr(bin, '/');
	if (slash)
		*slash = '\0';
	snprintf(args, sizeof(args), "list -p %d,$w --duration 0.5", (int)child);
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "exec " TS_AS_NOBODY " /bin/sh -c "
		 "'\"%s/examples/duty_cycle\" --idle 0.9 --seconds 5 >/dev/null & w=$!; \"%s\" %s 2>&1; rc=$?; "
		 "kill $w; exit $rc'", slash ? bin : ".", ts_loopstat_bin(), args);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 20000);
	cr_assert_eq(rc, 0, "something was measurable, so not 5: exit %d: %s", rc, out);
	cr_assert(strstr(out, "access refused: pid"), "the refusal is still said: %s", out);
	free(out);
	tc_kill(child);
	close(wr);
}
