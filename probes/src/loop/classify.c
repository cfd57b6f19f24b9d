/*
 * classify.c — poll / running / blocked / other from a syscall sample.
 *
 * Syscall sets are built from <sys/syscall.h> constants (guarded: aarch64
 * has no epoll_wait, select or poll), never from hand-typed numbers, so the
 * same source is right on every architecture.
 *
 * Names come from libseccomp for the native architecture.
 * seccomp_syscall_resolve_num_arch() returns a malloc'd string and searches
 * a table, so names are resolved once into a table of our own and looked up
 * by index afterwards.
 */
#include "probe_classify.h"

#include <linux/io_uring.h>
#include <pthread.h>
#include <seccomp.h>
#include <string.h>
#include <sys/syscall.h>

/* Above every syscall number of x86-64 and aarch64 (x32 numbers, with bit
 * 30 set, are out of range and simply not classified as waits). */
#define NR_LIMIT 1024

static char *names[NR_LIMIT];            /* owned for the process lifetime */
static pthread_once_t names_once = PTHREAD_ONCE_INIT;
static unsigned char is_wait[NR_LIMIT];  /* event-wait syscalls */
static unsigned char is_epoll[NR_LIMIT]; /* the epoll_wait family */
static unsigned char takes_fd[NR_LIMIT]; /* first argument is an fd */
static pthread_once_t sets_once = PTHREAD_ONCE_INIT;

static void mark(unsigned char *set, long nr)
{
	if (nr >= 0 && nr < NR_LIMIT)
		set[nr] = 1;
}

static void build_sets(void)
{
#ifdef SYS_epoll_wait
	mark(is_wait, SYS_epoll_wait);
	mark(is_epoll, SYS_epoll_wait);
	mark(takes_fd, SYS_epoll_wait);
#endif
#ifdef SYS_epoll_pwait
	mark(is_wait, SYS_epoll_pwait);
	mark(is_epoll, SYS_epoll_pwait);
	mark(takes_fd, SYS_epoll_pwait);
#endif
#ifdef SYS_epoll_pwait2
	mark(is_wait, SYS_epoll_pwait2);
	mark(is_epoll, SYS_epoll_pwait2);
	mark(takes_fd, SYS_epoll_pwait2);
#endif
#ifdef SYS_select
	mark(is_wait, SYS_select);
#endif
#ifdef SYS_pselect6
	mark(is_wait, SYS_pselect6);
#endif
#ifdef SYS_poll
	mark(is_wait, SYS_poll);
#endif
#ifdef SYS_ppoll
	mark(is_wait, SYS_ppoll);
#endif
#ifdef SYS_io_uring_enter
	mark(is_wait, SYS_io_uring_enter);
#endif

	/* Syscalls a worker commonly blocks in whose first argument is an fd:
	 * the fd lets the monitor say *what* it waits on. */
	static const long fd_first[] = {
		SYS_read, SYS_write, SYS_pread64, SYS_pwrite64, SYS_readv, SYS_writev,
		SYS_preadv, SYS_pwritev, SYS_preadv2, SYS_pwritev2,
		SYS_recvfrom, SYS_sendto, SYS_recvmsg, SYS_sendmsg, SYS_recvmmsg, SYS_sendmmsg,
		SYS_accept, SYS_accept4, SYS_connect, SYS_shutdown,
		SYS_fsync, SYS_fdatasync, SYS_sync_file_range, SYS_syncfs, SYS_flock,
		SYS_fcntl, SYS_ioctl, SYS_ftruncate, SYS_fallocate, SYS_getdents64,
		SYS_lseek, SYS_fstatfs, SYS_close, SYS_splice, SYS_tee, SYS_copy_file_range,
		SYS_epoll_ctl, SYS_io_uring_enter, SYS_io_uring_register, SYS_readahead,
#ifdef SYS_fadvise64
		SYS_fadvise64,
#endif
#ifdef SYS_sendfile
		SYS_sendfile,
#endif
#ifdef SYS_fstat
		SYS_fstat,
#endif
	};
	for (size_t i = 0; i < sizeof(fd_first) / sizeof(fd_first[0]); i++)
		mark(takes_fd, fd_first[i]);
}

static inline void ensure_sets(void)
{
	pthread_once(&sets_once, build_sets);
}

