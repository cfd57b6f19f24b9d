/*
 * access.c — naming what refuses us a target, from what /proc shows.
 */
#include "probe_access.h"
#include "probe_proc.h"
#include "probe_syscall.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Yama's scope: 0 classic, 1 descendants only, 2 admin only, 3 none; -1 without Yama. */
static int yama_scope(void)
{
	char path[256], buf[16];
	if (probe_proc_path(path, sizeof(path), "sys/kernel/yama/ptrace_scope") < 0 ||
	    probe_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return atoi(buf);
}

#define CAP_SYS_PTRACE_BIT 19   /* linux/capability.h */

/* From our own status file's CapEff mask: no libcap needed for one bit. */
static int have_cap_sys_ptrace(void)
{
	char path[256], buf[4096];
	if (probe_proc_path(path, sizeof(path), "self/status") < 0 || probe_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	const char *p = strstr(buf, "\nCapEff:");
	return p && (strtoull(p + 9, NULL, 16) >> CAP_SYS_PTRACE_BIT & 1);
}

static const char *user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd pw, *r = NULL;
	char tmp[1024];
	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &r) == 0 && r)
		snprintf(buf, len, "%s", r->pw_name);
	else
		snprintf(buf, len, "%u", (unsigned)uid);
	return buf;
}

void probe_access_explain(pid_t pid, char *buf, size_t len)
{
	char path[256], who[64];
	struct stat st;
	uid_t me = geteuid();
	int scope = yama_scope(), cap = have_cap_sys_ptrace();
	int known = probe_proc_path(path, sizeof(path), "%d", (int)pid) >= 0 && stat(path, &st) == 0;

	if (scope == 3)
		snprintf(buf, len, "pid %d: kernel.yama.ptrace_scope=3 refuses every reader, root included: "
			 "set it lower (it cannot be lowered again without a reboot)", (int)pid);
	else if (cap && scope <= 2)
		snprintf(buf, len, "pid %d: refused even with CAP_SYS_PTRACE: a security module (AppArmor, "
			 "SELinux) or a seccomp profile blocks ptrace-read access; %s", (int)pid,
			 probe_no_access_text());
	else if (me == 0 && !cap)
		snprintf(buf, len, "pid %d: loopstat runs as root without CAP_SYS_PTRACE (a container?): give it "
			 "the capability (docker run --cap-add SYS_PTRACE, or setcap cap_sys_ptrace+ep)", (int)pid);
	else if (known && st.st_uid != me && st.st_uid == 0)
		snprintf(buf, len, "pid %d runs as root (or is not dumpable): run loopstat as root or with "
			 "CAP_SYS_PTRACE (sudo loopstat ...)", (int)pid);
	else if (known && st.st_uid != me)
		snprintf(buf, len, "pid %d belongs to user %s: run loopstat as that user (sudo -u %s loopstat ...), "
			 "as root, or with CAP_SYS_PTRACE", (int)pid, user_name(st.st_uid, who, sizeof(who)), who);
	else if (scope == 2)
		snprintf(buf, len, "pid %d: kernel.yama.ptrace_scope=2 lets only CAP_SYS_PTRACE read other "
			 "processes: run loopstat as root (sudo loopstat ...)", (int)pid);
	else if (scope == 1)
		snprintf(buf, len, "pid %d: kernel.yama.ptrace_scope=1 lets a user read only its own "
			 "descendants: run loopstat as root, set the sysctl to 0, or have the worker call "
			 "prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY)", (int)pid);
	else
		snprintf(buf, len, "pid %d: %s", (int)pid, probe_no_access_text());
}
