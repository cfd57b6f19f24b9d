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

struct probe_verdict {
	enum probe_class cls;
	long nr; /* the syscall for POLL and BLOCKED, else -1 */
	int  fd; /* the fd argument when the syscall's first argument is an fd, else -1 */
};

/* Classifies one sample. wait_fd: the worker's published wait fd, or -1. */
void probe_classify(const struct probe_sc_sample *s, int wait_fd, struct probe_verdict *out);

/* True when nr is one of the event-wait syscalls (io_uring_enter included,
 * whatever its flags). */
int probe_syscall_is_event_wait(long nr);

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
