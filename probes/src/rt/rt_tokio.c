/*
 * rt_tokio.c — a tokio worker told apart from a blocking-pool thread by
 * where it waits. Both are named tokio-runtime-w; tokio 1.x's worker parks
 * (scheduler::multi_thread::park) on a condvar with no timeout, or in the
 * I/O driver's epoll_wait; the blocking pool's idle thread waits on its
 * condvar with its keep-alive as the timeout, and a busy one runs the
 * blocking work itself (a sleep, a file read, a child's wait).
 */
#include "probe_rt.h"
#include "probe_classify.h"

#include <linux/futex.h>
#include <sys/syscall.h>

int probe_rt_tokio_evidence(const struct probe_sc_sample *s)
{
	if (s->state != PROBE_SC_IN_SYSCALL)
		return 0;
	if (probe_syscall_is_epoll_wait(s->nr))
		return 1;             /* the worker holding the I/O driver */
	switch (s->nr) {
	case SYS_futex: {
		int op = (int)(s->args[1] & FUTEX_CMD_MASK);
		if (op != FUTEX_WAIT && op != FUTEX_WAIT_BITSET)
			return 0;
		return s->args[3] ? -1 : 1;   /* a timeout: the keep-alive */
	}
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_read:
	case SYS_pread64:
	case SYS_wait4:
	case SYS_waitid:
		return -1;
	default:
		return 0;
	}
}
