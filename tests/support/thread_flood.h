/*
 * thread_flood.h — a process of thousands of parked threads, as a local
 * user can start: loop threads each waiting for good in epoll_wait, and a
 * helper pool's threads waiting on one futex word. For the suites that
 * hold loopstat's own costs (fds, memory) to a bound under such a flood.
 */
#ifndef TESTS_THREAD_FLOOD_H
#define TESTS_THREAD_FLOOD_H

#include <sys/types.h>

/* Starts the child (killed when the test process dies, as user `become`
 * makes it when not NULL: run in the child first, 0 or -errno) with
 * `loops` epoll threads and `pool` futex threads of 64 KB stacks; returns
 * its pid once every thread was made, or fails the test. Stop it with
 * tc_kill. */
pid_t tflood_start(unsigned loops, unsigned pool, int (*become)(void *arg), void *arg);

#endif /* TESTS_THREAD_FLOOD_H */
