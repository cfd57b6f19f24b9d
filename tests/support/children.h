/*
 * children.h — child processes with known behaviour for sampler tests.
 */
#ifndef TESTS_CHILDREN_H
#define TESTS_CHILDREN_H

#include <sys/types.h>

/*
 * Forks a child that runs an event loop for `seconds`: each 10 ms period it
 * works (spins) for (1 - idle_frac) of the period and waits in epoll_wait
 * for the rest. At the end it writes its own measure of the idle fraction
 * (time inside epoll_wait / wall time, a double) to the returned pipe fd
 * *report_fd, then exits. Returns the child's pid.
 */
pid_t tc_spawn_epoll_cycle(double idle_frac, double seconds, int *report_fd);

/* Forks a child blocked in read(2) on a pipe until killed; *pipe_fd_in_child
 * is the fd number it reads from, *write_end the parent's end, which must
 * stay open while the child should block. Returns the pid. */
pid_t tc_spawn_blocked_read(int *pipe_fd_in_child, int *write_end);

/* Kills and reaps a child. */
void tc_kill(pid_t pid);

#endif /* TESTS_CHILDREN_H */
