/* --source's default: auto (bpf as root where it loads, proc with the reason as nobody), LOOPSTAT_SOURCE another, in list and export alike. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe_bpf.h"
#include "support/children.h"
#include "support/support.h"
#include "support/users.h"

/* run-tests.sh pins proc for the other suites: this one tests the default */
static void setup(void)
{
	unsetenv("LOOPSTAT_SOURCE");
}

TestSuite(source_default, .init = setup, .timeout = 60);

/* list -j ARGS for 1 s of a parked child, env a prefix of its command,
 * the whole run under wrap: exit 4 (no worker), the JSON saying the source
 * and, when why is not NULL, why auto fell back (else no reason at all). */
static void expect_source(const char *wrap, const char *env, const char *args, const char *source, const char *why)
{
	char cmd[512], want[256], *out = NULL;
	snprintf(cmd, sizeof(cmd), "%s sh -c 'sleep 20 & p=$!; %s \"%s\" list -j %s --duration 1 -p $p 2>&1; r=$?; "
		 "kill $p; exit $r'", wrap, env, ts_loopstat_bin(), args);
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(sh, &out, 30000);
	cr_assert_eq(rc, 4, "%s: exit %d: %s", cmd, rc, out);
	snprintf(want, sizeof(want), "\"source\":\"%s\"", source);
	cr_expect(strstr(out, want), "%s: %s", cmd, out);
	snprintf(want, sizeof(want), "\"source_why\":\"%s\"", why ? why : "");
	cr_expect(why ? strstr(out, want) != NULL : strstr(out, "\"source_why\"") == NULL, "%s: %s", cmd, out);
	free(out);
}

Test(source_default, root_takes_bpf_where_it_loads)
{
	char why[256];
	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("bpf unavailable: %s", why);
	expect_source("", "", "", "bpf", NULL);
}

/* LOOPSTAT_SOURCE sets the default: proc is taken as told (nothing to
 * explain), --source wins over it, and a value that is no source is a
 * usage error. */
Test(source_default, the_environment_sets_another)
{
	expect_source("", "LOOPSTAT_SOURCE=proc", "", "proc", NULL);
	expect_source("", "LOOPSTAT_SOURCE=bpf", "--source proc", "proc", NULL);
	char cmd[512], *out = NULL;
	snprintf(cmd, sizeof(cmd), "LOOPSTAT_SOURCE=kernel \"%s\" list -p 1 2>&1", ts_loopstat_bin());
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(sh, &out, 10000);
	cr_expect_eq(rc, 2, "%d: %s", rc, out);
	cr_expect(strstr(out, "loopstat list: invalid LOOPSTAT_SOURCE 'kernel': expected auto, bpf or proc"), "%s", out);
	free(out);
}

/* As nobody, watching a process of its own, with no --source: proc, and why. */
Test(source_default, nobody_falls_back_to_proc_and_says_why)
{
	ts_need_nobody();
	expect_source("exec " TS_AS_NOBODY, "", "", "proc",
		      "bpf unavailable: not root and no CAP_BPF + CAP_PERFMON");
}

/* export takes the same default (its source point says which), and its
 * config file's `source` key yields to --source on the command line. */
Test(source_default, export_takes_it_and_its_config_key)
{
	char why[256];
	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("bpf unavailable: %s", why);
	int out_fd;
	const char *args[] = { "--case", "nested", "--seconds", "30", NULL };
	pid_t pid = tc_spawn_example("loop_truth", args, &out_fd);
	char dir[] = "/tmp/loopstat-source-XXXXXX", cmd[1024], *out = NULL;
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "echo 'source = proc' > %s/export.conf; b=\"%s\"; e=\"export --dry-run --duration 1 -p %d\"; "
		 "$b $e | grep -o '[.]source[.][a-z]*'; "
		 "$b $e --config %s/export.conf | grep -o '[.]source[.][a-z]*'; "
		 "$b $e --config %s/export.conf --source auto | grep -o '[.]source[.][a-z]*'; rm -r %s",
		 dir, ts_loopstat_bin(), (int)pid, dir, dir, dir);
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(sh, &out, 30000);
	tc_kill(pid);
	close(out_fd);
	cr_assert_eq(rc, 0, "%d: %s", rc, out);
	cr_expect_str_eq(out, ".source.bpf\n.source.proc\n.source.bpf\n");
	free(out);
}
