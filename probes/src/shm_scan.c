/*
 * shm_scan.c — finding segments in the segment directory, cheaply even
 * among many junk files: names are filtered without a system call, and a
 * file already found not to be a live segment is skipped by (dev, inode,
 * name) from the directory entry alone, until it is no longer listed.
 */
#include "probe_shm.h"
#include "probe_proc.h"
#include "shm_int.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

pid_t shm_name_pid(const char *name, int *suffixed)
{
	const char *p = strrchr(name, '/');
	p = p ? p + 1 : name;
	if (strncmp(p, LOOPSTAT_SHM_PREFIX, sizeof(LOOPSTAT_SHM_PREFIX) - 1) != 0)
		return -1;
	p += sizeof(LOOPSTAT_SHM_PREFIX) - 1;
	if (*p < '1' || *p > '9')
		return -1;
	long v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > INT_MAX)
			return -1;
	}
	*suffixed = 0;
	if (*p == '\0')
		return (pid_t)v;
	if (*p++ != '.')
		return -1;
	size_t n = 0;
	for (; p[n]; n++)
		if (!((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z')))
			return -1;
	if (n == 0 || n > SHM_SUFFIX_MAX)
		return -1;
	*suffixed = 1;
	return (pid_t)v;
}

/*
 * The cache: an open-addressed set of (dev, ino, keyed hash of the name).
 * The name is part of the key so that an inode number re-used by a real
 * segment (whose random name no one could predict) never hits an old entry;
 * the hash is keyed by a per-process secret so that no one can aim a
 * collision at it. Bounded: at most CACHE_MAX entries (24 bytes each, in a
 * table twice that size); beyond that files are simply re-checked.
 */
#define CACHE_MAX (128u * 1024)

struct cache_entry {
	uint64_t dev_ino;  /* mix of dev and ino (see key()) */
	uint64_t name;     /* keyed hash of the file name */
	uint64_t until_ns; /* CLOCK_MONOTONIC; legacy names are re-checked after it, 0 = never */
	uint32_t epoch;    /* last scan that listed it */
	uint32_t used;
};

/* A legacy name ("loopstat.<pid>") is re-used by its pid's next writer,
 * possibly with a recycled inode number (ext4): believe a refusal only
 * this long. */
#define LEGACY_TTL_NS (10ull * 1000000000)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct {
	pthread_mutex_t lock;
	struct cache_entry *tab; /* owned, cap entries */
	size_t cap, n;
	uint32_t epoch;
	uint64_t seed;
	size_t budget;           /* callbacks per scan, 0 = unlimited */
	size_t cursor;           /* first unchecked candidate of the next budgeted scan */
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t name_hash(const char *name)
{
	const char *p = strrchr(name, '/');
	p = p ? p + 1 : name;
	if (!cache.seed && getrandom(&cache.seed, sizeof(cache.seed), GRND_NONBLOCK) != sizeof(cache.seed))
		cache.seed = mix((uint64_t)(uintptr_t)&cache ^ (uint64_t)getpid());
	uint64_t h = cache.seed;
	for (; *p; p++)
		h = mix(h ^ (unsigned char)*p);
	return h;
}

static uint64_t key(dev_t dev, ino_t ino)
{
	return mix((uint64_t)dev) ^ (uint64_t)ino ^ 1;
}

static struct cache_entry *slot_for(uint64_t k, uint64_t name)
{
	if (!cache.cap)
		return NULL;
	size_t mask = cache.cap - 1;
	for (size_t i = mix(k ^ name) & mask;; i = (i + 1) & mask) {
		struct cache_entry *e = &cache.tab[i];
		if (!e->used || (e->dev_ino == k && e->name == name))
			return e;
	}
}

static int grow(size_t cap)
{
	struct cache_entry *old = cache.tab;
	size_t oldcap = cache.cap;
	struct cache_entry *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	cache.tab = tab;
	cache.cap = cap;
	cache.n = 0;
	for (size_t i = 0; i < oldcap; i++) {
		if (!old[i].used || old[i].epoch + 1 < cache.epoch)
			continue; /* not listed by the last complete scan: gone */
		*slot_for(old[i].dev_ino, old[i].name) = old[i];
		cache.n++;
	}
	free(old);
	return 0;
}

void shm_cache_reject(dev_t dev, ino_t ino, const char *name)
{
	pthread_mutex_lock(&cache.lock);
	if (cache.n >= CACHE_MAX)
		goto unlock;
	if ((cache.n + 1) * 2 > cache.cap && grow(cache.cap ? cache.cap * 2 : 1024) < 0)
		goto unlock;
	uint64_t k = key(dev, ino), h = name_hash(name);
	int suffixed = 0;
	shm_name_pid(name, &suffixed);
	struct cache_entry *e = slot_for(k, h);
	if (!e->used)
		cache.n++;
	*e = (struct cache_entry){ .dev_ino = k, .name = h, .epoch = cache.epoch, .used = 1,
				   .until_ns = suffixed ? 0 : now_ns() + LEGACY_TTL_NS };
unlock:
	pthread_mutex_unlock(&cache.lock);
}

/* Marks the entry listed in this scan; 1 if the file is known junk. */
static int cache_hit(dev_t dev, ino_t ino, const char *name, uint64_t now)
{
	struct cache_entry *e = cache.n ? slot_for(key(dev, ino), name_hash(name)) : NULL;
	if (!e || !e->used)
		return 0;
	e->epoch = cache.epoch;
	return !e->until_ns || now < e->until_ns;
}

void probe_shm_scan_budget(size_t max_calls)
{
	pthread_mutex_lock(&cache.lock);
	cache.budget = max_calls;
	cache.cursor = 0;
	pthread_mutex_unlock(&cache.lock);
}

size_t probe_shm_cache_size(void)
{
	pthread_mutex_lock(&cache.lock);
	size_t n = cache.n;
	pthread_mutex_unlock(&cache.lock);
	return n;
}

/* A suffixed name whose pid is gone can never be live again (a new process
 * with that pid publishes under a new random name); a legacy one not
 * before that pid's next writer replaces it. */
static int pid_gone(pid_t pid)
{
	char path[PATH_MAX];
	return probe_proc_path(path, sizeof(path), "%d", (int)pid) >= 0 && access(path, F_OK) < 0 &&
	       errno == ENOENT;
}

struct scan {
	DIR *d;
	const char *dir;
	dev_t dev;
	int (*fn)(const char *path, pid_t pid, void *arg);
	void *arg;
	size_t budget, calls;  /* budget 0 = unlimited */
	size_t index;          /* uncached candidates seen in this pass */
	uint64_t now;          /* CLOCK_MONOTONIC at the start of the scan */
};

/* One pass over the directory, calling fn for the uncached candidates with
 * index in [from, to). Returns fn's non-zero value or 0. */
static int scan_pass(struct scan *s, size_t from, size_t to)
{
	struct dirent *de;
	s->index = 0;
	while ((de = readdir(s->d))) {
		int suffixed;
		pid_t pid = shm_name_pid(de->d_name, &suffixed);
		if (pid <= 0)
			continue;
		pthread_mutex_lock(&cache.lock);
		int junk = cache_hit(s->dev, de->d_ino, de->d_name, s->now);
		pthread_mutex_unlock(&cache.lock);
		if (junk)
			continue;
		size_t i = s->index++;
		if (i < from || i >= to || (s->budget && s->calls >= s->budget))
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", s->dir, de->d_name) >= (int)sizeof(path))
			continue;
		s->calls++;
		int ret = s->fn(path, pid, s->arg);
		if (ret)
			return ret;
		if (pid_gone(pid))
			shm_cache_reject(s->dev, de->d_ino, de->d_name);
	}
	return 0;
}

int probe_shm_scan(const char *dir, int (*fn)(const char *path, pid_t pid, void *arg), void *arg)
{
	struct stat st;
	if (!dir)
		dir = probe_shm_dir();
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	if (fstat(dirfd(d), &st) < 0) {
		int err = -errno;
		closedir(d);
		return err;
	}
	pthread_mutex_lock(&cache.lock);
	cache.epoch++;
	struct scan s = { .d = d, .dir = dir, .dev = st.st_dev, .fn = fn, .arg = arg, .budget = cache.budget,
			  .now = now_ns() };
	size_t from = cache.budget ? cache.cursor : 0;
	pthread_mutex_unlock(&cache.lock);

	/* with a budget, start where the last scan stopped and wrap around, so
	 * that every candidate gets its turn however many there are */
	int ret = scan_pass(&s, from, SIZE_MAX);
	size_t total = s.index;
	if (!ret && from && (!s.budget || s.calls < s.budget)) {
		rewinddir(d);
		ret = scan_pass(&s, 0, from);
	}
	closedir(d);

	pthread_mutex_lock(&cache.lock);
	if (s.budget)
		cache.cursor = total ? (from + s.calls) % total : 0;
	/* a complete first pass listed every live entry: drop the others */
	if (!ret && cache.n)
		grow(cache.cap);
	pthread_mutex_unlock(&cache.lock);
	return ret;
}
