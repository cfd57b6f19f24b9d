/*
 * stats.c — the shared-memory stats writer (see loopstat_shm.h for the ABI).
 *
 * Process-wide state: one segment, created on first use. Slot acquisition
 * and the tag table are slow paths; the counters themselves are updated by
 * the owning thread through fl_stat_add()/fl_stat_set() with no locks.
 */
#include "fiberloop_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct {
	pthread_mutex_t lock;
	struct loopstat_shm_header *hdr; /* owned mapping, NULL when closed */
	size_t size;                     /* bytes mapped */
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

static mode_t default_mode(void)
{
	const char *env = getenv(LOOPSTAT_SHM_MODE_ENV);
	if (env && *env) {
		char *end;
		long m = strtol(env, &end, 8);
		if (*end == '\0' && m > 0 && m <= 0777)
			return (mode_t)m;
	}
	return 0600;
}

static const char *default_dir(void)
{
	const char *env = getenv(LOOPSTAT_SHM_DIR_ENV);
	return env && *env ? env : LOOPSTAT_SHM_DEFAULT_DIR;
}

/*
 * The file already exists, and this process holds no segment (the caller
 * checked): it was left by a dead process with the same pid, by this very
 * process before an execve(), or planted. Either way it is stale.
 */
static int remove_stale(const char *path)
{
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static void unlink_at_exit(void)
{
	fl_stats_close();
}

static int create_segment(const struct fl_stats_options *opts)
{
	const char *dir = opts && opts->dir ? opts->dir : default_dir();
	mode_t mode = opts && opts->mode ? opts->mode : default_mode();
	unsigned slots = opts && opts->slot_count ? opts->slot_count : LOOPSTAT_SHM_DEFAULT_SLOTS;
	uint64_t start;
	int err, fd = -1;

	if (slots > 65536)
		return -EINVAL;
	err = self_start_time(&start);
	if (err)
		return err;
	if (snprintf(seg.path, sizeof(seg.path), "%s/" LOOPSTAT_SHM_PREFIX "%d", dir, (int)getpid()) >=
	    (int)sizeof(seg.path))
		return -ENAMETOOLONG;

	for (int attempt = 0; attempt < 2 && fd < 0; attempt++) {
		fd = open(seg.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
		if (fd < 0 && (errno != EEXIST || attempt == 1))
			return -errno;
		if (fd < 0 && (err = remove_stale(seg.path)) < 0)
			return err;
	}

	size_t size = sizeof(struct loopstat_shm_header) + (size_t)slots * sizeof(struct loopstat_shm_slot);
	/* the umask must not narrow an explicitly configured mode */
	if (fchmod(fd, mode) < 0 || ftruncate(fd, (off_t)size) < 0)
		goto fail_unlink;
	void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail_unlink;
	close(fd);

	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct loopstat_shm_header *h = map;
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

	seg.hdr = h;
	seg.size = size;
	seg.pid = getpid();
	if (!seg.atexit_done) {
		atexit(unlink_at_exit);
		seg.atexit_done = 1;
	}
	return 0;

fail_unlink:
	err = -errno;
	close(fd);
	unlink(seg.path);
	return err;
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
	return (struct loopstat_shm_slot *)((char *)seg.hdr + seg.hdr->header_size + (size_t)i * seg.hdr->slot_size);
}

static struct loopstat_shm_slot *pick_slot(void)
{
	struct loopstat_shm_slot *oldest_exited = NULL;
	for (unsigned i = 0; i < seg.hdr->slot_count; i++) {
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
