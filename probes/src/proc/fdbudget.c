/*
 * fdbudget.c — the probes' /proc files under one budget (probe_fdbudget.h):
 * a second-chance clock over the files open, so the one closed is one not
 * sampled since the hand last passed it.
 */
#include "probe_fdbudget.h"
#include "fdbudget_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#define FDB_MIN   64
#define FDB_CHUNK 4096u           /* entries per chunk: chunks never move */
#define FDB_CHUNKS 256u           /* 1,048,576 entries at most */

struct fdb_ent {
	int      fd;                  /* -1: free, or closed by the clock */
	unsigned used;                /* sampled since the hand last passed */
	uint32_t next_free;           /* free list, id + 1 */
};

static pthread_mutex_t fdb_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fdb_ent *fdb_chunks[FDB_CHUNKS];
static uint32_t fdb_n;            /* entries made */
static uint32_t fdb_free;         /* first free id + 1 */
static uint32_t fdb_hand;
static unsigned fdb_budget, fdb_open;
static unsigned long fdb_recycled;

static struct fdb_ent *ent(uint32_t id)
{
	return &fdb_chunks[(id - 1) / FDB_CHUNK][(id - 1) % FDB_CHUNK];
}

static unsigned default_budget(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1024;
	return rl.rlim_cur / 4 > FDB_MIN ? (unsigned)(rl.rlim_cur / 4) : FDB_MIN;
}

unsigned probe_fd_budget(void)
{
	pthread_mutex_lock(&fdb_lock);
	if (!fdb_budget)
		fdb_budget = default_budget();
	unsigned b = fdb_budget;
	pthread_mutex_unlock(&fdb_lock);
	return b;
}

void probe_fd_budget_set(unsigned files)
{
	pthread_mutex_lock(&fdb_lock);
	fdb_budget = files < FDB_MIN ? FDB_MIN : files;
	pthread_mutex_unlock(&fdb_lock);
}

unsigned probe_fd_budget_open(void)
{
	pthread_mutex_lock(&fdb_lock);
	unsigned n = fdb_open;
	pthread_mutex_unlock(&fdb_lock);
	return n;
}

unsigned long probe_fd_budget_recycled(void)
{
	pthread_mutex_lock(&fdb_lock);
	unsigned long n = fdb_recycled;
	pthread_mutex_unlock(&fdb_lock);
	return n;
}

/* Closes the open file the hand finds not sampled since its last pass. */
static void evict_one(void)
{
	for (uint64_t steps = 0; steps < 2ull * fdb_n + 2; steps++) {
		fdb_hand = fdb_hand % fdb_n + 1;
		struct fdb_ent *e = ent(fdb_hand);
		if (e->fd < 0)
			continue;
		if (e->used) {
			e->used = 0;
			continue;
		}
		close(e->fd);
		e->fd = -1;   /* the entry stays its probe's: it reopens */
		fdb_open--;
		fdb_recycled++;
		return;
	}
}

void probe__fd_make_room(void)
{
	pthread_mutex_lock(&fdb_lock);
	if (!fdb_budget)
		fdb_budget = default_budget();
	while (fdb_open >= fdb_budget && fdb_open)
		evict_one();
	pthread_mutex_unlock(&fdb_lock);
}

uint32_t probe__fd_charge(int fd, uint32_t id)
{
	pthread_mutex_lock(&fdb_lock);
	if (!fdb_budget)
		fdb_budget = default_budget();
	if (!id) {
		if (fdb_free) {
			id = fdb_free;
			fdb_free = ent(id)->next_free;
		} else if (fdb_n < FDB_CHUNK * FDB_CHUNKS) {
			uint32_t c = fdb_n / FDB_CHUNK;
			if (!fdb_chunks[c] && !(fdb_chunks[c] = calloc(FDB_CHUNK, sizeof(struct fdb_ent)))) {
				pthread_mutex_unlock(&fdb_lock);
				return 0;   /* uncharged: the file stays open, outside the budget */
			}
			id = ++fdb_n;
			/* calloc'd: fd 0 until filled below, and the clock must
			 * not take it for an open file (it would close fd 0) */
			ent(id)->fd = -1;
		} else {
			pthread_mutex_unlock(&fdb_lock);
			return 0;
		}
	}
	while (fdb_open >= fdb_budget && fdb_open)
		evict_one();
	struct fdb_ent *e = ent(id);
	e->fd = fd;
	e->used = 1;
	fdb_open++;
	pthread_mutex_unlock(&fdb_lock);
	return id;
}

int probe__fd_live(uint32_t id, int fd)
{
	if (!id)
		return 1;
	pthread_mutex_lock(&fdb_lock);
	struct fdb_ent *e = ent(id);
	int live = e->fd == fd;
	e->used = 1;
	pthread_mutex_unlock(&fdb_lock);
	return live;
}

int probe__fd_release(uint32_t id, int fd)
{
	if (!id)
		return fd >= 0 ? close(fd) : 0;
	pthread_mutex_lock(&fdb_lock);
	struct fdb_ent *e = ent(id);
	if (e->fd >= 0 && e->fd == fd) {
		close(fd);
		fdb_open--;
	}
	e->fd = -1;
	e->used = 0;
	e->next_free = fdb_free;
	fdb_free = id;
	pthread_mutex_unlock(&fdb_lock);
	return 0;
}
