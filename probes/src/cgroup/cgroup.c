/*
 * cgroup.c — a process's CPU quota and throttling (probe_cgroup.h).
 */
#include "probe_cgroup.h"
#include "probe_proc.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *sys_root(void)
{
	const char *root = getenv(PROBE_SYS_ROOT_ENV);
	return root && *root ? root : "/sys/fs/cgroup";
}

/* 1 when the comma-separated list holds name. */
static int has_controller(const char *list, size_t len, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list, *end = list + len; p < end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t l = comma ? (size_t)(comma - p) : (size_t)(end - p);
		if (l == n && memcmp(p, name, n) == 0)
			return 1;
		p += l + 1;
	}
	return 0;
}

/* root/mount/path/file exists: then dir is root/mount/path. */
static int try_dir(char *dir, size_t len, const char *mount, const char *path, const char *file)
{
	char probe[PROBE_CGROUP_PATH_LEN + 64];
	int n = snprintf(dir, len, "%s%s%s", sys_root(), mount, strcmp(path, "/") == 0 ? "" : path);
	if (n < 0 || (size_t)n >= len)
		return 0;
	snprintf(probe, sizeof(probe), "%s/%s", dir, file);
	return access(probe, R_OK) == 0;
}

int probe_cgroup_cpu_dir(pid_t pid, char *dir, size_t len)
{
	char path[64], text[4096];
	int err = probe_proc_path(path, sizeof(path), "%d/cgroup", (int)pid);
	if (err < 0)
		return err;
	ssize_t got = probe_read_file(path, text, sizeof(text));
	if (got < 0)
		return (int)got;
	char v1[PROBE_CGROUP_PATH_LEN] = "", v2[PROBE_CGROUP_PATH_LEN] = "";
	int have_v1 = 0, have_v2 = 0;
	for (char *line = text, *next; *line; line = next) {
		next = strchr(line, '\n');
		next = next ? (*next = '\0', next + 1) : line + strlen(line);
		/* hierarchy-ID:controller-list:path; the path is the rest (it may hold ':') */
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || c2[1] != '/' || strstr(c2 + 1, "/..") || strlen(c2 + 1) >= sizeof(v1))
			continue;
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(v2, sizeof(v2), "%s", c2 + 1);
			have_v2 = 1;
		} else if (has_controller(c1 + 1, (size_t)(c2 - c1 - 1), "cpu")) {
			snprintf(v1, sizeof(v1), "%s", c2 + 1);
			have_v1 = 1;
		}
	}
	/* v2 where it has the cpu controller (cpu.max), else v1's */
	if (have_v2 && (try_dir(dir, len, "", v2, "cpu.max") || try_dir(dir, len, "/unified", v2, "cpu.max")))
		return 2;
	if (have_v1 && (try_dir(dir, len, "/cpu", v1, "cpu.cfs_quota_us") ||
			try_dir(dir, len, "/cpu,cpuacct", v1, "cpu.cfs_quota_us")))
		return 1;
	return -ENOENT;
}

/* The value of key in a "key value" per line file, or -1. */
static int64_t stat_field(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, n) == 0 && p[n] == ' ')
			return strtoll(p + n + 1, NULL, 10);
	return -1;
}

static int read_in(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PROBE_CGROUP_PATH_LEN + 64];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	ssize_t got = probe_read_file(path, buf, len);
	return got < 0 ? (int)got : 0;
}

int probe_cgroup_cpu_read(const char *dir, int version, struct probe_cgroup_cpu *out)
{
	char quota[128], period[64], stat[1024];
	int err;
	*out = (struct probe_cgroup_cpu){ .quota_cpus = NAN };
	if (version == 2) {
		/* cpu.max: "max 100000" or "20000 100000" */
		if ((err = read_in(dir, "cpu.max", quota, sizeof(quota))) < 0 ||
		    (err = read_in(dir, "cpu.stat", stat, sizeof(stat))) < 0)
			return err;
		long long q, p;
		if (sscanf(quota, "%lld %lld", &q, &p) == 2 && q > 0 && p > 0)
			out->quota_cpus = (double)q / (double)p;
		int64_t us = stat_field(stat, "throttled_usec");
		out->throttled_ns = us > 0 ? (uint64_t)us * 1000 : 0;
	} else if (version == 1) {
		if ((err = read_in(dir, "cpu.cfs_quota_us", quota, sizeof(quota))) < 0 ||
		    (err = read_in(dir, "cpu.cfs_period_us", period, sizeof(period))) < 0 ||
		    (err = read_in(dir, "cpu.stat", stat, sizeof(stat))) < 0)
			return err;
		long long q = strtoll(quota, NULL, 10), p = strtoll(period, NULL, 10);
		if (q > 0 && p > 0)   /* -1: no quota */
			out->quota_cpus = (double)q / (double)p;
		int64_t ns = stat_field(stat, "throttled_time");
		out->throttled_ns = ns > 0 ? (uint64_t)ns : 0;
	} else {
		return -EINVAL;
	}
	int64_t nr = stat_field(stat, "nr_throttled");
	out->nr_throttled = nr > 0 ? (uint64_t)nr : 0;
	return 0;
}

int probe_cgroup_procs(const char *dir, pid_t *pids, int cap)
{
	char path[PROBE_CGROUP_PATH_LEN + 64];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	int n = 0;
	long pid;
	while (n < cap && fscanf(f, "%ld", &pid) == 1)
		if (pid > 0 && pid <= INT32_MAX)
			pids[n++] = (pid_t)pid;
	fclose(f);
	return n;
}

const char *probe_cgroup_name(const char *dir)
{
	static const char *const mounts[] = { "/cpu,cpuacct", "/cpu", "/unified" };
	const char *root = sys_root();
	size_t rl = strlen(root);
	if (strncmp(dir, root, rl) != 0)
		return dir;
	dir += rl;
	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		size_t ml = strlen(mounts[i]);
		if (strncmp(dir, mounts[i], ml) == 0 && (dir[ml] == '/' || dir[ml] == '\0')) {
			dir += ml;
			break;
		}
	}
	return *dir ? dir : "/";
}
