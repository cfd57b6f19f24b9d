/*
 * safefile.c — directory checks and fd-relative, checked file access.
 */
#include "util/safefile.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Writable by someone else: world, or a group that is neither ours nor root's. */
static int others_write(const struct stat *st)
{
	return (st->st_mode & S_IWOTH) ||
	       ((st->st_mode & S_IWGRP) && st->st_gid != getegid() && st->st_gid != 0);
}

static int trusted_owner(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

/* 0, or -EPERM with why and the fix in err. */
static int check_dir(int fd, const char *shown, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		snprintf(err, errlen, "fstat(%s): %s", shown, strerror(e));
		return -e;
	}
	if (!trusted_owner(st.st_uid)) {
		snprintf(err, errlen, "%s belongs to uid %u, neither us (uid %u) nor root: its owner could make us "
		         "overwrite any file through it; chown it to uid %u, or choose another directory", shown,
		         (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid());
		return -EPERM;
	}
	if (others_write(&st) && !(st.st_mode & S_ISVTX)) {
		snprintf(err, errlen, "%s is writable by other users (mode %04o) without the sticky bit: they could "
		         "make us overwrite any file through it; chmod go-w it, or choose another directory", shown,
		         (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* dir/name for messages, cut to fit (the walk itself never uses it) */
static void join(char *out, size_t len, const char *dir, const char *name)
{
	size_t d = strlen(dir);
	if (d >= len)
		d = len - 1;
	memcpy(out, dir, d);
	if (d + 1 < len && strcmp(dir, "/"))
		out[d++] = '/';
	size_t n = strlen(name);
	if (n > len - 1 - d)
		n = len - 1 - d;
	memcpy(out + d, name, n);
	out[d + n] = '\0';
}

/* fd of "/" or ".", checked; shown set to match. */
static int walk_start(int absolute, char *shown, size_t len, char *err, size_t errlen)
{
	snprintf(shown, len, "%s", absolute ? "/" : ".");
	int fd = open(shown, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "open(%s): %s", shown, strerror(e));
		return -e;
	}
	int rc = check_dir(fd, shown, err, errlen);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	return fd;
}

/* The entry comp of directory fd (parent: its fstat), created if missing
 * and create; refused when others can write the parent and the entry is
 * not ours or root's. 0 with *st, or -errno. */
static int walk_entry(int fd, const struct stat *parent, const char *seen, const char *comp, int create,
                      struct stat *st, char *err, size_t errlen)
{
	char shown[PATH_MAX];
	join(shown, sizeof(shown), seen, comp);
	int shared = others_write(parent);
	if (fstatat(fd, comp, st, AT_SYMLINK_NOFOLLOW) < 0) {
		int e = errno;
		if (e != ENOENT || !create) {
			snprintf(err, errlen, "stat(%s): %s", shown, strerror(e));
			return -e;
		}
		if (shared) {
			snprintf(err, errlen, "refusing to create %s in %s: other users can write there (mode %04o), so "
			         "they could have made it first; create it yourself, or choose a directory of your own",
			         shown, seen, (unsigned)(parent->st_mode & 07777));
			return -EPERM;
		}
		if ((mkdirat(fd, comp, 0700) < 0 && errno != EEXIST) || fstatat(fd, comp, st, AT_SYMLINK_NOFOLLOW) < 0) {
			e = errno;
			snprintf(err, errlen, "mkdir(%s): %s", shown, strerror(e));
			return -e;
		}
	}
	if (shared && !trusted_owner(st->st_uid)) {
		snprintf(err, errlen, "%s belongs to uid %u, in %s which other users can write: it could point "
		         "anywhere; remove it, or choose another directory", shown, (unsigned)st->st_uid, seen);
		return -EPERM;
	}
	return 0;
}

int safefile_dir_open(const char *path, int create, char *err, size_t errlen)
{
	char todo[PATH_MAX], seen[PATH_MAX], link[PATH_MAX], rest[PATH_MAX];
	if (!path || !*path || strlen(path) >= sizeof(todo)) {
		snprintf(err, errlen, "empty or too long directory name");
		return -EINVAL;
	}
	snprintf(todo, sizeof(todo), "%s", path);
	int fd = walk_start(path[0] == '/', seen, sizeof(seen), err, errlen), hops = 0;
	const char *p = todo;
	while (fd >= 0) {
		p += strspn(p, "/");
		size_t n = strcspn(p, "/");
		if (n == 0)
			return fd;
		char comp[NAME_MAX + 1];
		if (n > NAME_MAX) {
			snprintf(err, errlen, "%.*s: name too long", (int)n, p);
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		if (!strcmp(comp, "."))
			continue;
		struct stat parent, st;
		int rc = 0;
		if (fstat(fd, &parent) < 0) {
			rc = -errno;
			snprintf(err, errlen, "fstat(%s): %s", seen, strerror(-rc));
		} else {
			rc = walk_entry(fd, &parent, seen, comp, create, &st, err, errlen);
		}
		if (rc == 0 && S_ISLNK(st.st_mode)) {
			/* resolved here, so every directory it leads through is checked too */
			ssize_t l = ++hops > 40 ? (errno = ELOOP, -1) : readlinkat(fd, comp, link, sizeof(link) - 1);
			if (l < 0 || (size_t)snprintf(rest, sizeof(rest), "%.*s/%s", (int)l, link, p) >= sizeof(rest)) {
				rc = l < 0 ? -errno : -ENAMETOOLONG;
				snprintf(err, errlen, "readlink(%s/%s): %s", seen, comp, strerror(-rc));
			} else {
				memcpy(todo, rest, strlen(rest) + 1);
				p = todo;
				if (link[0] == '/') {
					close(fd);
					fd = walk_start(1, seen, sizeof(seen), err, errlen);
				}
				continue;
			}
		}
		if (rc == 0) {
			int nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			char shown[PATH_MAX];
			join(shown, sizeof(shown), seen, comp);
			if (nfd < 0) {
				rc = -errno;
				snprintf(err, errlen, "open(%s): %s", shown, strerror(-rc));
			} else {
				close(fd);
				fd = nfd;
				memcpy(seen, shown, strlen(shown) + 1);
				rc = check_dir(fd, seen, err, errlen);
			}
		}
		if (rc < 0) {
			close(fd);
			return rc;
		}
	}
	return fd;
}

const char *safefile_refusal(const struct stat *st, char *buf, size_t len)
{
	static const struct { mode_t type; const char *name; } kinds[] = {
		{ S_IFLNK, "a symbolic link" }, { S_IFIFO, "a FIFO" }, { S_IFCHR, "a character device" },
		{ S_IFBLK, "a block device" }, { S_IFSOCK, "a socket" }, { S_IFDIR, "a directory" },
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if ((st->st_mode & S_IFMT) == kinds[i].type) {
			snprintf(buf, len, "is %s, not a regular file", kinds[i].name);
			return buf;
		}
	if (!S_ISREG(st->st_mode))
		snprintf(buf, len, "is not a regular file (mode %o)", (unsigned)st->st_mode);
	else if (st->st_uid != geteuid())
		snprintf(buf, len, "belongs to uid %u, not to us (uid %u)", (unsigned)st->st_uid, (unsigned)geteuid());
	else if (st->st_nlink != 1)
		snprintf(buf, len, "has %lu links: a hard link to some other file", (unsigned long)st->st_nlink);
	else
		return NULL;
	return buf;
}

int safefile_open(int dirfd, const char *name, int flags, mode_t mode, struct stat *st, char *err, size_t errlen)
{
	char why[128];
	/* what is there already is looked at first: a FIFO or a device is never opened */
	if (!(flags & O_EXCL) && fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    safefile_refusal(st, why, sizeof(why))) {
		snprintf(err, errlen, "%s %s", name, why);
		return -EPERM;
	}
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
	if (fd < 0) {
		int e = errno;
		/* it changed since: say what it is now */
		if (e != ENOENT && e != EEXIST && fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    safefile_refusal(st, why, sizeof(why))) {
			snprintf(err, errlen, "%s %s", name, why);
			return -EPERM;
		}
		snprintf(err, errlen, "open(%s): %s", name, strerror(e));
		return -e;
	}
	if (fstat(fd, st) < 0 || safefile_refusal(st, why, sizeof(why))) {
		int e = errno;
		snprintf(err, errlen, "%s %s", name, safefile_refusal(st, why, sizeof(why)) ? why : strerror(e));
		close(fd);
		return -EPERM;
	}
	return fd;
}

ssize_t safefile_read(int dirfd, const char *name, char *buf, size_t len, char *err, size_t errlen)
{
	struct stat st;
	buf[0] = '\0';
	int fd = safefile_open(dirfd, name, O_RDONLY, 0, &st, err, errlen);
	if (fd < 0)
		return fd;
	size_t want = len - 1, got = 0;
	if ((uint64_t)st.st_size < want)
		want = (size_t)st.st_size;
	while (got < want) {
		ssize_t n = read(fd, buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			snprintf(err, errlen, "read(%s): %s", name, strerror(e));
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return (ssize_t)got;
}

/* A name that is there and is not a regular file of ours: -EEXIST. Its
 * link count does not matter: a rename replaces the name, not the file. */
static int check_target(int dirfd, const char *name, const char *shown, char *err, size_t errlen)
{
	struct stat st;
	char why[128];
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return 0;
		int e = errno;
		snprintf(err, errlen, "stat(%s): %s", shown, strerror(e));
		return -e;
	}
	st.st_nlink = 1;
	if (!safefile_refusal(&st, why, sizeof(why)))
		return 0;
	snprintf(err, errlen, "%s %s; loopstat replaces only regular files of its own", shown, why);
	return -EEXIST;
}

static int write_all(int fd, const char *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

int safefile_tmp_open(int dirfd, const char *name, mode_t mode, char *tmp, size_t tlen, char *err, size_t errlen)
{
	int fd = -EEXIST;
	for (int i = 0; i < 16 && fd == -EEXIST; i++) {
		uint64_t r;
		if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r)) {
			uint64_t t = mono_ns();
			r = t % 1000000000ull * 0x9e3779b97f4a7c15ull ^ t / 1000000000ull ^ (uint64_t)i;
		}
		/* hidden, and never ending in the name's own suffix (.prom) */
		snprintf(tmp, tlen, ".%.200s.tmp.%d.%016llx", name, (int)getpid(), (unsigned long long)r);
		struct stat st;
		fd = safefile_open(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, mode, &st, err, errlen);
	}
	return fd;
}

int safefile_commit(int dirfd, int fd, int write_err, const char *tmp, const char *name, const char *shown,
		    char *err, size_t errlen)
{
	if (!shown)
		shown = name;
	const char *what = "write";
	int rc = write_err;
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno, what = "fsync";
	if (close(fd) < 0 && rc == 0)
		rc = -errno, what = "close";
	if (rc < 0)
		snprintf(err, errlen, "%s(%s): %s", what, tmp, strerror(-rc));
	/* once more, as late as can be: what is there now is what gets replaced */
	if (rc == 0)
		rc = check_target(dirfd, name, shown, err, errlen);
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0) {
		rc = -errno;
		snprintf(err, errlen, "rename(%s, %s): %s", tmp, shown, strerror(-rc));
	}
	if (rc < 0) {
		unlinkat(dirfd, tmp, 0);
		return rc;
	}
	if (fsync(dirfd) < 0) {
		rc = -errno;
		snprintf(err, errlen, "fsync(the directory of %s): %s", shown, strerror(-rc));
	}
	return rc;
}

int safefile_replace(int dirfd, const char *name, const char *shown, const char *buf, size_t len, mode_t mode,
                     char *err, size_t errlen)
{
	char tmp[NAME_MAX + 1];
	if (!shown)
		shown = name;
	int rc = check_target(dirfd, name, shown, err, errlen);
	if (rc < 0)
		return rc;
	int fd = safefile_tmp_open(dirfd, name, mode, tmp, sizeof(tmp), err, errlen);
	if (fd < 0)
		return fd;
	return safefile_commit(dirfd, fd, write_all(fd, buf, len), tmp, name, shown, err, errlen);
}
