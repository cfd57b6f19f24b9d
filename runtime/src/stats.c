/*
 * stats.c — the shared-memory stats writer (see loopstat_shm.h for the ABI).
 *
 * Process-wide state: one segment, created on first use. Slot acquisition
 * and the tag table are slow paths; the counters themselves are updated by
 * the owning thread through fl_stat_add()/fl_stat_set() with no locks.
 */
#include "fiberloop_stats.h"
#include "fl_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct {
	pthread_mutex_t lock;
	struct loopstat_shm_header *hdr; /* owned mapping, NULL when closed */
	size_t size;                     /* bytes mapped */
	/* The geometry, kept here and never read back from the shared file:
	 * whoever else can write it must not steer our stores. */
	uint32_t header_size, slot_size, slot_count;
	pid_t pid;                       /* creator; a forked child must not touch it */
	char path[PATH_MAX];
	int atexit_done;
} seg = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Field 22 of /proc/self/stat: clock ticks after boot. comm may hold spaces
 * and parentheses, so the fields are counted from the last ')'. */
static int self_start_time(uint64_t *out)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	/* after ") " comes field 3; field 22 is 19 spaces further */
	for (int field = 2; field < 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EINVAL;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p + 1, &end, 10);
	if (errno || end == p + 1)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * LOOPSTAT_SHM_MODE: octal digits only, at most 0777, readable by the owner
 * and never writable by group or others — anyone who can open the file for
 * writing can ftruncate it (a SIGBUS in every loop thread) or forge
 * counters. Returns 0, -EINVAL (not a mode) or -EPERM (unsafe mode).
 */
int fl__stats_parse_mode(const char *text, mode_t *out)
{
	unsigned long m = 0;
	const char *p = text;
	if (!*p)
		return -EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '7' || m > 0777)
			return -EINVAL;
		m = m * 8 + (unsigned long)(*p - '0');
	}
	return fl__stats_check_mode((mode_t)m, out);
}

int fl__stats_check_mode(mode_t m, mode_t *out)
{
	if (m > 0777)
		return -EINVAL;
	if (m & (S_IWGRP | S_IWOTH))
		return -EPERM;
	if (!(m & S_IRUSR))
		return -EINVAL;
	*out = m;
	return 0;
}

static const char *default_dir(void)
{
	const char *env = getenv(LOOPSTAT_SHM_DIR_ENV);
	return env && *env ? env : LOOPSTAT_SHM_DEFAULT_DIR;
}

/* Once per process: the loop keeps running with a private slot, but the
 * operator must learn why loopstat cannot see it. */
