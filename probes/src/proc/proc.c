/*
 * proc.c — the proc root and small-file reads shared by every probe.
 */
#include "probe_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

const char *probe_proc_root(void)
{
	const char *root = getenv(PROBE_PROC_ROOT_ENV);
	return root && *root ? root : "/proc";
}

int probe_proc_path(char *buf, size_t len, const char *fmt, ...)
{
	int n = snprintf(buf, len, "%s/", probe_proc_root());
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)(n + m) >= len)
		return -ENAMETOOLONG;
	return n + m;
}

ssize_t probe_read_file(const char *path, char *buf, size_t len)
{
	if (len == 0)
		return -EINVAL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t got = 0;
	while (got < len - 1) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int err = -errno;
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

int probe_proc_nthreads(pid_t pid)
{
	char path[64];
	struct stat st;
	int err = probe_proc_path(path, sizeof(path), "%d/task", (int)pid);
	if (err < 0)
		return err;
	if (stat(path, &st) < 0)
		return -errno;
	return st.st_nlink > 2 ? (int)(st.st_nlink - 2) : 0;
}
