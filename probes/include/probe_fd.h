/*
 * probe_fd.h — what a file descriptor of a worker refers to.
 *
 * readlink(<root>/PID/fd/N) gives "/path", "pipe:[INODE]", "socket:[INODE]",
 * "anon_inode:[eventpoll]", "anon_inode:[io_uring]", ... Sockets are resolved
 * through <root>/PID/net/{tcp,tcp6,udp,udp6,unix} (the tables of the
 * process's network namespace) into text such as
 *   "tcp 127.0.0.1:6379 -> 127.0.0.1:51234 ESTABLISHED"
 *   "tcp6 [::1]:80 LISTEN", "udp 0.0.0.0:53", "unix /run/app.sock", "unix [12345]"
 * (a unix socket without a path is shown by its inode). A socket found in
 * none of the tables (netlink, packet, ...) keeps its "socket:[INODE]" text.
 *
 * Resolving a socket reads whole tables, so the monitor goes through a
 * probe_fd_cache: each (pid, fd) is resolved at most once per sampling
 * window. The cache allocates once, at creation. A cache is not locked:
 * one per thread (the sampler's).
 */
#ifndef PROBE_FD_H
#define PROBE_FD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum probe_fd_kind {
	PROBE_FD_UNKNOWN = 0, /* not resolved (fd closed, task gone, no access) */
	PROBE_FD_FILE,        /* a path: regular file, device, directory */
	PROBE_FD_PIPE,        /* pipe:[INODE] */
	PROBE_FD_SOCKET,      /* socket:[INODE], text resolved when found */
	PROBE_FD_EVENTPOLL,   /* anon_inode:[eventpoll] */
	PROBE_FD_IO_URING,    /* anon_inode:[io_uring] */
	PROBE_FD_ANON,        /* another anon_inode: eventfd, timerfd, signalfd, ... */
	PROBE_FD_OTHER,       /* anything else the kernel prints */
};

#define PROBE_TARGET_LEN 192

struct probe_fd_target {
	enum probe_fd_kind kind;
	uint64_t inode;                /* pipe or socket inode, else 0 */
	char     text[PROBE_TARGET_LEN]; /* what to show; truncated if longer */
};

/* readlink of <root>/PID/fd/FD into buf (NUL-terminated, truncated to fit).
 * Returns the length, -EBADF when the fd is not open, -ESRCH when the
 * process is gone, -EACCES/-EPERM, or -errno. */
int probe_fd_readlink(pid_t pid, int fd, char *buf, size_t len);

/* Kind of a link text; *inode gets the pipe/socket inode (0 otherwise). */
enum probe_fd_kind probe_fd_kind_of(const char *link, uint64_t *inode);

/* Resolves socket INODE through PID's net tables into buf. Returns 0,
 * -ENOENT when no table lists it, or -errno. */
int probe_net_describe(pid_t pid, uint64_t inode, char *buf, size_t len);

/* readlink + kind + socket resolution, uncached. Returns 0 or the -errno
 * of the readlink (out->kind is then PROBE_FD_UNKNOWN). */
int probe_fd_target(pid_t pid, int fd, struct probe_fd_target *out);

/* The inode of the file PID's fd FD refers to now (stat through the magic
 * link, ~4 us: a re-check, never a per-sample cost). It changes when the fd
 * is closed and its number reused, with one exception: every epoll fd (and
 * eventfd, timerfd, signalfd) shares the one anonymous inode, so for those
 * the fd number is the identity. io_uring rings, sockets, pipes and files
 * have inodes of their own. Returns 0, -EBADF, -ESRCH or -errno. */
int probe_fd_inode(pid_t pid, int fd, uint64_t *ino);

struct probe_fd_cache;

/* A cache of at most `capacity` (pid, fd) targets (rounded up to a power
 * of two). Returns NULL and sets errno on failure. */
struct probe_fd_cache *probe_fd_cache_new(size_t capacity);
void probe_fd_cache_delete(struct probe_fd_cache *c);

/* Starts a new sampling window: every cached target is forgotten (fds get
 * closed and reused, so nothing outlives a window). O(1). */
void probe_fd_cache_begin_window(struct probe_fd_cache *c);

/* The target of (pid, fd), resolved on the first lookup in the window.
 * *out is borrowed until the next probe_fd_cache_get or begin_window.
 * Errors are cached too (as PROBE_FD_UNKNOWN) and returned each time.
 * Returns 0 or the -errno of the resolution. */
int probe_fd_cache_get(struct probe_fd_cache *c, pid_t pid, int fd, const struct probe_fd_target **out);

/* probe_fd_cache_get, but the cached target is re-resolved when it was
 * resolved for another inode than `inode` (a pipe or socket inode, as in
 * probe_fd_target.inode / probe_verdict.fd_ino): the fd was closed and its
 * number reused within the window. inode 0 means "unknown": plain get. */
int probe_fd_cache_get_ino(struct probe_fd_cache *c, pid_t pid, int fd, uint64_t inode,
			   const struct probe_fd_target **out);

/* Lookups and resolutions since creation, for tests and the monitor's
 * self-monitoring. */
void probe_fd_cache_stats(const struct probe_fd_cache *c, uint64_t *lookups, uint64_t *resolved);

#endif /* PROBE_FD_H */
