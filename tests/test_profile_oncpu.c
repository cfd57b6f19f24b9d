/* profile's on-CPU samples carry the stack of a perf_event cpu-clock sample: a CPU-bound loop's names its burning function. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loopstat_shm.h"
#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("oncpu");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(profile_oncpu, .init = setup, .fini = teardown, .timeout = 40);

/* A loop that burns 200 ms in tc_stall_burn after each 20 ms in epoll_wait:
 * of its folded profile's on-CPU samples, 80 % or more name that function. */
Test(profile_oncpu, cpu_bound_loop_names_its_burning_function)
{
	pid_t pid = tc_spawn_burner(0.02, 0.2);
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "profile", "-p", p, "--duration", "2", "--format", "folded", NULL };
	char *out = NULL;
	int rc = ts_run(argv, &out, 20000);
	tc_kill(pid);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
	unsigned long on_cpu = 0, burning = 0;
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		const char *sp = strrchr(line, ' ');
		if (!sp || !strstr(line, ";on cpu"))
			continue;
		unsigned long n = strtoul(sp + 1, NULL, 10);
		on_cpu += n;
		if (strstr(line, "tc_stall_burn"))
			burning += n;
	}
	cr_assert_gt(on_cpu, 100, "on-CPU samples: %lu", on_cpu);
	cr_expect_geq(burning * 100, on_cpu * 80, "%lu of %lu on-CPU samples in tc_stall_burn", burning, on_cpu);
	free(out);
}
