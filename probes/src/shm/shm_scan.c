/*
 * shm_scan.c — finding segments in the segment directory, cheaply even
 * among many junk files: names are filtered without a system call, a file
 * already found not to be a live segment is skipped by (dev, inode, name)
 * from the directory entry alone until it is no longer listed, and an
 * unchanged directory is not listed again.
 */
#include "probe_shm.h"
#include "probe_clock.h"
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

/* What an entry says of its file. */
enum cache_kind {
	CACHE_NONE,        /* not known (no entry, or a legacy refusal's time ran out) */
	CACHE_JUNK,        /* refused: skipped */
	CACHE_LIVE,        /* validated: offered without a look at its process's maps */
};

struct cache_entry {
	uint64_t dev_ino;  /* mix of dev and ino (see key()) */
	uint64_t name;     /* keyed hash of the file name */
	uint64_t until_ns; /* CLOCK_MONOTONIC; legacy names are re-checked after it, 0 = never */
	uint32_t epoch;    /* last scan that listed it */
	uint16_t used;
	uint16_t kind;     /* enum cache_kind */
};

/* A legacy name ("loopstat.<pid>") is re-used by its pid's next writer,
 * possibly with a recycled inode number (ext4): believe a refusal only
 * this long. */
#define LEGACY_TTL_NS (10ull * 1000000000)

static struct {
	pthread_mutex_t lock;
	struct cache_entry *tab; /* owned, cap entries */
	size_t cap, n;
	uint32_t epoch;
	uint64_t seed;
	size_t budget;           /* callbacks per scan, 0 = unlimited */
	size_t cursor;           /* first unchecked candidate of the next budgeted scan */
	struct probe_shm_scan_counts last; /* of the last mapped-only scan */
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

static void cache_mark(dev_t dev, ino_t ino, const char *name, enum cache_kind kind)
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
	*e = (struct cache_entry){ .dev_ino = k, .name = h, .epoch = cache.epoch, .used = 1, .kind = kind,
				   .until_ns = suffixed || kind != CACHE_JUNK ? 0 : probe_mono_ns() + LEGACY_TTL_NS };
unlock:
	pthread_mutex_unlock(&cache.lock);
}

void shm_cache_reject(dev_t dev, ino_t ino, const char *name)
{
	cache_mark(dev, ino, name, CACHE_JUNK);
}

