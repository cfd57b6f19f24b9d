/*
 * perfmap.c — a process's perf map (/tmp/perf-PID.map) read as hostile
 * input and kept sorted for lookups (probe_perfmap.h).
 */
#include "probe_perfmap.h"
#include "probe_clock.h"
#include "probe_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PM_PIDS     8                /* processes whose maps are cached */
#define PM_CHECK_NS 1000000000ull    /* look at a map again at most this often */
#define PM_CHUNK    65536            /* bytes read at a time */
#define PM_NAMES_MAX (16u << 20)     /* bytes of names kept per process */
#define PM_SCAN     16               /* overlapping entries looked at per lookup */

struct pm_ent {
	uint64_t start, end;
	uint32_t name;     /* offset into names */
	uint32_t seq;      /* line number: a later line wins an overlap */
};

struct pm_pid {
	pid_t    pid;          /* 0: free */
	uint64_t used;         /* LRU tick */
	uint64_t checked_ns;   /* last look at the file; 0: never */
	dev_t    dev;
	ino_t    ino;
	uint64_t read_off;     /* bytes consumed (whole lines) */
	int      status;       /* probe_perfmap_status */
	struct pm_ent *ents;   /* sorted by start, owned */
	size_t   n, cap;
	char    *names;        /* NUL-terminated names, owned */
	size_t   names_len, names_cap;
	uint32_t seq;
};

struct probe_perfmap {
	struct pm_pid pids[PM_PIDS];
	uint64_t tick;
	char    *buf;          /* PM_CHUNK + a partial line, owned */
};

struct probe_perfmap *probe_perfmap_new(void)
{
	struct probe_perfmap *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	if (!(m->buf = malloc(2 * PM_CHUNK))) {
		free(m);
		return NULL;
	}
	return m;
}

static void pm_clear(struct pm_pid *p)
{
	free(p->ents);
	free(p->names);
	memset(p, 0, sizeof(*p));
}

void probe_perfmap_delete(struct probe_perfmap *m)
{
	if (!m)
		return;
	for (int i = 0; i < PM_PIDS; i++)
		pm_clear(&m->pids[i]);
	free(m->buf);
	free(m);
}

void probe_perfmap_forget(struct probe_perfmap *m, pid_t pid)
{
	for (int i = 0; m && i < PM_PIDS; i++)
		if (m->pids[i].pid == pid)
			pm_clear(&m->pids[i]);
}

/* pid as its own namespace numbers it (the last NSpid field), which is the
 * number in the map's name; pid itself where the kernel has no NSpid. */
static long ns_pid(pid_t pid)
{
	char path[128], buf[4096];
	if (probe_proc_path(path, sizeof(path), "%d/status", (int)pid) < 0 ||
	    probe_read_file(path, buf, sizeof(buf)) < 0)
		return pid;
	const char *l = strstr(buf, "\nNSpid:");
	if (!l)
		return pid;
	l += 7;
	long last = pid;
	for (;;) {
		char *end;
		long v = strtol(l, &end, 10);
		if (end == l)
			break;
		last = v;
		l = end;
	}
	return last > 0 ? last : pid;
}

/* Opens the map through pid's root, no component a link: an fd, or -ELOOP
 * (a link), -EPERM (not a regular file of the target's user or root),
 * -ENOENT, -errno. */
