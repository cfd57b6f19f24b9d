/* The build itself: a plain `make` in a clean clone builds build/loopstat (its default goal is `all`). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/support.h"

/* A dry run is enough to judge the goal: it prints every command `make`
 * would run, and a clone has no build directory, so all of them. */
Test(build, plain_make_in_a_clean_clone_links_loopstat, .timeout = 60)
{
	if (access(".git", F_OK) != 0)
		cr_skip_test("not a git checkout: no clone to make");
	char *dir = ts_tmpdir("build");
	char cmd[4096], *out = NULL;
	snprintf(cmd, sizeof(cmd), "git clone -q --shared . %s/clone && make -n -C %s/clone 2>&1", dir, dir);
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 50000);
	cr_assert_eq(rc, 0, "clone or make -n failed (%d): %s", rc, out ? out : "");
	cr_assert(strstr(out, "-o build/loopstat "), "plain make would not link build/loopstat:\n%.2000s", out);
	cr_assert(strstr(out, "build/libfiberloop.so.0"), "plain make would not build the runtime library");
	free(out);
	ts_rmtree_free(dir);
}