static void say_unpublished(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_unpublished(const char *fmt, ...)
{
	static int said;
	if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		return;
	char msg[PATH_MAX + 256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "libfiberloop: stats segment not published, loopstat cannot see this process: %s\n", msg);
}

static const char *mode_problem(int err)
{
	return err == -EPERM ? "refused: group/other write bits would let another user truncate "
			       "(SIGBUS) or forge the segment"
			     : "refused: not an octal mode 0..0777 readable by its owner";
}

static int configured_mode(const struct fl_stats_options *opts, mode_t *mode)
{
	int err;
	if (opts && opts->mode) {
		if ((err = fl__stats_check_mode(opts->mode, mode)) < 0)
			say_unpublished("mode %04o %s", (unsigned)opts->mode, mode_problem(err));
		return err;
	}
	const char *env = getenv(LOOPSTAT_SHM_MODE_ENV);
	if (!env || !*env) {
		*mode = 0600;
		return 0;
	}
	if ((err = fl__stats_parse_mode(env, mode)) < 0)
		say_unpublished(LOOPSTAT_SHM_MODE_ENV "=\"%.32s\" %s", env, mode_problem(err));
	return err;
}

static void unlink_at_exit(void)
{
	fl_stats_close();
}

/* "<dir>/<lead>loopstat.<pid>.<16 hex digits>" with a fresh random suffix:
 * a name no other user can claim first (the directory is shared). */
static int segment_name(char *buf, size_t len, const char *dir, const char *lead, uint64_t suffix)
{
	int n = snprintf(buf, len, "%s/%s" LOOPSTAT_SHM_PREFIX "%d.%016llx", dir, lead, (int)getpid(),
			 (unsigned long long)suffix);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int random_suffix(uint64_t *out)
{
	for (;;) {
		ssize_t n = getrandom(out, sizeof(*out), 0);
		if (n == (ssize_t)sizeof(*out))
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/* Publishes the complete segment under its final name, never replacing a
 * file that is there: readers only ever see a ready segment. */
static int publish(const char *tmp, const char *final)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* a filesystem without RENAME_NOREPLACE: link(2) refuses an existing name too */
	if (link(tmp, final) < 0)
		return -errno;
	unlink(tmp);
	return 0;
}

static void fill_header(struct loopstat_shm_header *h, unsigned slots, uint64_t start)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	h->magic = LOOPSTAT_SHM_MAGIC;
	h->abi_major = LOOPSTAT_SHM_ABI_MAJOR;
	h->abi_minor = LOOPSTAT_SHM_ABI_MINOR;
	h->byte_order = LOOPSTAT_SHM_BYTE_ORDER;
	h->header_size = sizeof(struct loopstat_shm_header);
	h->slot_size = sizeof(struct loopstat_shm_slot);
	h->slot_count = slots;
	h->pid = getpid();
	h->start_time = start;
	h->created_ns = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	__atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE);
}

/*
 * Creates "<dir>/.loopstat.<pid>.<suffix>" exclusively, sizes, maps and
 * fills it, then renames it to "<dir>/loopstat.<pid>.<suffix>". Returns 0
 * with the mapping in seg, or -errno with nothing left behind; *what names
 * the failing call.
 */
static int try_create(const char *dir, mode_t mode, unsigned slots, uint64_t start, const char **what)
{
	char tmp[PATH_MAX];
	uint64_t suffix;
	int err;

	*what = "getrandom";
	if ((err = random_suffix(&suffix)) < 0)
		return err;
	*what = "open";
	if ((err = segment_name(tmp, sizeof(tmp), dir, ".", suffix)) < 0 ||
	    (err = segment_name(seg.path, sizeof(seg.path), dir, "", suffix)) < 0)
		return err;
	int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;

	size_t size = sizeof(struct loopstat_shm_header) + (size_t)slots * sizeof(struct loopstat_shm_slot);
	void *map = MAP_FAILED;
	/* the umask must not narrow an explicitly configured mode */
	*what = "fchmod";
	if (fchmod(fd, mode) < 0)
		goto fail;
	*what = "ftruncate";
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	*what = "mmap";
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail;
	close(fd);
	fd = -1;
	fill_header(map, slots, start);
	*what = "rename";
	if ((err = publish(tmp, seg.path)) < 0) {
		errno = -err;
		goto fail;
	}
	seg.hdr = map;
	seg.size = size;
	seg.header_size = sizeof(struct loopstat_shm_header);
	seg.slot_size = sizeof(struct loopstat_shm_slot);
	seg.slot_count = slots;
	seg.pid = getpid();
	return 0;

fail:
	err = -errno;
	if (map != MAP_FAILED)
		munmap(map, size);
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return err;
}

static int create_segment(const struct fl_stats_options *opts)
{
	const char *dir = opts && opts->dir ? opts->dir : default_dir();
	unsigned slots = opts && opts->slot_count ? opts->slot_count : LOOPSTAT_SHM_DEFAULT_SLOTS;
	const char *what = "open";
	mode_t mode = 0600;
	uint64_t start = 0;
	int err;

	if ((err = configured_mode(opts, &mode)) < 0)
		return err;
	if (slots > 65536)
		return -EINVAL;
	if ((err = self_start_time(&start)) < 0)
		return err;
	/* a clash of 64 random bits is someone else's file: try another name */
	for (int attempt = 0; attempt < 4; attempt++)
		if ((err = try_create(dir, mode, slots, start, &what)) != -EEXIST)
			break;
	if (err < 0) {
		say_unpublished("%s(%s/" LOOPSTAT_SHM_PREFIX "%d.*): %s", what, dir, (int)getpid(), strerror(-err));
		return err;
	}
	if (!seg.atexit_done) {
		atexit(unlink_at_exit);
		seg.atexit_done = 1;
	}
	return 0;
}

/* After fork() the child inherits the parent's mapping; it must get its own
 * segment instead of writing into the parent's. */
static int segment_usable(void)
{
	if (seg.hdr && seg.pid != getpid()) {
		munmap(seg.hdr, seg.size);
		seg.hdr = NULL;
	}
	return seg.hdr != NULL;
}

int fl_stats_open(const struct fl_stats_options *opts)
{
	pthread_mutex_lock(&seg.lock);
	int err = segment_usable() ? 0 : create_segment(opts);
	pthread_mutex_unlock(&seg.lock);
	return err;
}

/*
 * Loops on other threads may still hold slot pointers (at exit, or when
 * closed early), so the memory must stay writable: the shared mapping is
 * replaced in place by private anonymous memory, which the monitor no
 * longer sees, rather than unmapped.
 */
void fl_stats_close(void)
{
	pthread_mutex_lock(&seg.lock);
	if (seg.hdr && seg.pid == getpid()) {
		unlink(seg.path);
		mmap(seg.hdr, seg.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	seg.hdr = NULL;
	pthread_mutex_unlock(&seg.lock);
}

const char *fl_stats_path(void)
{
	return seg.hdr && seg.pid == getpid() ? seg.path : NULL;
}

static struct loopstat_shm_slot *slot_at(unsigned i)
{
	return (struct loopstat_shm_slot *)((char *)seg.hdr + seg.header_size + (size_t)i * seg.slot_size);
}

static struct loopstat_shm_slot *pick_slot(void)
{
	struct loopstat_shm_slot *oldest_exited = NULL;
	for (unsigned i = 0; i < seg.slot_count; i++) {
		struct loopstat_shm_slot *s = slot_at(i);
		if (s->state == LOOPSTAT_SLOT_FREE)
			return s;
		if (s->state == LOOPSTAT_SLOT_EXITED &&
		    (!oldest_exited || s->generation < oldest_exited->generation))
			oldest_exited = s;
	}
	return oldest_exited;
}

struct loopstat_shm_slot *fl_stats_slot_acquire(const char *tag, enum loopstat_backend backend, int wait_fd)
{
	int err = fl_stats_open(NULL);
	if (err) {
		errno = -err;
		return NULL;
	}
	pthread_mutex_lock(&seg.lock);
	struct loopstat_shm_slot *s = pick_slot();
	if (!s) {
		pthread_mutex_unlock(&seg.lock);
		errno = ENOSPC;
		return NULL;
	}
	/* A seqlock on the slot table: the generation is odd while a slot is
	 * being reset, and readers retry a copy taken while it was odd or that
	 * it changed under. The slot is also FREE until complete. */
	uint64_t gen = __atomic_add_fetch(&seg.hdr->generation, 1, __ATOMIC_RELEASE);
	/* the odd generation before any reset store (a release RMW orders only
	 * what came before it; this is the seqlock writer's smp_wmb) */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->state, LOOPSTAT_SLOT_FREE, __ATOMIC_RELEASE);
	memset((char *)s + sizeof(s->state), 0, sizeof(*s) - sizeof(s->state));
	s->tid = (int32_t)syscall(SYS_gettid);
	s->backend = backend;
	s->wait_fd = wait_fd;
	s->generation = gen;
	if (tag)
		snprintf(s->tag, sizeof(s->tag), "%s", tag);
	__atomic_store_n(&s->state, LOOPSTAT_SLOT_ACTIVE, __ATOMIC_RELEASE);
	__atomic_add_fetch(&seg.hdr->generation, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&seg.lock);
	return s;
}

void fl_stats_slot_release(struct loopstat_shm_slot *slot)
{
	if (!slot)
		return;
	pthread_mutex_lock(&seg.lock);
	if (seg.hdr && seg.pid == getpid()) {
		/* one atomic store: the generation moves by two, staying even */
		__atomic_store_n(&slot->state, LOOPSTAT_SLOT_EXITED, __ATOMIC_RELEASE);
		__atomic_add_fetch(&seg.hdr->generation, 2, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&seg.lock);
}

unsigned fl_stats_tag_index(struct loopstat_shm_slot *slot, const char *tag)
{
	if (!slot || !tag || !*tag)
		return 0;
	for (unsigned i = 0; i < LOOPSTAT_TAG_MAX; i++) {
		struct loopstat_shm_tag *t = &slot->tags[i];
		if (t->len == 0) {
			/* name first, len last: a reader that sees len sees the name */
			size_t n = strnlen(tag, LOOPSTAT_TAG_LEN - 1);
			memcpy(t->name, tag, n);
			t->name[n] = '\0';
			__atomic_store_n(&t->len, (uint32_t)n, __ATOMIC_RELEASE);
			return i + 1;
		}
		if (strncmp(t->name, tag, LOOPSTAT_TAG_LEN - 1) == 0)
			return i + 1;
	}
	return 0;
}
