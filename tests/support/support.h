/*
 * support.h — helpers shared by the Criterion suites: scratch directories,
 * running a program and capturing its output, waiting with a deadline.
 */
#ifndef TESTS_SUPPORT_H
#define TESTS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Creates a fresh directory under /tmp; returns a static-lifetime string
 * that the caller frees with ts_rmtree_free(). Aborts the test on failure. */
char *ts_tmpdir(const char *tag);
/* Removes dir and everything below it, then frees the string. */
void ts_rmtree_free(char *dir);

/* Runs argv (argv[0] is a path) with the current environment, waits at most
 * timeout_ms, captures stdout (NUL-terminated, caller frees) and returns the
 * exit status (0..255), or -1 if it timed out or was killed. */
int ts_run(char *const argv[], char **out, int timeout_ms);
/* ts_run for n commands at once, all within timeout_ms: outs[i] and rcs[i]
 * are argvs[i]'s (for checks that sample the same workers side by side). */
void ts_run_all(int n, char *const *const argvs[], char **outs, int *rcs, int timeout_ms);
/* ts_run_all of n shell command lines (sh -c). */
void ts_sh_all(int n, const char *const cmds[], char **outs, int *rcs, int timeout_ms);

/* Path of the loopstat binary under test: $LOOPSTAT_BIN or build/loopstat. */
const char *ts_loopstat_bin(void);

/* The whole file at path (tests run from the source tree), NUL-terminated;
 * the caller frees it. Fails the test when it cannot be read. */
char *ts_read_file(const char *path);
/* The fields of a /proc stat file (path) after its comm, from the state
 * letter on ("S 1 ..."), read into buf; NULL when it cannot be read (the
 * process or thread is gone). The comm may hold spaces and parentheses. */
const char *ts_stat_fields(const char *path, char *buf, size_t len);

/* read(2)-family calls (pread included) this thread has made so far, from
 * "syscr" of /proc/thread-self/io: differences count a code path's reads. */
long ts_read_calls(void);

/* Milliseconds on the monotonic clock. */
long long ts_now_ms(void);

/* Whether a sampled idle% agrees with the worker's own clock of its time in
 * its poll over about the same span: within err points above it, and below
 * it by err and at most the cpu_wait points the samples saw. A worker's
 * clock counts a wait for a CPU on waking as time in its poll (the poll
 * returns only once it runs); the samples rightly count it as runnable.
 * CPU taken by other work so moves both sides alike, and an unloaded
 * machine (no wait) is held to err either way. */
int ts_idle_agrees(double sampled, double own, double cpu_wait, double err);
/* CLOCK_MONOTONIC in ns (the clock poll_since_ns is written in). */
uint64_t ts_mono_ns(void);

/* Writes len bytes to a new file at path with mode 0600. Returns 0 or -errno. */
int ts_write_file(const char *path, const void *buf, size_t len);

/* Path of pid's published segment in dir ("loopstat.<pid>.<suffix>", or a
 * legacy "loopstat.<pid>") into buf. Returns 0, or -ENOENT if none. */
int ts_shm_segment(const char *dir, pid_t pid, char *buf, size_t len);

struct model;
struct worker_view;
/* The worker with thread id tid in m, or NULL. */
const struct worker_view *ts_find_tid(const struct model *m, pid_t tid);

/* Runs loopstat (ts_loopstat_bin) with the arguments up to a NULL (at most
 * 22) like ts_run; out may be NULL. */
int ts_loopstat(char **out, int timeout_ms, const char *a0, ...);
/* "dir/name", malloc'd. */
char *ts_path_in(const char *dir, const char *name);


#endif /* TESTS_SUPPORT_H */
