/*
 * loop_fds.c — the fds a poll/ppoll/select/pselect6 sample waits on, read
 * from the target's memory.
 *
 * process_vm_readv needs the same ptrace-read access as /proc/PID/syscall
 * and never stops the target. The arguments are the target's, so every size
 * is bounded here (nfds is capped, buffers are fixed, nothing is allocated
 * from it), and the memory may change or vanish under the read: a fault or
 * a short read means the call returned meanwhile (or the pointer is
 * garbage), and the caller re-samples.
 */
#include "probe_loop.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>

int probe_syscall_is_poll_set(long nr)
{
	switch (nr) {
#ifdef SYS_poll
	case SYS_poll:
#endif
#ifdef SYS_select
	case SYS_select:
#endif
	case SYS_ppoll:
	case SYS_pselect6:
		return 1;
	}
	return 0;
}

/* One process_vm_readv of exactly `want` bytes. */
static int vm_read(pid_t pid, struct iovec *local, struct iovec *remote, unsigned long n, size_t want)
{
	ssize_t got = process_vm_readv(pid, local, n, remote, n, 0);
	if (got < 0) {
		int e = errno;
		if (e == EPERM || e == ENOSYS || e == EACCES || e == ESRCH)
			return -e;
		return -EAGAIN; /* EFAULT, ENOMEM: the memory is not (any more) there */
	}
	return (size_t)got == want ? 0 : -EAGAIN;
}

static void add_fd(struct probe_wait_fds *out, int fd)
{
	for (int i = 0; i < out->n; i++)
		if (out->fds[i] == fd)
			return;
	if (out->n == PROBE_WAIT_FDS_MAX) {
		out->truncated = 1;
		return;
	}
	out->fds[out->n++] = fd;
}

/* poll(fds, nfds, timeout) and ppoll(fds, nfds, tsp, sigmask, size) */
static int read_pollfds(pid_t pid, const struct probe_sc_sample *s, struct probe_wait_fds *out)
{
	struct pollfd p[PROBE_WAIT_NFDS_CAP];
	uint32_t nfds = (uint32_t)s->args[1]; /* the kernel's type: unsigned int */
	if (nfds == 0)
		return 0; /* poll(NULL, 0, t): a sleep */
	if (nfds > PROBE_WAIT_NFDS_CAP) {
		nfds = PROBE_WAIT_NFDS_CAP;
		out->truncated = 1;
	}
	size_t want = nfds * sizeof(p[0]);
	struct iovec local = { p, want }, remote = { (void *)(uintptr_t)s->args[0], want };
	int err = vm_read(pid, &local, &remote, 1, want);
	if (err < 0)
		return err;
	for (uint32_t i = 0; i < nfds; i++)
		if (p[i].fd >= 0) /* negative entries are ignored by the kernel too */
			add_fd(out, p[i].fd);
	return 0;
}

/* select(n, inp, outp, exp, tvp) and pselect6(n, inp, outp, exp, tsp, sig):
 * each set is n bits rounded up to longs, as the kernel reads them. */
static int read_fdsets(pid_t pid, const struct probe_sc_sample *s, struct probe_wait_fds *out)
{
	enum { WORD_BITS = 8 * sizeof(unsigned long), WORDS = PROBE_WAIT_NFDS_CAP / WORD_BITS };
	unsigned long set[3][WORDS];
	struct iovec local[3], remote[3];
	unsigned long n = 0;
	int64_t nbits = (int32_t)(uint32_t)s->args[0];
	if (nbits <= 0)
		return 0; /* select(0, ...): a sleep */
	if (nbits > PROBE_WAIT_NFDS_CAP) {
		nbits = PROBE_WAIT_NFDS_CAP;
		out->truncated = 1;
	}
	size_t bytes = (size_t)(nbits + WORD_BITS - 1) / WORD_BITS * sizeof(unsigned long);
	for (int i = 0; i < 3; i++) {
		if (!s->args[1 + i])
			continue; /* a NULL set */
		local[n] = (struct iovec){ set[n], bytes };
		remote[n] = (struct iovec){ (void *)(uintptr_t)s->args[1 + i], bytes };
		n++;
	}
	if (n == 0)
		return 0; /* select(n, NULL, NULL, NULL, &tv): a sleep */
	int err = vm_read(pid, local, remote, n, n * bytes);
	if (err < 0)
		return err;
	for (int64_t fd = 0; fd < nbits; fd++)
		for (unsigned long i = 0; i < n; i++)
			if (set[i][fd / WORD_BITS] & (1UL << (fd % WORD_BITS))) {
				add_fd(out, (int)fd);
				break;
			}
	return 0;
}

int probe_wait_fds_read(pid_t pid, const struct probe_sc_sample *s, struct probe_wait_fds *out)
{
	out->n = 0;
	out->truncated = 0;
	if (s->state != PROBE_SC_IN_SYSCALL || !probe_syscall_is_poll_set(s->nr))
		return -EINVAL;
	switch (s->nr) {
#ifdef SYS_poll
	case SYS_poll:
#endif
	case SYS_ppoll:
		return read_pollfds(pid, s, out);
	default:
		return read_fdsets(pid, s, out);
	}
}
