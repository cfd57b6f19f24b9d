/*
 * probe_loop.h — which poll is the loop's: a thread's own event wait told
 * apart from the synchronous waits runtimes do with the same syscalls.
 *
 * probe_classify counts every poll-family wait of an uninstrumented thread
 * as idle. But a blocking socket read with a timeout waits in poll() on that
 * socket, a sleep is often select(0, NULL, NULL, NULL, &tv), a hand-off
 * waits on an eventfd or pipe, and a synchronous child-process call may run
 * a private epoll loop of its own: all of that is blocked time.
 *
 * The rule, per thread (struct probe_loop, embedded by the caller):
 *   - the loop fd is the epoll or io_uring fd the thread waits on for most
 *     of its observed life and that outlives the others (a wait counts for
 *     the epoll/ring fd in epoll_wait's or io_uring_enter's arg0, and for
 *     an epoll/ring fd inside a poll/select set: EventMachine's
 *     select(N+1, [N]) on its epoll fd N). An instrumented worker's loop fd
 *     is its published wait fd (wait_fd >= 0).
 *   - a wait on the loop fd is POLL (wait LOOP);
 *   - a wait on another epoll/ring fd is BLOCKED (wait NESTED, "nested loop");
 *   - a poll-family wait on other fds is BLOCKED (wait FDS) attributed to the
 *     syscall (nr) and its first fd (fd, fd_ino; fds[] holds up to 4);
 *   - a poll-family wait on no fd is a sleep: BLOCKED (wait SLEEP);
 *   - a thread that never waited on an epoll/ring fd is a plain poll loop:
 *     a poll-family wait with fds is POLL (basis PLAIN);
 *   - until the leading epoll/ring fd has PROBE_LOOP_LEARN_WAITS waits the
 *     basis is LEARNING (the leader's waits count as POLL meanwhile);
 *   - where process_vm_readv is refused (EPERM) or missing (ENOSYS), the
 *     thread falls back to probe_classify's rule (POLL; BLOCKED for an
 *     instrumented worker, as before), basis UNREADABLE (PUBLISHED for an
 *     instrumented worker), wait UNREAD; it is not tried again.
 *   Anything that is not a poll-family wait gets probe_classify's verdict.
 *
 * Identity: a ring is known by its inode; every epoll fd shares one
 * anonymous inode (probe_fd_inode), so an epoll fd is known by its number,
 * and a candidate seen closed (or replaced) is forgotten: a nested loop
 * that creates, waits on and closes an epoll fd gets a fresh candidate each
 * time, which never catches up with the long-lived loop fd.
 *
 * Resolution: each fd of a wait is readlink'ed (probe_fd_readlink +
 * probe_fd_kind_of) when its key is read, so a reused fd number is seen at
 * the next re-read; the verdict carries the attributed fd's pipe/socket
 * inode (fd_ino) so that the caller's probe_fd_cache re-resolves a target
 * (socket peer) whose inode changed (probe_fd_cache_get_ino).
 *
 * Cost: the fds of a wait are read (process_vm_readv, /proc/PID/fd
 * readlinks) once per (syscall, pc, sp, args) key, kept in a small per-thread
 * table, and re-read every PROBE_LOOP_RECHECK_HITS hits or
 * PROBE_LOOP_RECHECK_MS, whichever first. A poll/select key is also re-read
 * when the thread's number of open fds changed, looked at every
 * PROBE_LOOP_NOPEN_EVERY hits (one fstat of an open /proc/PID/task/TID/fd
 * directory, whose size is the fd count since Linux 6.2: ~0.8 us against
 * ~2.5 us for the sample's own pread, and ~4 us for a stat or readlink of
 * /proc/PID/fd/N; on every hit it made a poll-family sample cost 1.56x a
 * pread, every 4th hit ~1.2x); an epoll/ring key names its fd in a register
 * and skips that check. The other candidates' fds are re-checked (stat) when
 * the thread's wait moves from one candidate to another.
 *
 * Wiring (the sampler, per worker thread):
 *     struct probe_loop loop;                       embedded, next to the syscall probe
 *     probe_loop_init(&loop, pid, tid);
 *     r = probe_loop_classify(&loop, &smp, wait_fd, &v);   replaces probe_classify
 *     if (r == -EAGAIN) skip the sample (the wait ended under the read)
 *     probe_loop_done(&loop);                       when the worker is dropped
 *                                                   (done + init when another thread takes its slot)
 * then keep v.cls/nr/fd as before (the blocked breakdown by (nr, fd) now says
 * "poll fd 5"), resolve fd with probe_fd_cache_get_ino(cache, pid, v.fd,
 * v.fd_ino, ...), and show probe_loop_basis_text(v.basis, v.loop_fd, ...).
 *
 * Not locked: a probe_loop belongs to the thread that samples it.
 */
#ifndef PROBE_LOOP_H
#define PROBE_LOOP_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe_classify.h"
#include "probe_fd.h"
#include "probe_syscall.h"

/* ---- the fds a poll-family sample waits on -------------------------------- */

#define PROBE_WAIT_NFDS_CAP 1024 /* pollfd entries / select bits read at most */
#define PROBE_WAIT_FDS_MAX  64   /* fds kept (and resolved) per wait */

struct probe_wait_fds {
	int n;         /* fds found, <= PROBE_WAIT_FDS_MAX */
	int truncated; /* nfds above the cap, or more fds than kept */
	int fds[PROBE_WAIT_FDS_MAX];
};

