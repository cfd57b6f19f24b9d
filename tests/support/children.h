/*
 * children.h — child processes with known behaviour for sampler tests.
 */
#ifndef TESTS_CHILDREN_H
#define TESTS_CHILDREN_H

#include <stdint.h>
#include <sys/types.h>

#include "loopstat_shm.h"

/*
 * Starts build/examples/NAME (next to $LOOPSTAT_BIN) with args (NULL-
 * terminated, at most 14), its stdout on a pipe returned in *stdout_fd (or
 * closed if NULL). The child dies with the test. Returns the pid.
 */
pid_t tc_spawn_example(const char *name, const char *const args[], int *stdout_fd);

/* tc_spawn_example of any program: argv[0] is its path, run with the
 * test's environment. */
pid_t tc_spawn_argv(const char *const argv[], int *stdout_fd);

/* tc_spawn_example, returned once the example's segment is in shm_dir
 * (within 3 s, or the test fails). */
pid_t tc_spawn_published(const char *name, const char *const args[], const char *shm_dir, int *stdout_fd);

/* Reads an example's "self_idle_pct X" line (duty_cycle prints it at exit)
 * within timeout_ms; fails the test if it does not come. */
double tc_read_self_idle(int fd, int timeout_ms);

/* Forks a child blocked in read(2) on a pipe until killed; *pipe_fd_in_child
 * is the fd number it reads from, *write_end the parent's end, which must
 * stay open while the child should block. Returns the pid. */
pid_t tc_spawn_blocked_read(int *pipe_fd_in_child, int *write_end);

/* Forks a libfiberloop worker (loop tag `tag`) that, `rounds` times,
 * sleeps idle_s in its loop and then runs a fiber tagged "hog" that spins
 * hog_s without yielding (a stall), and then idles for good. Returns the pid. */
pid_t tc_spawn_hogger(const char *tag, double idle_s, double hog_s, int rounds);
/* tc_spawn_hogger, and the child writes the CLOCK_MONOTONIC second each hog
 * starts at, by its own clock, to *hog_at: memory it shares with the test
 * (mmap MAP_SHARED | MAP_ANONYMOUS), 0 until the first hog. */
pid_t tc_spawn_hogger_clocked(const char *tag, double idle_s, double hog_s, int rounds, volatile double *hog_at);

/* Forks a libfiberloop worker named comm (PR_SET_NAME: the kernel keeps 15
 * bytes, whatever they are) whose loop is tagged loop_tag and whose one
 * fiber, tagged fiber_tag, spins 20 ms of every 50 ms, so samples find it
 * running. Returns once the fiber runs (its segment is published). */
pid_t tc_spawn_named(const char *comm, const char *loop_tag, const char *fiber_tag);

/* The spans of a tc_spawn_named worker's fiber by its own clock, from its
 * resume to its yield, counted in the runtime's buckets (span_h<k>). */
struct tc_spans {
	volatile uint64_t n[LOOPSTAT_SPAN_BUCKETS];
};

/* tc_spawn_named, the fiber counting its spans in *spans: memory shared
 * with the test (tc_spans_new). */
pid_t tc_spawn_named_clocked(const char *comm, const char *loop_tag, const char *fiber_tag, struct tc_spans *spans);
/* A zeroed tc_spans shared with children forked after; tc_spans_delete unmaps it. */
struct tc_spans *tc_spans_new(void);
void tc_spans_delete(struct tc_spans *spans);

/* Forks a plain epoll loop (no runtime) that waits idle_s in epoll_wait,
 * then burns burn_s of CPU in a function of its own, tc_stall_burn, over
 * and over. Returns the pid. */
pid_t tc_spawn_burner(double idle_s, double burn_s);

/* fork() for a child that must not outlive the test: in the child, killed
 * (SIGKILL) when the test process dies, and gone at once if it already
 * has. Fails the test when fork fails; returns as fork does. */
pid_t tc_fork(void);

struct ts_user;
/* Starts argv (looked up in PATH unless it names a path) with stdin,
 * stdout and stderr on /dev/null, as user `as` when not NULL, killed when
 * the test process dies. */
pid_t tc_spawn_quiet(char *const argv[], const struct ts_user *as);
/* Waits up to 10 s for something to listen on 127.0.0.1:port; fails the
 * test (naming what) when nothing does. */
void tc_wait_listen(int port, const char *what);

/* Kills and reaps a child. */
void tc_kill(pid_t pid);
/* tc_kill of each of the n pids that is > 0 (a table of children some of
 * which were never started). */
void tc_kill_all(const pid_t *pids, int n);

#endif /* TESTS_CHILDREN_H */
