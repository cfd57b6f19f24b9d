/*
 * discover.c — processes by pid or name pattern, threads of a process.
 */
#include "probe_discover.h"
#include "probe_proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libproc2/pids.h>

#if defined(__SANITIZE_ADDRESS__)
/*
 * libproc2 (procps 4.0.x, readproc.c) keeps two 128 KiB buffers in
 * __thread pointers ("static __thread char *src_buffer, *dst_buffer"),
 * allocated on a thread's first openproc() and never freed: there is no
 * call to release them, so when that thread (the sampler) exits they are
 * lost — reported once per thread, not per call (procps_pids_unref() below
 * frees everything else). LeakSanitizer's built-in suppressions hook keeps
 * that one known leak from failing every ASan binary that links libprobes;
 * weak, so that a program with suppressions of its own (the tests) defines
 * the hook itself and includes PROBE_LSAN_SUPPRESSIONS.
 */
__attribute__((visibility("default"), weak)) const char *__lsan_default_suppressions(void);
__attribute__((visibility("default"), weak)) const char *__lsan_default_suppressions(void)
{
	return PROBE_LSAN_SUPPRESSIONS;
}

/* and without the "Suppressions used" table on stderr that a CLI test reads */
__attribute__((visibility("default"), weak)) const char *__lsan_default_options(void);
__attribute__((visibility("default"), weak)) const char *__lsan_default_options(void)
{
	return "print_suppressions=0";
}
#endif

/* Command lines longer than this are matched on their first 4 KiB. */
#define CMDLINE_MAX 4096

int probe_matcher_init_why(struct probe_matcher *m, const char *pattern, unsigned what, char *why, size_t len)
{
	m->what = what & (PROBE_MATCH_COMM | PROBE_MATCH_CMDLINE);
	if (!m->what || !pattern) {
		if (why && len)
			snprintf(why, len, "%s", pattern ? "nothing to match against" : "no pattern");
		return -EINVAL;
	}
	int rc = regcomp(&m->re, pattern, REG_EXTENDED | REG_NOSUB);
	if (rc == 0)
		return 0;
	if (why && len)
		regerror(rc, &m->re, why, len);
	return -EINVAL;
}

int probe_matcher_init(struct probe_matcher *m, const char *pattern, unsigned what)
{
	return probe_matcher_init_why(m, pattern, what, NULL, 0);
}

void probe_matcher_done(struct probe_matcher *m)
{
	regfree(&m->re);
	m->what = 0;
}

static int matches(const struct probe_matcher *m, const char *comm, const char *cmdline)
{
	if ((m->what & PROBE_MATCH_COMM) && comm && regexec(&m->re, comm, 0, NULL, 0) == 0)
		return 1;
	return (m->what & PROBE_MATCH_CMDLINE) && cmdline && regexec(&m->re, cmdline, 0, NULL, 0) == 0;
}

