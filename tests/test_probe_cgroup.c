/* probe_cgroup against fixture trees (LOOPSTAT_PROC_ROOT, LOOPSTAT_SYS_ROOT): v2 on a unified and a hybrid host, v1 under cpu,cpuacct, no quota, and paths that must not be followed. */
#include <criterion/criterion.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "probe_cgroup.h"
#include "probe_proc.h"
#include "support/support.h"

static char *root;

static void setup(void)
{
	root = ts_tmpdir("cgroup");
	char p[4096];
	snprintf(p, sizeof(p), "%s/proc", root);
	setenv(PROBE_PROC_ROOT_ENV, p, 1);
	snprintf(p, sizeof(p), "%s/sys", root);
	setenv(PROBE_SYS_ROOT_ENV, p, 1);
}

static void teardown(void)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	unsetenv(PROBE_SYS_ROOT_ENV);
	ts_rmtree_free(root);
}

TestSuite(probe_cgroup, .init = setup, .fini = teardown, .timeout = 10);

/* Writes root/rel (making its directories) with text. */
static void put(const char *rel, const char *text)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = strchr(p + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	cr_assert_eq(ts_write_file(p, text, strlen(text)), 0, "%s", p);
}

static int read_pid(pid_t pid, struct probe_cgroup_cpu *c)
{
	char dir[PROBE_CGROUP_PATH_LEN];
	int v = probe_cgroup_cpu_dir(pid, dir, sizeof(dir));
	if (v > 0)
		cr_assert_eq(probe_cgroup_cpu_read(dir, v, c), 0, "reading %s", dir);
	return v;
}

Test(probe_cgroup, v2_unified_quota_and_throttling)
{
	put("proc/4242/cgroup", "0::/system.slice/nginx.service\n");
	put("sys/system.slice/nginx.service/cpu.max", "50000 100000\n");
	put("sys/system.slice/nginx.service/cpu.stat",
	    "usage_usec 900\nuser_usec 800\nsystem_usec 100\nnr_periods 10\nnr_throttled 4\nthrottled_usec 123456\n");
	struct probe_cgroup_cpu c;
	cr_assert_eq(read_pid(4242, &c), 2);
	cr_expect_float_eq(c.quota_cpus, 0.5, 1e-9);
	cr_expect_eq(c.throttled_ns, 123456000ull);
	cr_expect_eq(c.nr_throttled, 4);
}

Test(probe_cgroup, v2_on_a_hybrid_host_and_without_a_quota)
{
	put("proc/4243/cgroup", "12:pids:/x\n1:name=systemd:/x\n0::/kubepods/pod-1\n");
	put("sys/unified/kubepods/pod-1/cpu.max", "max 100000\n");
	put("sys/unified/kubepods/pod-1/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
	struct probe_cgroup_cpu c;
	cr_assert_eq(read_pid(4243, &c), 2);
	cr_expect(isnan(c.quota_cpus), "max: no quota, not %g", c.quota_cpus);
	cr_expect_eq(c.throttled_ns, 0);
}

Test(probe_cgroup, v1_cpu_controller)
{
	put("proc/4244/cgroup", "9:name=systemd:/\n3:cpu,cpuacct:/docker/abc123\n0::/\n");
	put("sys/cpu,cpuacct/docker/abc123/cpu.cfs_quota_us", "150000\n");
	put("sys/cpu,cpuacct/docker/abc123/cpu.cfs_period_us", "100000\n");
	put("sys/cpu,cpuacct/docker/abc123/cpu.stat", "nr_periods 100\nnr_throttled 7\nthrottled_time 2500000000\n");
	struct probe_cgroup_cpu c;
	cr_assert_eq(read_pid(4244, &c), 1);
	cr_expect_float_eq(c.quota_cpus, 1.5, 1e-9);
	cr_expect_eq(c.throttled_ns, 2500000000ull);
	cr_expect_eq(c.nr_throttled, 7);
	/* -1: no quota */
	put("sys/cpu,cpuacct/docker/abc123/cpu.cfs_quota_us", "-1\n");
	cr_assert_eq(read_pid(4244, &c), 1);
	cr_expect(isnan(c.quota_cpus));
}

Test(probe_cgroup, no_controller_and_paths_not_followed)
{
	put("proc/4245/cgroup", "4:memory:/a\n");
	char dir[PROBE_CGROUP_PATH_LEN];
	cr_expect_eq(probe_cgroup_cpu_dir(4245, dir, sizeof(dir)), -ENOENT);
	put("proc/4246/cgroup", "0::/../../etc\n");
	put("sys/../etc/cpu.max", "1 1\n");
	cr_expect_eq(probe_cgroup_cpu_dir(4246, dir, sizeof(dir)), -ENOENT, "a path with .. is followed");
	cr_expect_lt(probe_cgroup_cpu_dir(4247, dir, sizeof(dir)), 0, "no such process");
}