/* True when nr is poll, ppoll, select or pselect6 (fds in memory). */
int probe_syscall_is_poll_set(long nr);

/* Reads the fds sample s (poll, ppoll, select or pselect6 of a thread of
 * pid) waits on, from the target's memory with process_vm_readv: never a
 * stop, never an allocation; nfds is capped (PROBE_WAIT_NFDS_CAP). n == 0
 * is a sleep. Returns 0; -EAGAIN when the read fell short or faulted (the
 * call returned meanwhile, or a hostile pointer: re-sample); -EPERM or
 * -ENOSYS when memory is unreadable (probe_wait_fds_unreadable); -ESRCH
 * when the process is gone; -EINVAL when s is not such a wait. */
int probe_wait_fds_read(pid_t pid, const struct probe_sc_sample *s, struct probe_wait_fds *out);

/* True for the errors of probe_wait_fds_read that will not go away. */
static inline int probe_wait_fds_unreadable(int err)
{
	return err == -EPERM || err == -ENOSYS || err == -EACCES;
}

/* ---- the per-thread rule -------------------------------------------------- */

#define PROBE_LOOP_CANDS        8   /* epoll/ring fds tracked per thread */
#define PROBE_LOOP_KEYS         4   /* cached (syscall, pc, sp, args) keys */
#define PROBE_LOOP_LEARN_WAITS  8   /* waits before the loop fd is named */
#define PROBE_LOOP_RECHECK_HITS 64  /* a key is re-read after this many hits ... */
#define PROBE_LOOP_RECHECK_MS   1000 /* ... or this long, whichever first */
#define PROBE_LOOP_NOPEN_EVERY  4   /* hits between fd-table checks of a poll-set key */

/* Private to loop.c; in the header so that the caller can embed the state. */
struct probe_loop_cand {
	int      fd;
	uint64_t ino;   /* the ring's inode; the shared anon inode for epoll */
	enum probe_fd_kind kind; /* EVENTPOLL or IO_URING */
	uint64_t waits; /* samples that waited on it */
	uint64_t born;  /* sequence number of its first sample */
};

struct probe_loop_key {
	long     nr;
	uint64_t pc, sp, a[4]; /* the args that locate the fds (and nfds) */
	int      wait_fd;      /* the published fd the key was read for */
	uint64_t used;         /* LRU stamp; 0 = empty */
	uint32_t hits;         /* since the last read */
	uint64_t read_ms;      /* CLOCK_MONOTONIC_COARSE of the last read */
	int64_t  nopen;        /* open fds at the last read (-1: unknown) */
	/* the result */
	int      cand_fd;      /* an epoll/ring fd in the wait, -1: none */
	uint64_t cand_ino;
	enum probe_fd_kind cand_kind;
	int      has_loop_fd;  /* instrumented: the set holds the published fd */
	int      ring_key;     /* an epoll/ring syscall: the fd is arg0 */
	int      nfds;         /* fds waited on (including any candidate) */
	int      truncated;    /* more fds than read: never a sleep */
	int      nkept;
	int      fds[PROBE_VERDICT_FDS]; /* the first non-candidate fds, nkept of them */
	uint64_t fd_ino;       /* pipe/socket inode of fds[0] */
};

struct probe_loop {
	pid_t pid, tid;
	int      dirfd;        /* <root>/PID/task/TID/fd, opened on first need; -1 */
	int      unreadable;   /* process_vm_readv refused: fallback rule */
	int      plain_seen;   /* a poll-family wait with fds, no epoll/ring in it */
	int      ncand;
	struct probe_loop_cand cand[PROBE_LOOP_CANDS];
	int      last_fd;      /* candidate of the previous candidate wait, -1 */
	uint64_t seq;          /* candidate samples seen */
	uint64_t stamp;        /* LRU clock for keys */
	struct probe_loop_key keys[PROBE_LOOP_KEYS];
	/* statistics, for tests and benchmarks */
	uint64_t key_reads;    /* fd sets read (misses and re-checks) */
	uint64_t key_hits;     /* samples served from a key */
	uint64_t resamples;    /* -EAGAIN returned */
};

/* Prepares l for thread tid of pid. Opens nothing yet. */
void probe_loop_init(struct probe_loop *l, pid_t pid, pid_t tid);

/* Releases what l holds (its directory fd). */
void probe_loop_done(struct probe_loop *l);

/* Classifies sample s of l's thread. wait_fd: the worker's published wait
 * fd, or -1 (uninstrumented). Returns 0 with *out filled, or -EAGAIN: the
 * wait's fds could not be read consistently, drop this sample (out then
 * holds probe_classify's verdict, which must not be counted). */
int probe_loop_classify(struct probe_loop *l, const struct probe_sc_sample *s, int wait_fd,
			struct probe_verdict *out);

/* "epoll fd 7", "ring fd 5", "published wait fd", "plain poll loop (any
 * poll counts)", "fd set unreadable: any poll counts as idle", "learning",
 * "any event wait counts" (NONE). Returns buf. */
const char *probe_loop_basis_text(enum probe_loop_basis basis, int loop_fd, char *buf, size_t len);

/* Short lowercase name of a wait kind ("loop", "nested loop", "fds",
 * "sleep", "unreadable", "-"). Static. */
const char *probe_wait_kind_name(enum probe_wait_kind w);

#endif /* PROBE_LOOP_H */
