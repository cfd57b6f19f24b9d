/*
 * waitset.c — what a loop waits on, by kind (probe_waitset.h).
 */
#include "probe_waitset.h"
#include "probe_fd.h"
#include "probe_proc.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int probe_fd_link_is_terminal(const char *link)
{
	return strncmp(link, "/dev/pts/", 9) == 0 || strncmp(link, "/dev/tty", 8) == 0 ||
	       strcmp(link, "/dev/ptmx") == 0 || strcmp(link, "/dev/console") == 0;
}

static unsigned kind_of_fd(pid_t pid, int fd)
{
	char link[256];
	uint64_t ino;
	if (probe_fd_readlink(pid, fd, link, sizeof(link)) < 0)
		return 0;   /* closed meanwhile: nothing to tell */
	switch (probe_fd_kind_of(link, &ino)) {
	case PROBE_FD_SOCKET:
		return PROBE_WAITS_SOCKET;
	case PROBE_FD_PIPE:
	case PROBE_FD_ANON:
		return PROBE_WAITS_INTERNAL;
	default:
		return probe_fd_link_is_terminal(link) ? PROBE_WAITS_TERMINAL : PROBE_WAITS_OTHER;
	}
}

/* The fds epfd watches, from its fdinfo: at most cap of them. */
static int epoll_fds(pid_t pid, int epfd, int *fds, int cap)
{
	char path[64];
	int err = probe_proc_path(path, sizeof(path), "%d/fdinfo/%d", (int)pid, epfd);
	if (err < 0)
		return err;
	/* a 64-fd set's lines are ~80 bytes each; the rest are not looked at */
	char *text = malloc(PROBE_WAITSET_MAX * 96 + 256);
	if (!text)
		return -ENOMEM;
	ssize_t len = probe_read_file(path, text, PROBE_WAITSET_MAX * 96 + 256);
	int n = 0;
	for (char *p = len > 0 ? text : NULL; p && n < cap; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		char *end;
		if (strncmp(p, "tfd:", 4) != 0)
			continue;
		long fd = strtol(p + 4, &end, 10);
		if (end != p + 4 && fd >= 0 && fd <= INT32_MAX)
			fds[n++] = (int)fd;
	}
	free(text);
	return len < 0 ? (int)len : n;
}

int probe_waitset_kinds(pid_t pid, int epfd, const int *fds, int n, unsigned *kinds)
{
	int watched[PROBE_WAITSET_MAX];
	int nw = 0;
	*kinds = 0;
	if (epfd >= 0 && (nw = epoll_fds(pid, epfd, watched, PROBE_WAITSET_MAX)) < 0)
		return nw;
	for (int i = 0; i < nw; i++)
		*kinds |= kind_of_fd(pid, watched[i]);
	for (int i = 0; i < n; i++)
		*kinds |= kind_of_fd(pid, fds[i]);
	return 0;
}
