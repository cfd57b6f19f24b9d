/*
 * schedstat.c — /proc/PID/task/TID/schedstat, opened once and re-read with
 * pread at offset 0 (the kernel regenerates the line on each such read).
 */
#include "probe_schedstat.h"
#include "probe_proc.h"

#include <errno.h>
#include "fdbudget_int.h"
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Three u64 in decimal, two spaces, a newline: 62 bytes at most. */
#define SS_BUF_LEN 128

/* A decimal u64 at *p; advances *p. Rejects empty numbers and overflow. */
static int parse_u64(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;
	for (; s < end && *s >= '0' && *s <= '9'; s++, digits++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (digits == 0)
		return -EINVAL;
	*out = v;
	*p = s;
	return 0;
}

int probe_schedstat_parse(const char *buf, size_t len, struct probe_schedstat *out)
{
	const char *p = buf, *end = buf + len;
	uint64_t v[3];

	for (int i = 0; i < 3; i++) {
		if (i > 0) {
			if (p >= end || *p != ' ')
				goto malformed;
			p++;
		}
		if (parse_u64(&p, end, &v[i]) < 0)
			goto malformed;
	}
	if (!(p == end || (p + 1 == end && *p == '\n')))
		goto malformed;
	out->run_ns = v[0];
	out->wait_ns = v[1];
	out->timeslices = v[2];
	return 0;

malformed:
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}

/* Opens f's file (again), charged to the fd budget as entry f->fdb. */
static int ss_open(struct probe_schedstat_file *f)
{
	char path[PATH_MAX];

	f->fd = -1;
	f->err = probe_proc_path(path, sizeof(path), "%d/task/%d/schedstat", (int)f->pid, (int)f->tid);
	if (f->err < 0)
		return f->err;
	probe__fd_make_room();
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	f->err = f->fd < 0 ? -errno : 0;
	if (f->fd >= 0)
		f->fdb = probe__fd_charge(f->fd, f->fdb);
	return f->err;
}

int probe_schedstat_open(struct probe_schedstat_file *f, pid_t pid, pid_t tid)
{
	f->pid = pid;
	f->tid = tid;
	f->fdb = 0;
	return ss_open(f);
}

void probe_schedstat_close(struct probe_schedstat_file *f)
{
	probe__fd_release(f->fdb, f->fd);
	f->fdb = 0;
	f->fd = -1;
	f->err = -EBADF;
}

int probe_schedstat_sample(struct probe_schedstat_file *f, struct probe_schedstat *out)
{
	char buf[SS_BUF_LEN];

	memset(out, 0, sizeof(*out));
	if (f->fd >= 0 && !probe__fd_live(f->fdb, f->fd))
		ss_open(f);   /* the budget closed it */
	if (f->fd < 0)
		return f->err == -ENOENT ? -ESRCH : (f->err ? f->err : -EBADF);
	ssize_t n;
	do
		n = pread(f->fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (n == 0)
		return -ESRCH;
	if ((size_t)n == sizeof(buf))
		return -EINVAL;
	return probe_schedstat_parse(buf, (size_t)n, out);
}

int probe_schedstat_read(pid_t pid, pid_t tid, struct probe_schedstat *out)
{
	struct probe_schedstat_file f;
	probe_schedstat_open(&f, pid, tid);
	int err = probe_schedstat_sample(&f, out);
	probe_schedstat_close(&f);
	return err;
}

int probe_schedstat_unchanged(const struct probe_schedstat *before, const struct probe_schedstat *now)
{
	return before->timeslices != 0 && now->timeslices == before->timeslices && now->run_ns == before->run_ns;
}

int probe_schedstat_check_pays(uint64_t check_ns, uint64_t read_ns, const struct probe_schedstat *a,
			       const struct probe_schedstat *b, uint64_t ticks, uint64_t wall_ns)
{
	if (!check_ns || !read_ns || !ticks || !wall_ns || !a->timeslices || b->timeslices < a->timeslices ||
	    b->run_ns < a->run_ns || b->wait_ns < a->wait_ns)
		return 0;
	/* woken but not yet on a CPU, a thread reads "running" in its syscall
	 * file while its schedstat has not moved: the one change the check
	 * cannot see. Reuse is wrong only then, so only a thread that waited
	 * for a CPU under PROBE_SCHEDSTAT_WAIT_MAX of the time is checked. */
	if ((double)(b->wait_ns - a->wait_ns) > PROBE_SCHEDSTAT_WAIT_MAX * (double)wall_ns)
		return 0;
	double hit = 1.0 - (double)(b->timeslices - a->timeslices) / (double)ticks -
		     (double)(b->run_ns - a->run_ns) / (double)wall_ns;
	/* an eighth to spare, so that noise in either cost does not flip it */
	return hit * (double)read_ns > 1.125 * (double)check_ns;
}

int probe_schedstat_voluntary(pid_t pid, pid_t tid, uint64_t *n)
{
	char path[PATH_MAX], buf[4096];
	int err = probe_proc_path(path, sizeof(path), "%d/task/%d/status", (int)pid, (int)tid);
	if (err < 0)
		return err;
	ssize_t len = probe_read_file(path, buf, sizeof(buf));
	if (len < 0)
		return len == -ENOENT ? -ESRCH : (int)len;
	static const char key[] = "\nvoluntary_ctxt_switches:";
	const char *at = strstr(buf, key);
	unsigned long long v;
	if (!at || sscanf(at + sizeof(key) - 1, "%llu", &v) != 1)
		return -EINVAL;
	*n = v;
	return 0;
}
