/*
 * probe_classify.h — what a syscall sample means for an event-loop worker,
 * and syscall numbers to names.
 *
 *   POLL       waiting in an event-wait syscall: spare capacity
 *   RUNNING    runnable: on a CPU or waiting for one
 *   BLOCKED    in any other syscall (nr and, when the first argument is an
 *              fd, that fd are kept)
 *   OTHER      not in a syscall yet not runnable ("-1": stopped, traced,
 *              page fault)
 *   GONE, NO_ACCESS  as the sample says
 *
 * Event-wait syscalls: epoll_wait, epoll_pwait, epoll_pwait2, select,
 * pselect6, poll, ppoll, and io_uring_enter with IORING_ENTER_GETEVENTS and
 * min_complete > 0. io_uring_enter without GETEVENTS, or with min_complete 0,
 * or with only IORING_ENTER_SQ_WAIT, is submission back-pressure, not idle:
 * BLOCKED.
 *
 * Instrumented workers publish their wait fd (the epoll fd or the ring fd).
 * With wait_fd >= 0 a sample is POLL only when the syscall's fd argument is
 * that fd. select, pselect6, poll and ppoll carry their fds in the target's
 * memory, which a sampler cannot read cheaply or safely, so for an
 * instrumented worker they count as BLOCKED: loopstat's runtime never waits
 * in them, so they are somebody else's wait (a resolver, a library). With
 * wait_fd < 0 (uninstrumented) every event-wait syscall is POLL.
 * io_uring_enter with IORING_ENTER_REGISTERED_RING passes a ring index, not
 * an fd: fd is reported as -1 and a wait for completions counts as POLL
 * even for an instrumented worker (the index cannot be checked).
 *
 * Numbers are the running architecture's (<sys/syscall.h>); a 32-bit
 * process on a 64-bit kernel reports compat numbers, which are not mapped.
 *
 * probe_loop.h refines this per thread: it reads the fds a poll/select
 * waits on and tells the loop's own poll from synchronous waits.
 */
#ifndef PROBE_CLASSIFY_H
#define PROBE_CLASSIFY_H

#include "probe_syscall.h"

enum probe_class {
	PROBE_POLL = 1,
	PROBE_RUNNING,
	PROBE_BLOCKED,
	PROBE_OTHER,
	PROBE_GONE,
	PROBE_NO_ACCESS,
};

/* How a thread's loop poll was identified; only probe_loop_classify
 * (probe_loop.h) sets anything but NONE. Text: probe_loop_basis_text(). */
enum probe_loop_basis {
	PROBE_BASIS_NONE = 0,   /* probe_classify's rule: no per-thread state */
	PROBE_BASIS_LEARNING,   /* epoll/ring waits seen, too few to name the loop fd */
	PROBE_BASIS_EPOLL_FD,   /* loop_fd is the epoll fd the thread waits on most */
	PROBE_BASIS_RING_FD,    /* loop_fd is the io_uring fd the thread waits on most */
	PROBE_BASIS_PUBLISHED,  /* loop_fd is an instrumented worker's published wait fd */
	PROBE_BASIS_PLAIN,      /* never waited on epoll/ring: any poll with fds counts */
	PROBE_BASIS_UNREADABLE, /* process_vm_readv refused: any poll counts as idle */
};

/* What a poll-family wait waits on (probe_loop_classify; NONE otherwise). */
enum probe_wait_kind {
	PROBE_WAIT_NONE = 0, /* not a poll-family wait, or not examined */
	PROBE_WAIT_LOOP,     /* on the thread's loop fd: POLL */
	PROBE_WAIT_NESTED,   /* on another epoll/ring fd: BLOCKED, "nested loop" */
	PROBE_WAIT_FDS,      /* on other fds: BLOCKED (POLL in a plain poll loop) */
	PROBE_WAIT_SLEEP,    /* on no fd at all (select(0,..), poll(NULL,0,t)): BLOCKED */
	PROBE_WAIT_UNREAD,   /* the fd set could not be read: the fallback rule */
};

#define PROBE_VERDICT_FDS 4

struct probe_verdict {
	enum probe_class cls;
	long nr; /* the syscall for POLL and BLOCKED, else -1 */
	int  fd; /* the fd argument when the syscall's first argument is an fd, else -1;
	          * probe_loop_classify: the first fd a BLOCKED poll-family wait waits on */
	/* Set by probe_loop_classify; probe_classify leaves the defaults
	 * (NONE, NONE, -1, 0, 0) and copies sp/pc. */
	enum probe_loop_basis basis; /* the thread's, at this sample */
	enum probe_wait_kind wait;
	int      loop_fd;  /* the thread's loop fd, -1 while unknown */
	uint64_t fd_ino;   /* pipe/socket inode of fd (0: other kind or unknown), for
	                    * probe_fd_cache_get_ino */
	int      nfds;     /* fds the poll-family wait names; fds[] keeps up to 4,
	                    * an epoll/ring fd in a poll set left out */
	int      fds[PROBE_VERDICT_FDS];
	uint64_t sp, pc;   /* from the sample */
};

/* Classifies one sample. wait_fd: the worker's published wait fd, or -1. */
void probe_classify(const struct probe_sc_sample *s, int wait_fd, struct probe_verdict *out);

/* True when nr is one of the event-wait syscalls (io_uring_enter included,
 * whatever its flags). */
int probe_syscall_is_event_wait(long nr);

/* True when nr is epoll_wait, epoll_pwait or epoll_pwait2 (those the
 * architecture has). */
int probe_syscall_is_epoll_wait(long nr);

/* True when s is inside an event-wait syscall that really waits for events
 * (io_uring_enter: GETEVENTS with min_complete > 0). */
int probe_sample_waits_for_events(const struct probe_sc_sample *s);

/* True when the first argument of syscall nr is a file descriptor. */
int probe_syscall_takes_fd(long nr);

/* "epoll_wait" etc., from libseccomp for the native architecture; the
 * table is built once, on first use (thread-safe). Borrowed; NULL when the
 * number is unknown. */
const char *probe_syscall_name(long nr);

/* The number of the syscall named name on the native architecture (the
 * same table), -1 when there is none. */
long probe_syscall_nr(const char *name);

/* Short lowercase name of a class ("poll", "running", ...). Static. */
const char *probe_class_name(enum probe_class cls);

#endif /* PROBE_CLASSIFY_H */
