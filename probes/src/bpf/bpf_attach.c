/*
 * bpf_attach.c — where the loop programs see syscalls (bpf_int.h).
 *
 * The poll-family calls and close are seen by their own tracepoints
 * (syscalls:sys_enter_epoll_wait, ...), so the host's other syscalls run
 * no program: the raw sys_enter/sys_exit programs ran at every syscall on
 * the host, most of the source's cost on a busy one. A tracepoint is
 * opened as a perf event by its id, which only tracefs tells: a child
 * reads the ids in a mount namespace of its own, where it mounts tracefs
 * privately (the host sees no mount; fentry, which would need no id, is
 * refused on the kernels here). Where that fails (no CAP_SYS_ADMIN, no
 * syscall tracepoints) the raw programs carry those calls instead.
 * Built without bpf (no clang, bpftool or libbpf-dev), nothing here.
 */
#ifdef LOOPSTAT_BPF

#include "bpf_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACEFS "/sys/kernel/tracing"

/* The id of tracepoint syscalls/name under the tracefs at root, or -errno. */
static int read_id(const char *root, const char *name)
{
	char path[160], buf[32];
	snprintf(path, sizeof(path), "%s/events/syscalls/%s/id", root, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	int id = atoi(buf);
	return id > 0 ? id : -EIO;
}

/* The ids of the n tracepoints in names[] into ids[] (-errno each where
 * unread): from a tracefs mounted on the host, else by a child that mounts
 * one in a private mount namespace. 0 when all were read, else -errno. */
static int read_ids(const char *const *names, int n, int *ids)
{
	int missing = 0;
	for (int i = 0; i < n; i++)
		missing += (ids[i] = read_id(TRACEFS, names[i])) < 0;
	if (!missing)
		return 0;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		/* private first: a mount under a shared root would show on the host */
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tracefs", TRACEFS, "tracefs", 0, NULL) < 0)
			_exit(1);
		for (int i = 0; i < n; i++) {
			int id = read_id(TRACEFS, names[i]);
			if (write(p[1], &id, sizeof(id)) != sizeof(id))
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	int err = 0;
	for (int i = 0; i < n && !err; i++)
		if (read(p[0], &ids[i], sizeof(ids[i])) != sizeof(ids[i]))
			err = -EPERM;   /* the child could not mount: not root */
		else if (ids[i] < 0)
			err = ids[i];
	close(p[0]);
	waitpid(pid, NULL, 0);
	return err;
}

/* prog on tracepoint id: one perf event (its programs run on every CPU:
 * a tracepoint's programs belong to the tracepoint). NULL with errno. */
static struct bpf_link *attach_id(struct bpf_program *prog, int id, int *perf_fd)
{
	struct perf_event_attr a = { .type = PERF_TYPE_TRACEPOINT, .size = sizeof(a), .config = (__u64)id,
				     .sample_period = 1, .wakeup_events = 1 };
	int fd = (int)syscall(SYS_perf_event_open, &a, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct bpf_link *l = bpf_program__attach_perf_event(prog, fd);
	if (!l) {
		int e = errno;
		close(fd);
		errno = e;
	}
	*perf_fd = fd;   /* the link's: closed with it */
	return l;
}

void bpf_syscalls_no_autoattach(struct probe_bpf *b)
{
	bpf_program__set_autoattach(b->skel->progs.ls_poll_in, false);
	bpf_program__set_autoattach(b->skel->progs.ls_poll_out, false);
	bpf_program__set_autoattach(b->skel->progs.ls_close_in, false);
	bpf_program__set_autoattach(b->skel->progs.ls_sys_enter, false);
	bpf_program__set_autoattach(b->skel->progs.ls_sys_exit, false);
}

/* The raw programs at every syscall, carrying the poll-family calls. */
static int attach_raw(struct probe_bpf *b)
{
	b->skel->bss->raw_polls = 1;
	b->raw_enter = bpf_program__attach(b->skel->progs.ls_sys_enter);
	if (!b->raw_enter)
		return -errno;
	b->exit_link = bpf_program__attach(b->skel->progs.ls_sys_exit);
	return b->exit_link ? 0 : -errno;
}

/* The poll-family syscalls (lsb_is_poll_nr) and close, by their tracepoints' names. */
static const char *const polls[] = { "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select",
				     "pselect6", "io_uring_enter" };
#define NPOLLS (int)(sizeof(polls) / sizeof(polls[0]))

int bpf_syscalls_attach(struct probe_bpf *b)
{
	char names[2 * NPOLLS + 1][40];
	const char *name[2 * NPOLLS + 1];
	struct bpf_program *prog[2 * NPOLLS + 1];
	int n = 0, ids[2 * NPOLLS + 1];
	_Static_assert(2 * NPOLLS + 1 <= BPF_SYS_LINKS, "room for every link");
	for (int i = 0; i < NPOLLS; i++) {
		snprintf(names[n], sizeof(names[n]), "sys_enter_%s", polls[i]);
		prog[n++] = b->skel->progs.ls_poll_in;
		snprintf(names[n], sizeof(names[n]), "sys_exit_%s", polls[i]);
		prog[n++] = b->skel->progs.ls_poll_out;
	}
	snprintf(names[n], sizeof(names[n]), "sys_enter_close");
	prog[n++] = b->skel->progs.ls_close_in;
	for (int i = 0; i < n; i++)
		name[i] = names[i];
	if (getenv("LOOPSTAT_BPF_RAW") || read_ids(name, n, ids) < 0)
		return attach_raw(b);
	for (int i = 0; i < n; i++) {
		b->sys_links[i] = attach_id(prog[i], ids[i], &b->sys_perf[i]);
		if (!b->sys_links[i]) {
			bpf_syscalls_detach(b);
			return attach_raw(b);
		}
		b->nsys = i + 1;
	}
	return 0;
}

int bpf_syscalls_stall_exit(struct probe_bpf *b, int on)
{
	if (b->skel->bss->raw_polls)
		return 0;   /* attached for good */
	if (!on) {
		bpf_link__destroy(b->exit_link);
		b->exit_link = NULL;
		return 0;
	}
	if (!b->exit_link)
		b->exit_link = bpf_program__attach(b->skel->progs.ls_sys_exit);
	return b->exit_link ? 0 : -errno;
}

static int by_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* A grandchild that holds copies of keep[n] (its other fds closed, so no
 * pipe or socket of ours stays open in it) until rd reads end of file, and
 * then lets them go. */
static void hold_until_eof(int *keep, int n, int rd)
{
	keep[n++] = rd;
	qsort(keep, (size_t)n, sizeof(*keep), by_int);
	unsigned lo = 0;
	for (int i = 0; i < n; i++) {
		if ((unsigned)keep[i] > lo)
			syscall(SYS_close_range, lo, (unsigned)keep[i] - 1, 0);
		lo = (unsigned)keep[i] + 1;
	}
	syscall(SYS_close_range, lo, ~0U, 0);
	char c;
	while (read(rd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

void bpf_syscalls_detach(struct probe_bpf *b)
{
	/* The last close of a tracepoint's perf event waits a grace period
	 * under a kernel mutex, one after another: 0.37 s for all of them
	 * here, at the end of every run. A grandchild holding copies of their
	 * fds closes them last, after this process let go: a one-shot run
	 * does not wait (without one, this process waits). */
	int p[2] = { -1, -1 };
	if (b->nsys && pipe2(p, O_CLOEXEC) == 0) {
		int keep[2 * BPF_SYS_LINKS + 1], n = 0;
		for (int i = 0; i < b->nsys; i++) {
			keep[n++] = bpf_link__fd(b->sys_links[i]);
			keep[n++] = b->sys_perf[i];
		}
		pid_t pid = fork();
		if (pid == 0) {
			if (fork() == 0)
				hold_until_eof(keep, n, p[0]);
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);   /* its child is init's */
	}
	for (int i = 0; i < b->nsys; i++)
		bpf_link__destroy(b->sys_links[i]);   /* closes the perf event too */
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);   /* the grandchild reads end of file: its copies go */
	}
	b->nsys = 0;
	bpf_link__destroy(b->raw_enter);
	bpf_link__destroy(b->exit_link);
	b->raw_enter = b->exit_link = NULL;
}

#endif /* LOOPSTAT_BPF */
