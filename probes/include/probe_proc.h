/*
 * probe_proc.h — where /proc is, and reading small /proc files.
 *
 * Every /proc path in libprobes is built here, from the proc root:
 * $LOOPSTAT_PROC_ROOT if set, else "/proc". Tests point it at fixture trees.
 */
#ifndef PROBE_PROC_H
#define PROBE_PROC_H

#include <stddef.h>
#include <sys/types.h>

#define PROBE_PROC_ROOT_ENV "LOOPSTAT_PROC_ROOT"

/* The proc root, read from the environment at each call (cheap; tests
 * change it between cases). Borrowed. */
const char *probe_proc_root(void);

/* Formats "<root>/<fmt...>" into buf. Returns the length or -ENAMETOOLONG. */
int probe_proc_path(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reads a whole small file into buf (NUL-terminated, at most len-1 bytes).
 * Returns the number of bytes read or -errno. */
ssize_t probe_read_file(const char *path, char *buf, size_t len);

/* How many threads pid has, from one stat(2) of <root>/PID/task (procfs
 * counts them in its link count: 2 + threads), or -errno. Cheaper than
 * listing the directory, to tell when a thread list has changed. */
int probe_proc_nthreads(pid_t pid);

#endif /* PROBE_PROC_H */