/* Marks the entry listed in this scan; what it says of the file. */
static enum cache_kind cache_hit(dev_t dev, ino_t ino, const char *name, uint64_t now)
{
	struct cache_entry *e = cache.n ? slot_for(key(dev, ino), name_hash(name)) : NULL;
	if (!e || !e->used)
		return CACHE_NONE;
	e->epoch = cache.epoch;
	if (e->kind == CACHE_JUNK && e->until_ns && now >= e->until_ns)
		return CACHE_NONE;
	return (enum cache_kind)e->kind;
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

/*
 * The candidates of the last complete listing, for re-scans of a directory
 * whose mtime has not moved since: adding, removing or renaming an entry
 * sets it, so the listing (100,000 junk entries cost ~0.1 s of getdents)
 * is skipped. Only a listing taken when the mtime was already older than
 * SETTLED_NS is reused: the file system's clock is coarse, and a change
 * within the same tick as the listing would not show.
 */
#define LIST_MAX   65536u
#define SETTLED_NS 100000000ll

struct listed {
	ino_t ino;
	char  name[64]; /* a segment name is at most 9 + 10 + 1 + SHM_SUFFIX_MAX bytes */
};

static struct {
	struct listed *v;    /* owned */
	size_t n, cap;
	int usable;          /* v holds the listing of dir at mtime */
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	char dir[PATH_MAX];
} listing;

struct scan {
	DIR *d;              /* NULL: walk the saved listing */
	const char *dir;
	dev_t dev;
	int (*fn)(const char *path, pid_t pid, void *arg);
	void *arg;
	size_t budget, calls;  /* budget 0 = unlimited */
	size_t index;          /* uncached candidates seen in this pass */
	size_t next;           /* position in the saved listing */
	int building;          /* record candidates into a new listing */
	int overflow;          /* more than LIST_MAX candidates */
	int mapped_only;       /* offer fn only files their named process maps */
	void (*tick)(void *arg);  /* called between files, now and then: NULL for none */
	unsigned since_tick;   /* entries since the last tick */
	struct probe_shm_scan_counts counts;
	uint64_t now;          /* CLOCK_MONOTONIC at the start of the scan */
};

static int next_entry(struct scan *s, const char **name, ino_t *ino)
{
	if (!s->d) {
		if (s->next >= listing.n)
			return 0;
		*name = listing.v[s->next].name;
		*ino = listing.v[s->next++].ino;
		return 1;
	}
	struct dirent *de = readdir(s->d);
	if (!de)
		return 0;
	*name = de->d_name;
	*ino = de->d_ino;
	return 1;
}

static void record(struct scan *s, const char *name, ino_t ino)
{
	if (s->overflow || strlen(name) >= sizeof(listing.v[0].name))
		return;
	if (listing.n == listing.cap) {
		size_t cap = listing.cap ? listing.cap * 2 : 64;
		struct listed *v = cap <= LIST_MAX ? realloc(listing.v, cap * sizeof(*v)) : NULL;
		if (!v) {
			s->overflow = 1;
			return;
		}
		listing.v = v;
		listing.cap = cap;
	}
	listing.v[listing.n].ino = ino;
	snprintf(listing.v[listing.n++].name, sizeof(listing.v[0].name), "%s", name);
}

/* Entries between two ticks: a few tens of microseconds of listing. */
#define TICK_ENTRIES 64

/*
 * Whether a mapped-only scan offers the file to fn (shm_owners.c). A file
 * refused here is neither remembered nor kept in the saved listing: the
 * next listing looks again, against its process's maps as they are then
 * (this scan's read of them may have come just before a new writer mapped
 * and published the file; publishing changes the directory, so a listing
 * is taken anew).
 */
static int offered(struct scan *s, ino_t ino, pid_t pid)
{
	switch (shm_owners_offer(pid, ino)) {
	case SHM_OFFER:
		return 1;
	case SHM_OFFER_CAPPED:
		s->counts.unchecked++;
		return 0;
	default:
		s->counts.refused++;
		return 0;
	}
}

/* One pass over the directory (or its saved listing), calling fn for the
 * uncached candidates with index in [from, to). Returns fn's value or 0. */
static int scan_pass(struct scan *s, size_t from, size_t to)
{
	const char *name;
	ino_t ino;
	s->index = 0;
	s->next = 0;
	while (next_entry(s, &name, &ino)) {
		if (s->tick && ++s->since_tick >= TICK_ENTRIES) {
			s->since_tick = 0;
			s->tick(s->arg);
		}
		int suffixed;
		pid_t pid = shm_name_pid(name, &suffixed);
		if (pid <= 0)
			continue;
		pthread_mutex_lock(&cache.lock);
		enum cache_kind kind = cache_hit(s->dev, ino, name, s->now);
		pthread_mutex_unlock(&cache.lock);
		if (kind == CACHE_JUNK)
			continue;
		if (s->mapped_only && kind != CACHE_LIVE && !offered(s, ino, pid))
			continue;
		if (s->building)
			record(s, name, ino);
		size_t i = s->index++;
		if (i < from || i >= to || (s->budget && s->calls >= s->budget))
			continue;
		char path[PATH_MAX];
		if (snprintf(path, sizeof(path), "%s/%s", s->dir, name) >= (int)sizeof(path))
			continue;
		s->calls++;
		s->since_tick = TICK_ENTRIES; /* a validation costs what many entries do */
		int ret = s->fn(path, pid, s->arg);
		if (ret < 0)
			return ret;
		if (ret == PROBE_SHM_SCAN_LIVE && s->mapped_only)
			cache_mark(s->dev, ino, name, CACHE_LIVE);
		else if (ret == 0 && s->mapped_only)
			shm_owners_refused(pid);
		if (ret != PROBE_SHM_SCAN_LIVE && pid_gone(pid))
			shm_cache_reject(s->dev, ino, name);
	}
	return 0;
}

static int same_listing(const char *dir, const struct stat *st)
{
	return listing.usable && listing.dev == st->st_dev && listing.ino == st->st_ino &&
	       listing.mtime.tv_sec == st->st_mtim.tv_sec && listing.mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       strcmp(listing.dir, dir) == 0;
}

static int settled(const struct stat *st)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	long long age = (long long)(now.tv_sec - st->st_mtim.tv_sec) * 1000000000ll + (now.tv_nsec - st->st_mtim.tv_nsec);
	return age > SETTLED_NS;
}

