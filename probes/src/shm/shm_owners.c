/*
 * shm_owners.c — which segment files their named processes map, from one
 * read of each process's /proc/PID/maps per scan, so that a directory
 * flooded with well-formed files naming a few live processes costs a few
 * maps reads, not a validation each (open, header, three /proc files and
 * a maps read: ~80 us a file, 8 s for 100,000). Only the scan calls these,
 * under its lock.
 *
 * Bounded: OWNERS_MAX processes per run, PAIRS_MAX mapped files per scan
 * and OWNER_INODES per process; a process beyond a bound gets its files
 * validated, at most SHM_OWNER_REFUSALS refused ones per run.
 */
#include "probe_proc.h"
#include "shm_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define OWNERS_MAX   65536u
#define PAIRS_MAX    (1u << 18)
#define OWNER_INODES 4096u

enum owner_state {
	OWNER_READ,       /* maps read: its pairs are complete, unless `many` */
	OWNER_GONE,       /* exited, or never was */
	OWNER_CLOSED,     /* maps refused to us, or too large: no file of it can pass the writer check */
	OWNER_UNKNOWN,    /* maps could not be read for another reason (EMFILE...): validate */
};

struct owner {
	pid_t    pid;          /* 0: a free entry */
	uint32_t epoch;        /* scan whose maps state and pairs this is */
	uint8_t  state;        /* enum owner_state */
	uint8_t  many;         /* more mapped files than could be kept */
	uint16_t refused;      /* validations refused this run */
	uint32_t pairs;        /* mapped files on the directory's device kept this scan */
};

struct pair {
	pid_t    pid;
	uint32_t epoch;        /* scan that put it; older ones are free */
	uint64_t ino;
};

static struct {
	struct owner *o;       /* owned, ocap entries (a power of two) */
	size_t ocap, on;
	struct pair *p;        /* owned, pcap entries (a power of two) */
	size_t pcap, pn;
	uint32_t epoch;
	unsigned maj, min;     /* the scanned directory's device */
} tab;

static size_t hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

static struct owner *owner_slot(struct owner *o, size_t cap, pid_t pid)
{
	for (size_t i = hash((uint64_t)pid) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!o[i].pid || o[i].pid == pid)
			return &o[i];
}

static struct owner *owner_get(pid_t pid)
{
	if (tab.ocap) {
		struct owner *o = owner_slot(tab.o, tab.ocap, pid);
		if (o->pid || (tab.on + 1) * 2 <= tab.ocap)
			return o;
	}
	if (tab.on >= OWNERS_MAX)
		return NULL;
	size_t cap = tab.ocap ? tab.ocap * 2 : 256;
	struct owner *o = calloc(cap, sizeof(*o));
	if (!o)
		return NULL;
	for (size_t i = 0; i < tab.ocap; i++)
		if (tab.o[i].pid)
			*owner_slot(o, cap, tab.o[i].pid) = tab.o[i];
	free(tab.o);
	tab.o = o;
	tab.ocap = cap;
	return owner_slot(o, cap, pid);
}

static struct pair *pair_slot(struct pair *p, size_t cap, pid_t pid, uint64_t ino)
{
	for (size_t i = hash(ino * 31 + (uint64_t)pid) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (p[i].epoch != tab.epoch || (p[i].pid == pid && p[i].ino == ino))
			return &p[i];
}

static int pair_put(pid_t pid, uint64_t ino)
{
	if ((tab.pn + 1) * 2 > tab.pcap) {
		if (tab.pn >= PAIRS_MAX)
			return -ENOSPC;
		size_t cap = tab.pcap ? tab.pcap * 2 : 256;
		struct pair *p = calloc(cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		for (size_t i = 0; i < tab.pcap; i++)
			if (tab.p[i].epoch == tab.epoch)
				*pair_slot(p, cap, tab.p[i].pid, tab.p[i].ino) = tab.p[i];
		free(tab.p);
		tab.p = p;
		tab.pcap = cap;
	}
	struct pair *e = pair_slot(tab.p, tab.pcap, pid, ino);
	if (e->epoch != tab.epoch) {
		*e = (struct pair){ .pid = pid, .epoch = tab.epoch, .ino = ino };
		tab.pn++;
	}
	return 0;
}

static int pair_has(pid_t pid, uint64_t ino)
{
	return tab.pcap && pair_slot(tab.p, tab.pcap, pid, ino)->epoch == tab.epoch;
}

static int keep_mapping(unsigned maj, unsigned min, unsigned long long ino, void *arg)
{
	struct owner *o = arg;
	if (maj != tab.maj || min != tab.min || o->many)
		return 0;
	if (o->pairs >= OWNER_INODES || pair_put(o->pid, ino) < 0)
		o->many = 1;
	else
		o->pairs++;
	return 0;
}

static void read_maps(struct owner *o)
{
	char path[PATH_MAX];
	o->epoch = tab.epoch;
	o->many = 0;
	o->pairs = 0;
	o->state = OWNER_UNKNOWN;
	if (probe_proc_path(path, sizeof(path), "%d/maps", (int)o->pid) < 0)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err = fd < 0 ? -errno : shm_maps_walk(fd, keep_mapping, o);
	if (fd >= 0)
		close(fd);
	if (err == -ENOENT || err == -ESRCH)
		o->state = OWNER_GONE;
	else if (err == -EACCES || err == -EPERM || err == -ENOLINK)
		o->state = OWNER_CLOSED;
	else if (err >= 0)
		o->state = OWNER_READ;
}

void shm_owners_begin(dev_t dev)
{
	tab.epoch++;
	tab.pn = 0;
	tab.maj = major(dev);
	tab.min = minor(dev);
}

enum shm_offer shm_owners_offer(pid_t pid, ino_t ino)
{
	struct owner *o = owner_get(pid);
	if (!o)
		return SHM_OFFER_CAPPED;
	if (!o->pid) {
		o->pid = pid;
		o->epoch = tab.epoch - 1;
		tab.on++;
	}
	if (o->epoch != tab.epoch)
		read_maps(o);
	switch (o->state) {
	case OWNER_GONE:
	case OWNER_CLOSED:
		return SHM_OFFER_DEAD;
	case OWNER_READ:
		if (!o->many && !pair_has(pid, (uint64_t)ino))
			return SHM_OFFER_UNMAPPED;
		break;
	}
	return o->refused >= SHM_OWNER_REFUSALS ? SHM_OFFER_CAPPED : SHM_OFFER;
}

void shm_owners_refused(pid_t pid)
{
	struct owner *o = tab.ocap ? owner_slot(tab.o, tab.ocap, pid) : NULL;
	if (o && o->pid == pid && o->refused < UINT16_MAX)
		o->refused++;
}

void shm_owners_reset(void)
{
	free(tab.o);
	free(tab.p);
	memset(&tab, 0, sizeof(tab));
}
