/*
 * probe_waitset.h — what a loop waits on, by kind: the fds an epoll fd
 * watches (the "tfd:" lines of /proc/PID/fdinfo/EPFD) or a poll set names,
 * each resolved by readlink. It tells a server's or a client's loop (a
 * socket), a shell's (a terminal) and a runtime's secondary loop that only
 * waits for wake-ups from its own process (pipes, eventfds, timerfds).
 */
#ifndef PROBE_WAITSET_H
#define PROBE_WAITSET_H

#include <sys/types.h>

#define PROBE_WAITS_SOCKET   1u   /* a socket */
#define PROBE_WAITS_TERMINAL 2u   /* a terminal: /dev/pts/N, /dev/ttyN, /dev/ptmx, /dev/console */
#define PROBE_WAITS_INTERNAL 4u   /* a pipe or an anonymous inode (eventfd, timerfd, signalfd) */
#define PROBE_WAITS_OTHER    8u   /* a file, a device, a nested epoll or ring fd */

#define PROBE_WAITSET_MAX 64      /* fds of an epoll set looked at, at most */

/* 1 when a /proc/PID/fd link text names a terminal. */
int probe_fd_link_is_terminal(const char *link);

/* The kinds (PROBE_WAITS_* bits) of what pid waits on: the fds epoll fd
 * epfd watches (epfd < 0: none) and fds[0..n). 0 with *kinds filled
 * (0 when there is nothing to tell), or -errno (-ESRCH: gone). */
int probe_waitset_kinds(pid_t pid, int epfd, const int *fds, int n, unsigned *kinds);

#endif /* PROBE_WAITSET_H */
