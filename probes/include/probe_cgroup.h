/*
 * probe_cgroup.h — a process's CPU quota and its throttling, from the cpu
 * controller of its cgroup: v2 (cpu.max, cpu.stat throttled_usec) or v1
 * (cpu.cfs_quota_us / cpu.cfs_period_us, cpu.stat throttled_time).
 *
 * The cgroup filesystem's root is $LOOPSTAT_SYS_ROOT if set, else
 * /sys/fs/cgroup (tests point it at fixture trees, as LOOPSTAT_PROC_ROOT
 * for /proc). Under it the v1 cpu controller is at cpu/ or cpu,cpuacct/,
 * v2 at the root (a unified host) or at unified/ (a hybrid one).
 */
#ifndef PROBE_CGROUP_H
#define PROBE_CGROUP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROBE_SYS_ROOT_ENV "LOOPSTAT_SYS_ROOT"
#define PROBE_CGROUP_PATH_LEN 512

struct probe_cgroup_cpu {
	double   quota_cpus;     /* quota over period; NaN: no quota */
	uint64_t throttled_ns;   /* time the group was held back by its quota, since it was made */
	uint64_t nr_throttled;   /* periods it was */
};

/* The directory of pid's cpu controller into dir, and its version (1 or
 * 2) as the return value; -ENOENT when pid's cgroup has no cpu controller
 * this host mounts, -errno when /proc/PID/cgroup cannot be read. */
int probe_cgroup_cpu_dir(pid_t pid, char *dir, size_t len);

/* Reads the group at dir (from probe_cgroup_cpu_dir, of that version).
 * 0 or -errno. */
int probe_cgroup_cpu_read(const char *dir, int version, struct probe_cgroup_cpu *out);

/* The processes in the group at dir (its cgroup.procs), at most cap of
 * them: how many were listed (up to cap), or -errno. */
int probe_cgroup_procs(const char *dir, pid_t *pids, int cap);

/* The group's path as /proc/PID/cgroup names it ("/system.slice/x.service"):
 * dir without the cgroup root and the v1 controller's or v2's mount ("/"
 * for the root). Points into dir. */
const char *probe_cgroup_name(const char *dir);

#endif /* PROBE_CGROUP_H */