static int pm_open(pid_t pid, struct stat *st)
{
	char path[128], name[64];
	struct stat owner;
	if (probe_proc_path(path, sizeof(path), "%d", (int)pid) < 0 || stat(path, &owner) < 0)
		return -ESRCH;
	if (probe_proc_path(path, sizeof(path), "%d/root", (int)pid) < 0)
		return -ENAMETOOLONG;
	snprintf(name, sizeof(name), "perf-%ld.map", ns_pid(pid));
	int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	int tmp = openat(root, "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int err = tmp < 0 ? -errno : 0;
	close(root);
	if (tmp < 0)
		return err == -ENOTDIR ? -ELOOP : err;
	/* O_NONBLOCK: a FIFO planted there must not hold the sampler */
	int fd = openat(tmp, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	err = fd < 0 ? -errno : 0;
	close(tmp);
	if (fd < 0)
		return err;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) || (st->st_uid != owner.st_uid && st->st_uid != 0)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* A name made safe to print: control bytes and DEL become '?', and one
 * over the bound is cut at its last space before it, never mid-word.
 * Returns its offset in p->names, or -1 when the names are full. */
static long pm_add_name(struct pm_pid *p, const char *s, size_t len)
{
	if (len > PROBE_PERFMAP_NAME_MAX) {
		size_t cut = PROBE_PERFMAP_NAME_MAX;
		while (cut > 0 && s[cut] != ' ')
			cut--;
		len = cut ? cut : PROBE_PERFMAP_NAME_MAX;
	}
	if (p->names_len + len + 1 > PM_NAMES_MAX)
		return -1;
	if (p->names_len + len + 1 > p->names_cap) {
		size_t cap = p->names_cap ? p->names_cap : 65536;
		while (cap < p->names_len + len + 1)
			cap *= 2;
		char *n = realloc(p->names, cap);
		if (!n)
			return -1;
		p->names = n;
		p->names_cap = cap;
	}
	long off = (long)p->names_len;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		p->names[p->names_len++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	p->names[p->names_len++] = '\0';
	return off;
}

static int parse_hex(const char **s, const char *end, uint64_t *v)
{
	const char *q = *s;
	if (end - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
		q += 2;
	uint64_t x = 0;
	int digits = 0;
	for (; q < end && digits <= 16; q++, digits++) {
		int d = *q >= '0' && *q <= '9' ? *q - '0' : *q >= 'a' && *q <= 'f' ? *q - 'a' + 10 :
			*q >= 'A' && *q <= 'F' ? *q - 'A' + 10 : -1;
		if (d < 0)
			break;
		x = x << 4 | (uint64_t)d;
	}
	if (digits == 0 || digits > 16 || q == end || *q != ' ')
		return 0;
	*v = x;
	*s = q + 1;
	return 1;
}

/* One line (without its newline) into p's new entries; malformed lines
 * are skipped. Returns -EFBIG when a bound is reached, -ENOMEM, else 0. */
static int pm_line(struct pm_pid *p, const char *s, const char *end)
{
	uint64_t start, size;
	if (!parse_hex(&s, end, &start) || !parse_hex(&s, end, &size) || size == 0 || size > (1ull << 32) ||
	    start + size < start || s == end)
		return 0;
	if (p->n == PROBE_PERFMAP_ENTRIES_MAX)
		return -EFBIG;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 1024;
		struct pm_ent *e = realloc(p->ents, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		p->ents = e;
		p->cap = cap;
	}
	long name = pm_add_name(p, s, (size_t)(end - s));
	if (name < 0)
		return -EFBIG;
	p->ents[p->n++] = (struct pm_ent){ start, start + size, (uint32_t)name, p->seq++ };
	return 0;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct pm_ent *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts the new entries [from, n) and merges them into the sorted ones. */
static int pm_merge(struct pm_pid *p, size_t from)
{
	if (from == p->n)
		return 0;
	qsort(p->ents + from, p->n - from, sizeof(*p->ents), ent_cmp);
	if (from == 0 || ent_cmp(&p->ents[from - 1], &p->ents[from]) <= 0)
		return 0;
	struct pm_ent *out = malloc(p->cap * sizeof(*out));
	if (!out)
		return -ENOMEM;
	size_t i = 0, j = from, k = 0;
	while (i < from || j < p->n)
		out[k++] = j == p->n || (i < from && ent_cmp(&p->ents[i], &p->ents[j]) <= 0) ? p->ents[i++] : p->ents[j++];
	free(p->ents);
	p->ents = out;
	return 0;
}

/* Reads the map's lines from p->read_off on (whole lines only: the writer
 * may be mid-line), within the byte bound. */
static int pm_read(struct probe_perfmap *m, struct pm_pid *p, int fd, uint64_t size)
{
	size_t from = p->n, carry = 0;
	int err = 0;
	uint64_t limit = size < PROBE_PERFMAP_FILE_MAX ? size : PROBE_PERFMAP_FILE_MAX;
	while (p->read_off + carry < limit && !err) {
		ssize_t r = pread(fd, m->buf + carry, PM_CHUNK, (off_t)(p->read_off + carry));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		size_t have = carry + (size_t)r;
		const char *s = m->buf, *end = m->buf + have;
		const char *nl;
		while (!err && (nl = memchr(s, '\n', (size_t)(end - s)))) {
			err = pm_line(p, s, nl);
			s = nl + 1;
		}
		p->read_off += (uint64_t)(s - m->buf);
		carry = (size_t)(end - s);
		if (carry >= PM_CHUNK) {   /* one line longer than a chunk: skip it */
			p->read_off += carry;
			carry = 0;
		} else {
			memmove(m->buf, s, carry);
		}
	}
	if (!err && size > PROBE_PERFMAP_FILE_MAX)
		err = -EFBIG;
	int merr = pm_merge(p, from);
	return merr ? merr : err;
}

/* Forgets what was read of the map (another file now, or none). */
static void pm_reset(struct pm_pid *p, dev_t dev, ino_t ino)
{
	p->n = 0;
	p->names_len = 0;
	p->read_off = 0;
	p->seq = 0;
	p->dev = dev;
	p->ino = ino;
	if (p->status == -EFBIG)
		p->status = 0;
}

/* Looks at pid's map if a second has passed: new lines read, a replaced
 * or shrunk file read again from the start. */
static int pm_refresh(struct probe_perfmap *m, struct pm_pid *p)
{
	uint64_t now = probe_mono_ns();
	if (p->checked_ns && now - p->checked_ns < PM_CHECK_NS)
		return 0;
	p->checked_ns = now;
	struct stat st;
	int fd = pm_open(p->pid, &st);
	if (fd < 0) {
		p->status = fd == -ENOENT || fd == -ESRCH ? 0 : fd;
		pm_reset(p, 0, 0);
		return 0;
	}
	if (st.st_dev != p->dev || st.st_ino != p->ino || (uint64_t)st.st_size < p->read_off)
		pm_reset(p, st.st_dev, st.st_ino);
	int err = 0;
	if (p->status != -EFBIG && (uint64_t)st.st_size > p->read_off)
		err = pm_read(m, p, fd, (uint64_t)st.st_size);
	close(fd);
	if (err == -ENOMEM)
		return err;
	if (err == -EFBIG || p->status != -EFBIG)
		p->status = err;
	return 0;
}

static struct pm_pid *pm_get(struct probe_perfmap *m, pid_t pid)
{
	struct pm_pid *victim = &m->pids[0];
	for (int i = 0; i < PM_PIDS; i++) {
		struct pm_pid *p = &m->pids[i];
		if (p->pid == pid) {
			p->used = ++m->tick;
			return p;
		}
		if (p->used < victim->used)
			victim = p;
	}
	pm_clear(victim);
	victim->pid = pid;
	victim->used = ++m->tick;
	return victim;
}

int probe_perfmap_lookup(struct probe_perfmap *m, pid_t pid, uint64_t addr, const char **name, uint64_t *offset)
{
	if (!m || pid <= 0)
		return 0;
	struct pm_pid *p = pm_get(m, pid);
	int err = pm_refresh(m, p);
	if (err < 0)
		return err;
	/* the last entry starting at or below addr, then back over a few
	 * overlapping ones for the newest that covers it */
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->ents[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct pm_ent *best = NULL;
	for (size_t i = lo, k = 0; i > 0 && k < PM_SCAN; i--, k++) {
		const struct pm_ent *e = &p->ents[i - 1];
		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	if (!best)
		return 0;
	*name = p->names + best->name;
	*offset = addr - best->start;
	return 1;
}

int probe_perfmap_status(const struct probe_perfmap *m, pid_t pid)
{
	for (int i = 0; m && i < PM_PIDS; i++)
		if (m->pids[i].pid == pid)
			return m->pids[i].status;
	return 0;
}
