/*
 * probe_child.h — real child processes parked in known syscalls, for the
 * probe tests. A child tells the parent it is about to enter its syscall by
 * writing one byte; the parent then polls the probe with a deadline until
 * the child is really inside it (never a blind sleep).
 */
#ifndef TEST_PROBE_CHILD_H
#define TEST_PROBE_CHILD_H

#include <stdint.h>
#include <sys/types.h>

#include "probe_syscall.h"

/* One timeout for every probe test: Criterion 2.4.1's runner leaks a timer
 * entry (LSan reports 48 bytes) when tests with different timeouts run in
 * parallel, which fails the ASan build. */
#define PROBE_TEST_TIMEOUT 30

/* The child's body: set up, call tchild_ready(ready_fd), then block. */
typedef void (*tchild_park_fn)(void *arg, int ready_fd);

/* Forks a child that runs park(arg, ready_fd) and dies with its parent
 * (PR_SET_PDEATHSIG), so a failed assertion leaks no process. Waits up to
 * 5 s for its ready byte. Returns the pid, or -1. */
pid_t tchild_fork(tchild_park_fn park, void *arg);

/* In the child: signal the parent that the next call is the parked one. */
void tchild_ready(int ready_fd);

/* SIGKILL and reap. */
void tchild_reap(pid_t pid);

/* Samples p every 200 µs until its state is want, for at most timeout_ms.
 * Returns 0 with the sample in out, or -ETIMEDOUT (out = last sample). */
int tchild_wait_state(struct probe_syscall *p, enum probe_sc_state want, int timeout_ms,
		      struct probe_sc_sample *out);

/* Parkers for tchild_fork (arg unused): a busy loop that never enters a
 * syscall, pause(2), and clock_nanosleep(2) for an hour at a time. */
void tchild_park_busy(void *arg, int ready_fd);
void tchild_park_pause(void *arg, int ready_fd);
void tchild_park_sleep(void *arg, int ready_fd);
/* Parkers on an fd passed as arg with TCHILD_FD(fd): a blocking read(2)
 * of one byte at a time, and epoll_wait(2) with no timeout. */
#define TCHILD_FD(fd) ((void *)(intptr_t)(fd))
void tchild_park_read(void *arg, int ready_fd);
void tchild_park_epoll_wait(void *arg, int ready_fd);

/* Skips the calling test when a batch's ring was refused (r from
 * probe_sc_batch_ring: -ENOSYS, -EPERM, -EACCES: no io_uring in this kernel
 * or under this seccomp profile); fails it for any other r but 1. */
void tchild_need_ring(int r);

/* Creates an empty temporary directory (for fixture proc trees) and
 * writes files below it. tchild_fixture_write creates parent dirs. */
int tchild_fixture_dir(char *buf, size_t len);
int tchild_fixture_write(const char *root, const char *rel, const char *text);
int tchild_fixture_write_n(const char *root, const char *rel, const char *data, size_t len);
int tchild_fixture_symlink(const char *root, const char *rel, const char *target);
void tchild_fixture_remove(const char *root);

#endif /* TEST_PROBE_CHILD_H */