static int scan_dir(const char *dir, int (*fn)(const char *path, pid_t pid, void *arg), void (*tick)(void *arg),
		    void *arg, int mapped_only)
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
	/* scans are serialised: the saved listing is shared */
	static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&scan_lock);
	int reuse = same_listing(dir, &st);
	int fresh = settled(&st);
	if (reuse) {
		closedir(d);
		d = NULL;
	} else {
		listing.usable = 0;
		listing.n = 0;
	}
	pthread_mutex_lock(&cache.lock);
	/* walking the saved listing visits no cached entry: keep them all */
	if (!reuse)
		cache.epoch++;
	struct scan s = { .d = d, .dir = dir, .dev = st.st_dev, .fn = fn, .arg = arg, .budget = cache.budget,
			  .now = probe_mono_ns(), .building = !reuse, .mapped_only = mapped_only, .tick = tick };
	size_t from = cache.budget ? cache.cursor : 0;
	pthread_mutex_unlock(&cache.lock);
	if (mapped_only)
		shm_owners_begin(st.st_dev);

	/* with a budget, start where the last scan stopped and wrap around, so
	 * that every candidate gets its turn however many there are */
	int ret = scan_pass(&s, from, SIZE_MAX);
	size_t total = s.index;
	s.building = 0;
	if (!ret && from && (!s.budget || s.calls < s.budget)) {
		if (d)
			rewinddir(d);
		ret = scan_pass(&s, 0, from);
	}
	if (d)
		closedir(d);
	if (!reuse && !ret && !s.overflow && fresh) {
		listing.usable = 1;
		listing.dev = st.st_dev;
		listing.ino = st.st_ino;
		listing.mtime = st.st_mtim;
		snprintf(listing.dir, sizeof(listing.dir), "%s", dir);
	}

	pthread_mutex_lock(&cache.lock);
	if (s.budget)
		cache.cursor = total ? (from + s.calls) % total : 0;
	/* a complete first pass listed every live entry: drop the others */
	if (!reuse && !ret && cache.n)
		grow(cache.cap);
	if (mapped_only)
		cache.last = s.counts;
	pthread_mutex_unlock(&cache.lock);
	pthread_mutex_unlock(&scan_lock);
	return ret;
}

int probe_shm_scan(const char *dir, int (*fn)(const char *path, pid_t pid, void *arg), void *arg)
{
	return scan_dir(dir, fn, NULL, arg, 0);
}

int probe_shm_scan_mapped(const char *dir, int (*fn)(const char *path, pid_t pid, void *arg), void (*tick)(void *arg),
			  void *arg)
{
	return scan_dir(dir, fn, tick, arg, 1);
}

void probe_shm_scan_counts(struct probe_shm_scan_counts *c)
{
	pthread_mutex_lock(&cache.lock);
	*c = cache.last;
	pthread_mutex_unlock(&cache.lock);
}
