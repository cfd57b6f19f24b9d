/*
 * probe_stat.h — /proc/PID[/task/TID]/stat, parsed without allocating.
 */
#ifndef PROBE_STAT_H
#define PROBE_STAT_H

#include <stdint.h>
#include <sys/types.h>

#define PROBE_COMM_LEN 64

struct probe_stat {
	char     comm[PROBE_COMM_LEN]; /* field 2 without the parentheses; may hold spaces and ')' */
	char     state;                /* field 3: R, S, D, Z, T, t, X, I */
	int      ppid;                 /* field 4 */
	unsigned flags;                /* field 9: the kernel's PF_* bits */
	uint64_t utime;                /* field 14, clock ticks */
	uint64_t stime;                /* field 15, clock ticks */
	int      threads;              /* field 20 */
	uint64_t start_time;           /* field 22, clock ticks after boot */
	/*
	 * Where the memory image's parts start and end (fields 26-28 startcode,
	 * endcode, startstack; 45-51 start_data, end_data, start_brk, arg_start,
	 * arg_end, env_start, env_end), in PROBE_STAT_IMAGE_* order. execve()
	 * sets them all anew. 0 or 1 when the kernel hides them (the reader
	 * may not ptrace the task) and 0 when the line is too short (old kernel).
	 */
	uint64_t image[10];
};

#define PROBE_STAT_IMAGE_FIELDS 10

/* flags: PF_KTHREAD, a kernel thread (its syscall file reads all zeros:
 * it has no event loop, nothing of it can be measured) */
#define PROBE_STAT_KTHREAD 0x00200000u

/* Parses the text of a stat file. comm is taken up to the LAST ')', since a
 * process can name itself ") (". Fields 4-22 must be there; the image
 * fields are optional (0 when missing). Returns 0 or -EINVAL. */
int probe_stat_parse(const char *text, struct probe_stat *out);

/* Reads and parses <root>/PID/stat (tid <= 0) or <root>/PID/task/TID/stat.
 * Returns 0, -ESRCH when the task is gone, -EACCES, or -EINVAL. */
int probe_stat_read(pid_t pid, pid_t tid, struct probe_stat *out);

#endif /* PROBE_STAT_H */
