/*
 * shm_writer.c — whether a segment's writer is still the process that
 * published it: alive with the same start time (pid reuse), owned by the
 * segment's owner (a setuid execve), and mapping the segment (any execve).
 * Run at open and then once a second per segment, so its cost is paid
 * for every instrumented worker on the host: what cannot have changed is
 * not read again (see shm_check_writer), the /proc files read at every
 * check are held open (see shm_writer_hold), and while the image is
 * unchanged the owner check is an fstat of /proc/PID, not a read of
 * status (see check_owner). Between the full checks (every MAPS_MAX_AGE_NS)
 * even the stat read is skipped while the mm that the last maps scan read
 * still lives: a 1-byte pread of that scan's held maps (see check_by_mm).
 */
#include "probe_proc.h"
#include "probe_stat.h"
#include "shm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MAPS_BUDGET  (4u << 20)   /* bytes of /proc/PID/maps read to find the segment */
/* A skipped maps scan is still done this often: see shm_check_writer. */
#define MAPS_MAX_AGE_NS (10ull * 1000000000ull)

/*
 * Why the checks may hold /proc/PID/stat, /proc/PID/status and the
 * /proc/PID directory open: at 1000 segments, opening and closing the
 * files at every check (once a second each) was half the cost of the
 * checks. A held procfs file pins the
 * struct pid it was opened for, not the pid number: once that process is
 * reaped, a read fails with ESRCH, even when the number names another
 * process by then, so a held fd can never read someone else's files.
 * They need no re-opening for anything their writer does: an execve keeps
 * the process's struct pid (de_thread() gives the exec'ing thread the
 * leader's), every read generates the text anew from the task as it is
 * then (its credentials, its new image), and what the reader may see of
 * the image is decided at each read (ptrace_may_access), as for a fresh
 * open. What a held fd keeps is the proc root of the open: a handle's
 * checks read the /proc they started with.
 */