int probe_syscall_is_event_wait(long nr)
{
	ensure_sets();
	return nr >= 0 && nr < NR_LIMIT && is_wait[nr];
}

int probe_syscall_is_epoll_wait(long nr)
{
	ensure_sets();
	return nr >= 0 && nr < NR_LIMIT && is_epoll[nr];
}

int probe_syscall_takes_fd(long nr)
{
	ensure_sets();
	return nr >= 0 && nr < NR_LIMIT && takes_fd[nr];
}

/* Is this event-wait syscall really waiting for events? */
static int waits_for_events(const struct probe_sc_sample *s)
{
#ifdef SYS_io_uring_enter
	if (s->nr == SYS_io_uring_enter) {
		/* io_uring_enter(fd, to_submit, min_complete, flags, ...) */
		uint32_t min_complete = (uint32_t)s->args[2];
		uint32_t flags = (uint32_t)s->args[3];
		return (flags & IORING_ENTER_GETEVENTS) && min_complete > 0;
	}
#endif
	(void)s;
	return 1;
}

int probe_sample_waits_for_events(const struct probe_sc_sample *s)
{
	return s->state == PROBE_SC_IN_SYSCALL && probe_syscall_is_event_wait(s->nr) && waits_for_events(s);
}

/* io_uring_enter on a registered ring (liburing's io_uring_register_ring_fd)
 * passes an index into the task's ring table, not an fd: it can neither be
 * resolved nor compared with the published wait fd. */
static int registered_ring(const struct probe_sc_sample *s)
{
#if defined(SYS_io_uring_enter) && defined(IORING_ENTER_REGISTERED_RING)
	return s->nr == SYS_io_uring_enter && ((uint32_t)s->args[3] & IORING_ENTER_REGISTERED_RING);
#else
	(void)s;
	return 0;
#endif
}

void probe_classify(const struct probe_sc_sample *s, int wait_fd, struct probe_verdict *out)
{
	memset(out, 0, sizeof(*out));
	out->nr = -1;
	out->fd = -1;
	out->loop_fd = -1;
	out->sp = s->sp;
	out->pc = s->pc;
	switch (s->state) {
	case PROBE_SC_RUNNING:
		out->cls = PROBE_RUNNING;
		return;
	case PROBE_SC_NOT_IN_SYSCALL:
		out->cls = PROBE_OTHER;
		return;
	case PROBE_SC_GONE:
		out->cls = PROBE_GONE;
		return;
	case PROBE_SC_NO_ACCESS:
		out->cls = PROBE_NO_ACCESS;
		return;
	case PROBE_SC_IN_SYSCALL:
		break;
	default:
		out->cls = PROBE_OTHER;
		return;
	}

	ensure_sets();
	out->nr = s->nr;
	int has_fd = probe_syscall_takes_fd(s->nr);
	/* fds are ints; the register holds them zero- or sign-extended */
	if (has_fd)
		out->fd = (int)(uint32_t)s->args[0];
	int fd_unknown = registered_ring(s);
	if (fd_unknown)
		out->fd = -1;
	out->cls = PROBE_BLOCKED;
	if (!probe_syscall_is_event_wait(s->nr) || !waits_for_events(s))
		return;
	if (wait_fd < 0 || fd_unknown || (has_fd && out->fd == wait_fd))
		out->cls = PROBE_POLL;
}

static void build_names(void)
{
	for (int nr = 0; nr < NR_LIMIT; nr++)
		names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
}

const char *probe_syscall_name(long nr)
{
	if (nr < 0 || nr >= NR_LIMIT)
		return NULL;
	pthread_once(&names_once, build_names);
	return names[nr];
}

long probe_syscall_nr(const char *name)
{
	if (!name)
		return -1;
	pthread_once(&names_once, build_names);
	for (int nr = 0; nr < NR_LIMIT; nr++)
		if (names[nr] && strcmp(names[nr], name) == 0)
			return nr;
	return -1;
}

const char *probe_class_name(enum probe_class cls)
{
	switch (cls) {
	case PROBE_POLL: return "poll";
	case PROBE_RUNNING: return "running";
	case PROBE_BLOCKED: return "blocked";
	case PROBE_OTHER: return "other";
	case PROBE_GONE: return "gone";
	case PROBE_NO_ACCESS: return "no-access";
	}
	return "?";
}
