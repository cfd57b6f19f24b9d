/*
 * syscall.c — the syscall probe: open once, pread per sample, parse in place.
 *
 * The parser is hand-written rather than strtoull-based: it runs hundreds of
 * times per second per worker, and strtoull's locale and base handling cost
 * more than the whole parse needs.
 */
#include "probe_syscall.h"
#include "probe_proc.h"
#include "syscall_int.h"
#include "fdbudget_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <string.h>
#include <unistd.h>

static const char no_access_text[] =
	"no access to the task's /proc syscall file: run loopstat as the same user as the worker, "
	"as root, or with CAP_SYS_PTRACE (setcap cap_sys_ptrace+ep); under Yama "
	"kernel.yama.ptrace_scope=1 the worker can allow it with prctl(PR_SET_PTRACER, "
	"<monitor pid> or PR_SET_PTRACER_ANY)";

const char *probe_no_access_text(void)
{
	return no_access_text;
}

enum probe_sc_state probe_sc_state_of_error(int err)
{
	switch (err) {
	case -ESRCH:
	case -ENOENT:
		return PROBE_SC_GONE;
	case -EACCES:
	case -EPERM:
		return PROBE_SC_NO_ACCESS;
	default:
		return 0;
	}
}

static inline int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* " 0x<hex>" at *p (one leading space required); advances *p. */
static int parse_hex_word(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	if (end - s < 4 || s[0] != ' ' || s[1] != '0' || s[2] != 'x')
		return -EINVAL;
	s += 3;
	uint64_t v = 0;
	int digits = 0;
	for (; s < end; s++, digits++) {
		int d = hexval(*s);
		if (d < 0)
			break;
		if (digits == 16)
			return -EINVAL; /* more than 64 bits */
		v = v << 4 | (uint64_t)d;
	}
	if (digits == 0)
		return -EINVAL;
	*out = v;
	*p = s;
	return 0;
}

/* A decimal syscall number, possibly "-1"; advances *p. */
static int parse_nr(const char **p, const char *end, long *out)
{
	const char *s = *p;
	int neg = s < end && *s == '-';
	s += neg;
	long v = 0;
	int digits = 0;
	for (; s < end && *s >= '0' && *s <= '9'; s++, digits++) {
		if (digits == 9)
			return -EINVAL; /* no syscall number is that large */
		v = v * 10 + (*s - '0');
	}
	if (digits == 0)
		return -EINVAL;
	*out = neg ? -v : v;
	*p = s;
	return 0;
}

/* After the last word: nothing, or a newline and nothing. */
static int at_line_end(const char *s, const char *end)
{
	return s == end || (s + 1 == end && *s == '\n');
}

int probe_syscall_parse(const char *buf, size_t len, struct probe_sc_sample *out)
{
	const char *p = buf, *end = buf + len;

	memset(out, 0, sizeof(*out));
	out->nr = -1;
	if (len == 0) {
		out->state = PROBE_SC_GONE;
		return 0;
	}
	if (len >= 7 && memcmp(buf, "running", 7) == 0 && at_line_end(buf + 7, end)) {
		out->state = PROBE_SC_RUNNING;
		return 0;
	}

	long nr;
	if (parse_nr(&p, end, &nr) < 0 || nr < -1)
		goto malformed;
	if (nr == -1) {
		if (parse_hex_word(&p, end, &out->sp) < 0 || parse_hex_word(&p, end, &out->pc) < 0 ||
		    !at_line_end(p, end))
			goto malformed;
		/* An exited task not yet reaped has no stack: the kernel reports
		 * "-1 0x0 0x0". A live user task always has a stack and a pc. */
		out->state = out->sp == 0 && out->pc == 0 ? PROBE_SC_GONE : PROBE_SC_NOT_IN_SYSCALL;
		return 0;
	}
	for (int i = 0; i < 6; i++)
		if (parse_hex_word(&p, end, &out->args[i]) < 0)
			goto malformed;
	if (parse_hex_word(&p, end, &out->sp) < 0 || parse_hex_word(&p, end, &out->pc) < 0 ||
	    !at_line_end(p, end))
		goto malformed;
	out->state = PROBE_SC_IN_SYSCALL;
	out->nr = nr;
	return 0;

malformed:
	memset(out, 0, sizeof(*out));
	out->nr = -1;
	return -EINVAL;
}

/* Opens p's file (again), charged to the fd budget as entry p->fdb. */
static int sc_open(struct probe_syscall *p)
{
	static uint64_t serials;
	char path[PATH_MAX];

	p->fd = -1;
	p->serial = __atomic_add_fetch(&serials, 1, __ATOMIC_RELAXED);
	p->err = probe_proc_path(path, sizeof(path), "%d/task/%d/syscall", (int)p->pid, (int)p->tid);
	if (p->err < 0)
		return p->err;
	probe__fd_make_room();
	p->fd = open(path, O_RDONLY | O_CLOEXEC);
	p->err = p->fd < 0 ? -errno : 0;
	if (p->fd >= 0)
		p->fdb = probe__fd_charge(p->fd, p->fdb);
	return p->err;
}

int probe_syscall_open(struct probe_syscall *p, pid_t pid, pid_t tid)
{
	p->pid = pid;
	p->tid = tid;
	p->fdb = 0;
	return sc_open(p);
}

int probe__syscall_ensure(struct probe_syscall *p)
{
	if (p->fd >= 0 && !probe__fd_live(p->fdb, p->fd))
		return sc_open(p);   /* the budget closed it: a new serial, so a batch registers it anew */
	return 0;
}

void probe_syscall_close(struct probe_syscall *p)
{
	probe__fd_release(p->fdb, p->fd);
	p->fdb = 0;
	p->fd = -1;
	p->err = -EBADF;
	p->serial = 0;
}

/* Sets out to an error state; returns 0 if err maps to one, else err. */
static int sample_error(int err, struct probe_sc_sample *out)
{
	memset(out, 0, sizeof(*out));
	out->nr = -1;
	out->state = probe_sc_state_of_error(err);
	return out->state ? 0 : err;
}

int probe__sc_result(const char *buf, long res, struct probe_sc_sample *out)
{
	if (res < 0)
		return sample_error((int)res, out);
	if (res >= PROBE__SC_BUF_LEN) {
		memset(out, 0, sizeof(*out));
		out->nr = -1;
		return -EINVAL; /* longer than any line the kernel writes */
	}
	return probe_syscall_parse(buf, (size_t)res, out);
}

int probe_syscall_sample(struct probe_syscall *p, struct probe_sc_sample *out)
{
	char buf[PROBE__SC_BUF_LEN];

	probe__syscall_ensure(p);
	if (p->fd < 0)
		return probe__sc_result(NULL, p->err ? p->err : -EBADF, out);
	ssize_t n;
	do
		n = pread(p->fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	return probe__sc_result(buf, n < 0 ? -errno : n, out);
}

int probe_sc_futex_wait(const struct probe_sc_sample *s, uint64_t *key)
{
	if (s->state != PROBE_SC_IN_SYSCALL || s->nr != SYS_futex)
		return 0;
	/* the op's command, without FUTEX_PRIVATE_FLAG or FUTEX_CLOCK_REALTIME */
	unsigned cmd = (unsigned)s->args[1] & FUTEX_CMD_MASK;
	if (cmd != FUTEX_WAIT && cmd != FUTEX_WAIT_BITSET)
		return 0;
	*key = s->args[0] & ~(uint64_t)7;
	return cmd == FUTEX_WAIT_BITSET ? PROBE_FUTEX_WAIT_BITSET : PROBE_FUTEX_WAIT;
}