/* A fixture tree's file is no seq file and pins nothing: it is read per check. */
static int on_procfs(int fd)
{
	struct statfs fs;
	return fstatfs(fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
}

/* name NULL: the /proc/PID directory itself. */
static int held_open(struct shm_writer_memo *memo, pid_t pid, const char *name)
{
	char path[PATH_MAX];
	int err = name ? probe_proc_path(path, sizeof(path), "%d/%s", (int)pid, name)
		       : probe_proc_path(path, sizeof(path), "%d", (int)pid);
	if (err < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC | (name ? 0 : O_DIRECTORY));
	memo->proc_opens += fd >= 0;
	if (fd >= 0 && !on_procfs(fd)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

void shm_writer_hold(struct shm_writer_memo *memo, pid_t pid)
{
	shm_writer_release(memo);
	int stat_fd = held_open(memo, pid, "stat");
	int status_fd = stat_fd >= 0 ? held_open(memo, pid, "status") : -1;
	int dir_fd = status_fd >= 0 ? held_open(memo, pid, NULL) : -1;
	if (dir_fd < 0) {
		/* out of descriptors, or anything else: open per check, as before */
		if (stat_fd >= 0)
			close(stat_fd);
		if (status_fd >= 0)
			close(status_fd);
		return;
	}
	memo->stat_fd = stat_fd;
	memo->status_fd = status_fd;
	memo->dir_fd = dir_fd;
}

void shm_writer_release(struct shm_writer_memo *memo)
{
	if (memo->stat_fd >= 0)
		close(memo->stat_fd);
	if (memo->status_fd >= 0)
		close(memo->status_fd);
	if (memo->dir_fd >= 0)
		close(memo->dir_fd);
	if (memo->maps_fd >= 0)
		close(memo->maps_fd);
	memo->stat_fd = memo->status_fd = memo->dir_fd = memo->maps_fd = -1;
}

/*
 * The writer's /proc/PID/<name> into buf, NUL-terminated: a pread at
 * offset 0 of the held fd (where a seq file generates its text anew), or
 * open, read, close when none is held. -ESRCH once the process is gone
 * (held: ESRCH; opened: ENOENT; either: nothing to read).
 */
static ssize_t read_proc(struct shm_writer_memo *memo, int fd, pid_t pid, const char *name, char *buf, size_t len)
{
	ssize_t n;
	if (fd >= 0) {
		do
			n = pread(fd, buf, len - 1, 0);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			n = -errno;
		else
			buf[n] = '\0';
	} else {
		char path[PATH_MAX];
		int err = probe_proc_path(path, sizeof(path), "%d/%s", (int)pid, name);
		if (err < 0)
			return err;
		memo->proc_opens++;
		n = probe_read_file(path, buf, len);
	}
	return n == 0 || n == -ENOENT || n == -ESRCH ? -ESRCH : n;
}

/* "Uid:\t<real>\t<effective>\t..." of /proc/PID/status. */
static int read_uids(struct shm_writer_memo *memo, pid_t pid, uid_t *ruid, uid_t *euid)
{
	char buf[4096];
	memo->status_reads++;
	ssize_t n = read_proc(memo, memo->status_fd, pid, "status", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	const char *p = strstr(buf, "\nUid:");
	unsigned long r, e;
	if (!p || sscanf(p + 5, "%lu %lu", &r, &e) != 2)
		return -EINVAL;
	*ruid = (uid_t)r;
	*euid = (uid_t)e;
	return 0;
}

/*
 * The segment's owner must own the process now: both its real and its
 * effective uid (after a setuid execve the euid is another user's; a
 * privileged program can then also move its real uid). Only status gives
 * the real uid, and it is the dearest file to read (the kernel renders all
 * of it, ~9 us), so it is read at open, whenever the image changed, and at
 * the periodic full scan (MAPS_MAX_AGE_NS); in between, `euid_only`, an
 * fstat of the held /proc/PID gives the euid (its owner is the task's euid
 * as it is now: fs/proc/base.c pid_getattr, task_dump_owner, whose
 * non-dumpable rule skips 0555 directories), ~0.4 us.
 *
 * Why that is sound: a setuid execve moves the euid, caught at the next
 * check by the fstat (and it also changes the image, so status is read
 * too). What moves the real uid alone is setresuid/setreuid by a process
 * that already holds CAP_SETUID while it keeps the segment owner's euid
 * (one that may become any user anyway: no other user gains by it); that
 * is caught within MAPS_MAX_AGE_NS. (A reaped task's directory stats as
 * root without an error: the stat read before this, or check_by_mm's maps
 * read after it, is what tells a gone writer.)
 */
static int check_owner(struct shm_writer_memo *memo, pid_t pid, uid_t owner, int euid_only)
{
	if (euid_only) {
		struct stat dir;
		if (fstat(memo->dir_fd, &dir) < 0)
			return errno == ESRCH || errno == ENOENT ? -ESRCH : -errno;
		return dir.st_uid == owner ? 0 : -EPERM;
	}
	uid_t ruid = 0, euid = 0;
	int err = read_uids(memo, pid, &ruid, &euid);
	if (err < 0)
		return err;
	return ruid == owner && euid == owner ? 0 : -EPERM;
}

int shm_maps_line(const char *line, unsigned *maj, unsigned *min, unsigned long long *ino)
{
	const char *p = line;
	for (int field = 0; field < 3; field++) {
		p = strchr(p, ' ');
		if (!p)
			return -EINVAL;
		p++;
	}
	char *end;
	unsigned long a = strtoul(p, &end, 16);
	if (*end != ':')
		return -EINVAL;
	unsigned long b = strtoul(end + 1, &end, 16);
	if (*end != ' ')
		return -EINVAL;
	unsigned long long i = strtoull(end + 1, &end, 10);
	if (*end != ' ' && *end != '\n' && *end)
		return -EINVAL;
	*maj = (unsigned)a;
	*min = (unsigned)b;
	*ino = i;
	return 0;
}

int shm_maps_walk(int fd, int (*fn)(unsigned maj, unsigned min, unsigned long long ino, void *arg), void *arg)
{
	char buf[16384 + 1];
	size_t have = 0, total = 0;
	while (total < MAPS_BUDGET) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		total += (size_t)n;
		have += (size_t)n;
		buf[have] = '\0';
		char *line = buf, *nl;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			unsigned maj, min;
			unsigned long long ino;
			if (shm_maps_line(line, &maj, &min, &ino) == 0 && ino && fn(maj, min, ino, arg))
				return 1;
			line = nl + 1;
		}
		/* keep a partial last line; one longer than the buffer is skipped */
		have = line == buf && have == sizeof(buf) - 1 ? 0 : have - (size_t)(line - buf);
		memmove(buf, line, have);
	}
	return -ENOLINK;
}

struct mapped_query {
	unsigned maj, min;
	ino_t ino;
};

static int is_segment(unsigned maj, unsigned min, unsigned long long ino, void *arg)
{
	const struct mapped_query *q = arg;
	return maj == q->maj && min == q->min && ino == (unsigned long long)q->ino;
}

/*
 * Whether the process maps the segment file: a writer maps its segment
 * before it publishes it and keeps it mapped until it unlinks it, so a
 * segment its process no longer maps was left behind by an execve().
 * Opened in the held /proc/PID when there is one (the process the held
 * files mean, never a newcomer under the pid), and, found mapped, kept in
 * the memo for check_by_mm. 0, -ENOLINK (not mapped, or maps larger than
 * MAPS_BUDGET), -ESRCH, -EACCES.
 */
static int check_mapped(struct shm_writer_memo *memo, pid_t pid, dev_t dev, ino_t ino)
{
	char path[PATH_MAX];
	int err, fd;
	if (memo->dir_fd >= 0) {
		fd = openat(memo->dir_fd, "maps", O_RDONLY | O_CLOEXEC);
	} else {
		if ((err = probe_proc_path(path, sizeof(path), "%d/maps", (int)pid)) < 0)
			return err;
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	struct mapped_query q = { major(dev), minor(dev), ino };
	err = shm_maps_walk(fd, is_segment, &q);
	err = err == 1 ? 0 : err == 0 ? -ENOLINK : err;
	if (memo->maps_fd >= 0)
		close(memo->maps_fd);
	memo->maps_fd = -1;
	if (err == 0 && memo->dir_fd >= 0 && on_procfs(fd))
		memo->maps_fd = fd;
	else
		close(fd);
	return err;
}

/* Whether the image fields can tell one image from the next: the kernel
 * shows 0 (or 1 for startcode, endcode) to a reader that may not ptrace
 * the task, and an old kernel or a short line gives 0. */
static int image_visible(const uint64_t *image)
{
	for (int i = 0; i < PROBE_STAT_IMAGE_FIELDS; i++)
		if (image[i] <= 1)
			return 0;
	return 1;
}

/*
 * Whether the maps scan can be skipped: the process still has the memory
 * image that the last successful scan saw it map the segment in.
 *
 * Why that holds: an execve() (the only way a live process loses its image
 * short of unmapping the segment itself) builds a new mm whose code, data,
 * brk, stack and argument/environment bounds — the ten image fields of
 * /proc/PID/stat — are all set anew, and under ASLR (the default) the
 * stack, brk and a PIE's code move at every exec, so a changed image shows
 * in the stat line this check reads anyway. The memo is taken from the
 * stat read *before* the scan that found the mapping, so an exec during or
 * after that scan shows as a difference next time. Two cases are left to
 * the periodic full scan (every MAPS_MAX_AGE_NS): an exec with ASLR off
 * that lays out the same binary with the same argument and environment
 * sizes identically, and a writer that unmaps its own segment without
 * exec'ing; neither gains another user anything (same process, same
 * owner — the euid check, run every time, is what guards against a
 * setuid exec), they only delay "no longer maps it" by up to that long.
 */
static int image_unchanged(const struct shm_writer_memo *memo, const struct probe_stat *st, uint64_t now)
{
	return memo->scanned_ns && now - memo->scanned_ns < MAPS_MAX_AGE_NS && image_visible(st->image) &&
	       memcmp(memo->image, st->image, sizeof(st->image)) == 0;
}

/*
 * Whether the check is told without reading /proc/PID/stat: 1 with *err
 * set, or 0 (the full check follows). The last successful maps scan's fd
 * is held: it is bound to the mm it was opened on (proc_maps_open takes
 * it; each read first takes the task of the held /proc/PID, -ESRCH once
 * reaped, then mmget_not_zero of that mm, 0 bytes once released), so a
 * 1-byte pread (~1.2 us, against ~3.3 us for the stat line) that returns
 * a byte says: the process the held files mean is not reaped, and the mm
 * in which that scan found the segment still lives. An execve() always
 * makes a new mm and releases the old one, and exit releases the mm
 * before the process becomes a zombie, so that is the same process with
 * the same image: nothing the stat read would tell (alive, start time —
 * the held directory pins the struct pid —, image) has changed.
 *
 * What keeps an mm alive besides its process: another one sharing it
 * (a vfork or CLONE_VM child), until that one execs or exits; a writer
 * that exec'd, or was killed and is not reaped yet, passes here until
 * then, at most until the full check (MAPS_MAX_AGE_NS), as with
 * image_unchanged's cases (same process, same owner: the euid is still
 * checked every time, so a setuid exec is caught at once). The
 * owner check is the euid from the fstat of the held /proc/PID, as in
 * check_owner; it is taken before the pread, because a reaped task's
 * directory stats as root without an error: liveness comes from the
 * maps read after it. A pread that gives no byte closes the fd, and the
 * full check reads stat (-ESRCH for a reaped writer) and scans maps anew
 * (the mm that the last scan read is gone: the image changed).
 */
static int check_by_mm(struct shm_writer_memo *memo, uid_t owner, uint64_t now, int *err)
{
	if (memo->maps_fd < 0 || memo->dir_fd < 0 || !memo->scanned_ns || now - memo->scanned_ns >= MAPS_MAX_AGE_NS)
		return 0;
	int owner_err = check_owner(memo, 0, owner, 1);
	char c;
	ssize_t n;
	do
		n = pread(memo->maps_fd, &c, 1, 0);
	while (n < 0 && errno == EINTR);
	if (n != 1) {
		close(memo->maps_fd);
		memo->maps_fd = -1;
		memo->scanned_ns = 0;
		return 0;
	}
	memo->stat_skipped++;
	memo->maps_skipped++;
	*err = owner_err;
	return 1;
}

int shm_check_writer(pid_t pid, uint64_t start_time, uid_t owner, dev_t dev, ino_t ino, int mapped,
		     struct shm_writer_memo *memo)
{
	char buf[2048]; /* 52 fields of up to 20 digits and comm */
	struct probe_stat st;
	uint64_t now = probe_mono_ns();
	int err;
	if (mapped && check_by_mm(memo, owner, now, &err))
		return err;
	memo->stat_reads++;
	ssize_t n = read_proc(memo, memo->stat_fd, pid, "stat", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	if (probe_stat_parse(buf, &st) < 0)
		return -ESRCH;
	/* also what tells that a pid was reused before the held files were opened */
	if (st.start_time != start_time)
		return -ESTALE;
	int unchanged = mapped && image_unchanged(memo, &st, now);
	if ((err = check_owner(memo, pid, owner, unchanged && memo->dir_fd >= 0)) < 0)
		return err;
	if (!mapped)
		return 0;
	if (unchanged) {
		memo->maps_skipped++;
		return 0;
	}
	memo->maps_scans++;
	memo->scanned_ns = 0;
	if ((err = check_mapped(memo, pid, dev, ino)) < 0)
		return err;
	if (image_visible(st.image)) {
		memcpy(memo->image, st.image, sizeof(memo->image));
		memo->scanned_ns = now;
	}
	return 0;
}
