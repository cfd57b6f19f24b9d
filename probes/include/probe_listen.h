/*
 * probe_listen.h — the listening TCP sockets a process holds, and how
 * full their accept queues are: netlink sock_diag (idiag_rqueue the queue,
 * idiag_wqueue its limit, the listen backlog) in our own network namespace,
 * /proc/PID/net/tcp and tcp6 in another (rx_queue; the limit is unknown
 * there). Both are a namespace's whole table, so a reader reads it once per
 * namespace and matches each process's socket inodes.
 */
#ifndef PROBE_LISTEN_H
#define PROBE_LISTEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROBE_LISTEN_MAX_SOCKETS 256   /* socket inodes followed per process */

struct probe_listen_set {
	uint64_t ino[PROBE_LISTEN_MAX_SOCKETS];   /* socket inodes among its fds */
	int      n;
	uint64_t netns;                           /* its network namespace's inode */
	int      eventpolls;                      /* epoll instances among its fds (a loop's, saturated or not) */
};

struct probe_listen_row {       /* one LISTEN row */
	uint64_t ino;
	uint32_t queue, limit;   /* limit 0: unknown */
};

struct probe_listen {
	int      sockets;        /* listening TCP sockets of the process */
	uint32_t queue;          /* the fullest one's accept queue ... */
	uint32_t limit;          /* ... and its backlog */
};

/* The socket inodes among pid's fds, its epoll instances and its network namespace into set
 * (a walk of /proc/PID/fd: redo it now and then, not at every read).
 * 0 or -errno. */
int probe_listen_scan(pid_t pid, struct probe_listen_set *set);

/* The LISTEN rows (tcp and tcp6) of pid's namespace, netns (from its
 * set), at most cap: the count or -errno. */
int probe_listen_table(pid_t pid, uint64_t netns, struct probe_listen_row *rows, int cap);

/* set's listening sockets among rows: how many, and the fullest's queue
 * and limit (by share of its backlog). */
void probe_listen_match(const struct probe_listen_set *set, const struct probe_listen_row *rows, int n,
			struct probe_listen *out);

#endif /* PROBE_LISTEN_H */