/* A /proc directory entry that is a pid, or 0. */
static pid_t entry_pid(const char *name)
{
	long v = 0;
	if (!*name)
		return 0;
	for (const char *s = name; *s; s++) {
		if (*s < '0' || *s > '9' || v > INT_MAX / 10)
			return 0;
		v = v * 10 + (*s - '0');
	}
	return (pid_t)v;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static int cmp_info(const void *a, const void *b)
{
	return cmp_pid(&((const struct probe_proc_info *)a)->pid, &((const struct probe_proc_info *)b)->pid);
}

static void fill_info(struct probe_proc_info *out, pid_t pid, const struct probe_stat *st)
{
	out->pid = pid;
	out->start_time = st->start_time;
	out->threads = st->threads;
	memcpy(out->comm, st->comm, sizeof(out->comm));
}

/* <root>/PID/cmdline with NULs turned into spaces; "" when unreadable
 * (kernel threads have an empty command line). */
static void read_cmdline(pid_t pid, char *buf, size_t len)
{
	char path[PATH_MAX];
	buf[0] = '\0';
	if (probe_proc_path(path, sizeof(path), "%d/cmdline", (int)pid) < 0)
		return;
	ssize_t n = probe_read_file(path, buf, len);
	if (n <= 0) {
		buf[0] = '\0';
		return;
	}
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
}

/* The fixture-tree path: readdir + stat + cmdline per process. */
static int match_direct(const struct probe_matcher *m, struct probe_proc_info *out, size_t cap)
{
	char *cmdline = NULL;
	int found = 0;
	DIR *dir = opendir(probe_proc_root());
	if (!dir)
		return -errno;
	if (m->what & PROBE_MATCH_CMDLINE) {
		cmdline = malloc(CMDLINE_MAX);
		if (!cmdline) {
			found = -ENOMEM;
			goto close_dir;
		}
	}
	pid_t self = getpid();
	struct dirent *de;
	while ((de = readdir(dir))) {
		pid_t pid = entry_pid(de->d_name);
		struct probe_stat st;
		if (pid <= 0 || pid == self || probe_stat_read(pid, 0, &st) < 0 || (st.flags & PROBE_STAT_KTHREAD))
			continue;
		if (cmdline)
			read_cmdline(pid, cmdline, CMDLINE_MAX);
		if (!matches(m, st.comm, cmdline))
			continue;
		if ((size_t)found < cap)
			fill_info(&out[found], pid, &st);
		found++;
	}
	free(cmdline);
close_dir:
	closedir(dir);
	if (found > 0)
		qsort(out, (size_t)found < cap ? (size_t)found : cap, sizeof(*out), cmp_info);
	return found;
}

/* The real-/proc path: one libproc2 reap of every process. */
static int match_libproc2(const struct probe_matcher *m, struct probe_proc_info *out, size_t cap)
{
	enum pids_item items[] = { PIDS_ID_PID, PIDS_CMD, PIDS_CMDLINE, PIDS_TICS_BEGAN, PIDS_NLWP, PIDS_FLAGS };
	enum { I_PID, I_CMD, I_CMDLINE, I_BEGAN, I_NLWP, I_FLAGS };
	struct pids_info *info = NULL;
	int found = 0;

	int err = procps_pids_new(&info, items, (int)(sizeof(items) / sizeof(items[0])));
	if (err < 0)
		return err;
	struct pids_fetch *fetch = procps_pids_reap(info, PIDS_FETCH_TASKS_ONLY);
	if (!fetch) {
		found = errno ? -errno : -EIO;
		goto unref;
	}
	pid_t self = getpid();
	for (int i = 0; i < fetch->counts->total; i++) {
		struct pids_stack *s = fetch->stacks[i];
		pid_t pid = PIDS_VAL(I_PID, s_int, s, info);
		const char *comm = PIDS_VAL(I_CMD, str, s, info);
		const char *cmdline = PIDS_VAL(I_CMDLINE, str, s, info);
		if (pid == self || (PIDS_VAL(I_FLAGS, ul_int, s, info) & PROBE_STAT_KTHREAD) || !matches(m, comm, cmdline))
			continue;
		if ((size_t)found < cap) {
			struct probe_proc_info *o = &out[found];
			o->pid = pid;
			o->start_time = PIDS_VAL(I_BEGAN, ull_int, s, info);
			o->threads = PIDS_VAL(I_NLWP, s_int, s, info);
			snprintf(o->comm, sizeof(o->comm), "%s", comm ? comm : "");
		}
		found++;
	}
	if (found > 0)
		qsort(out, (size_t)found < cap ? (size_t)found : cap, sizeof(*out), cmp_info);
unref:
	procps_pids_unref(&info);
	return found;
}

int probe_discover_match(const struct probe_matcher *m, struct probe_proc_info *out, size_t cap)
{
	if (!m->what)
		return -EINVAL;
	if (strcmp(probe_proc_root(), "/proc") == 0)
		return match_libproc2(m, out, cap);
	return match_direct(m, out, cap);
}

int probe_discover_pids(const pid_t *pids, size_t n, struct probe_proc_info *out)
{
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		struct probe_stat st;
		if (pids[i] <= 0 || probe_stat_read(pids[i], 0, &st) < 0 || (st.flags & PROBE_STAT_KTHREAD))
			continue;
		fill_info(&out[found++], pids[i], &st);
	}
	return found;
}

int probe_discover_threads(pid_t pid, pid_t *tids, size_t cap)
{
	char path[PATH_MAX];
	int err = probe_proc_path(path, sizeof(path), "%d/task", (int)pid);
	if (err < 0)
		return err;
	DIR *dir = opendir(path);
	if (!dir)
		return errno == ENOENT ? -ESRCH : -errno;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		pid_t tid = entry_pid(de->d_name);
		if (tid <= 0)
			continue;
		if ((size_t)n < cap)
			tids[n] = tid;
		n++;
	}
	closedir(dir);
	qsort(tids, (size_t)n < cap ? (size_t)n : cap, sizeof(*tids), cmp_pid);
	return n;
}
