/*
 * fd.c — fd targets: readlink, kind, and a per-window cache.
 */
#include "probe_fd.h"
#include "probe_proc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A failed look at /proc/PID/fd/FD: ENOENT is either the fd closed
 * (-EBADF) or the process gone (-ESRCH); any other error as it is. */
static int fd_error(pid_t pid, int err)
{
	char path[PATH_MAX];
	if (err != -ENOENT)
		return err;
	if (probe_proc_path(path, sizeof(path), "%d", (int)pid) < 0 || access(path, F_OK) < 0)
		return -ESRCH;
	return -EBADF;
}

int probe_fd_readlink(pid_t pid, int fd, char *buf, size_t len)
{
	char path[PATH_MAX];
	if (len == 0)
		return -EINVAL;
	int err = probe_proc_path(path, sizeof(path), "%d/fd/%d", (int)pid, fd);
	if (err < 0)
		return err;
	ssize_t n = readlink(path, buf, len - 1);
	if (n < 0)
		return fd_error(pid, -errno);
	buf[n] = '\0';
	return (int)n;
}

int probe_fd_inode(pid_t pid, int fd, uint64_t *ino)
{
	char path[PATH_MAX];
	struct stat st;
	int err = probe_proc_path(path, sizeof(path), "%d/fd/%d", (int)pid, fd);
	if (err < 0)
		return err;
	if (stat(path, &st) < 0)
		return fd_error(pid, -errno);
	*ino = (uint64_t)st.st_ino;
	return 0;
}

/* "<prefix>[<decimal>]" -> the number, or 0. */
static uint64_t bracket_inode(const char *link, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(link, prefix, n) != 0 || link[n] != '[')
		return 0;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(link + n + 1, &end, 10);
	if (errno || end == link + n + 1 || *end != ']' || end[1])
		return 0;
	return v;
}

enum probe_fd_kind probe_fd_kind_of(const char *link, uint64_t *inode)
{
	uint64_t ino;
	*inode = 0;
	if (link[0] == '/')
		return PROBE_FD_FILE;
	if ((ino = bracket_inode(link, "socket:"))) {
		*inode = ino;
		return PROBE_FD_SOCKET;
	}
	if ((ino = bracket_inode(link, "pipe:"))) {
		*inode = ino;
		return PROBE_FD_PIPE;
	}
	if (strcmp(link, "anon_inode:[eventpoll]") == 0)
		return PROBE_FD_EVENTPOLL;
	if (strcmp(link, "anon_inode:[io_uring]") == 0)
		return PROBE_FD_IO_URING;
	if (strncmp(link, "anon_inode:", 11) == 0)
		return PROBE_FD_ANON;
	return PROBE_FD_OTHER;
}

int probe_fd_target(pid_t pid, int fd, struct probe_fd_target *out)
{
	memset(out, 0, sizeof(*out));
	int n = probe_fd_readlink(pid, fd, out->text, sizeof(out->text));
	if (n < 0) {
		out->text[0] = '\0';
		return n;
	}
	out->kind = probe_fd_kind_of(out->text, &out->inode);
	if (out->kind == PROBE_FD_SOCKET) {
		char desc[PROBE_TARGET_LEN];
		/* not found (another family, or gone meanwhile): keep socket:[N] */
		if (probe_net_describe(pid, out->inode, desc, sizeof(desc)) == 0)
			memcpy(out->text, desc, sizeof(out->text));
	}
	return 0;
}

/* The cache: open addressing over a power-of-two table; an entry belongs to
 * the current window only if its generation matches. */
struct fd_entry {
	uint64_t gen; /* window it was resolved in; 0 = never */
	pid_t    pid;
	int      fd;
	int      err; /* result of the resolution */
	struct probe_fd_target target;
};

struct probe_fd_cache {
	struct fd_entry *entries; /* owned, `mask + 1` of them */
	size_t   mask;
	uint64_t gen;             /* current window, >= 1 */
	uint64_t lookups, resolved;
};

/* Probe this many slots before evicting the home slot. */
#define FD_CACHE_PROBES 8

struct probe_fd_cache *probe_fd_cache_new(size_t capacity)
{
	size_t n = 16;
	while (n < capacity && n < ((size_t)1 << 24))
		n <<= 1;
	struct probe_fd_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->entries = calloc(n, sizeof(*c->entries));
	if (!c->entries) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->mask = n - 1;
	c->gen = 1;
	return c;
}

void probe_fd_cache_delete(struct probe_fd_cache *c)
{
	if (!c)
		return;
	free(c->entries);
	free(c);
}

void probe_fd_cache_begin_window(struct probe_fd_cache *c)
{
	c->gen++;
}

static size_t fd_hash(pid_t pid, int fd)
{
	uint64_t h = ((uint64_t)(uint32_t)pid << 32 | (uint32_t)fd) * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 32);
}

int probe_fd_cache_get(struct probe_fd_cache *c, pid_t pid, int fd, const struct probe_fd_target **out)
{
	size_t home = fd_hash(pid, fd) & c->mask;
	struct fd_entry *slot = NULL;

	c->lookups++;
	for (size_t i = 0; i < FD_CACHE_PROBES; i++) {
		struct fd_entry *e = &c->entries[(home + i) & c->mask];
		if (e->gen == c->gen && e->pid == pid && e->fd == fd) {
			*out = &e->target;
			return e->err;
		}
		if (!slot && e->gen != c->gen)
			slot = e; /* stale or empty: free for this window */
	}
	if (!slot)
		slot = &c->entries[home]; /* a full run: evict, it will be re-resolved */
	slot->gen = c->gen;
	slot->pid = pid;
	slot->fd = fd;
	slot->err = probe_fd_target(pid, fd, &slot->target);
	c->resolved++;
	*out = &slot->target;
	return slot->err;
}

int probe_fd_cache_get_ino(struct probe_fd_cache *c, pid_t pid, int fd, uint64_t inode,
			   const struct probe_fd_target **out)
{
	int err = probe_fd_cache_get(c, pid, fd, out);
	if (inode == 0 || (err == 0 && (*out)->inode == inode))
		return err;
	/* resolved for another file (or failed meanwhile): resolve again, in
	 * place; the entry is the one get just returned */
	struct fd_entry *e = (struct fd_entry *)((char *)*out - offsetof(struct fd_entry, target));
	e->err = probe_fd_target(pid, fd, &e->target);
	c->resolved++;
	return e->err;
}

void probe_fd_cache_stats(const struct probe_fd_cache *c, uint64_t *lookups, uint64_t *resolved)
{
	*lookups = c->lookups;
	*resolved = c->resolved;
}
