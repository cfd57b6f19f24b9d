/*
 * unwind_map.c — the objects of other users, copied for libdwfl only where
 * it reads, under one budget for the whole run.
 *
 * Copying a target's whole object (as the unwinder once did, to be safe
 * from a file truncated under libelf) let a target that maps a dozen
 * sparse 256-MB files cost gigabytes; mapping the file instead left the
 * pages libdwfl had not yet read to the owner, who could cut them away
 * (SIGBUS, or zeros) and so unname frames already sampled. So an object is
 * an anonymous mapping of the file's size (untouched pages cost nothing)
 * into which the spans libdwfl reads (uw_elf_need: headers, symbols,
 * strings, notes, CFI) are read once, at open: the copy is whole before
 * the owner can change the file, and costs what those spans hold.
 * uw_elf_need() bounds that per object and this file bounds the sum over
 * all objects held, so what a target makes loopstat hold is stated:
 * UW_MAP_BUDGET. A file cut before or while it is read leaves zeros
 * (a broken object), never a fault.
 */
#include "unwind_int.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define UW_MAP_SLOTS 512 /* objects held at once, over all unwinders */

struct uw_map_slot {
	void       *addr;        /* NULL: free */
	size_t      len;
	const void *owner;       /* the unwinder's pid entry it belongs to */
	uint64_t    lo;          /* the module's load address */
	uint64_t    need;        /* bytes charged to the budget */
};

static struct uw_map_slot uw_slots[UW_MAP_SLOTS];
static pthread_mutex_t uw_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t uw_held;     /* under uw_lock */

/* Reads each span of where (clamped to size) from fd into p; a short read
 * (the file cut meanwhile) leaves the rest zeros. */
static void uw_map_fill(unsigned char *p, int fd, uint64_t size, const struct uw_spans *where)
{
	for (int i = 0; where && i < where->n; i++) {
		uint64_t off = where->v[i].off, end = off + where->v[i].len;
		if (off >= size)
			continue;
		if (end > size || end < off)
			end = size;
		while (off < end) {
			ssize_t n = pread(fd, p + off, (size_t)(end - off), (off_t)off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			off += (uint64_t)n;
		}
	}
}

int uw_map_object(int fd, uint64_t size, uint64_t need, const struct uw_spans *where, const void *owner, uint64_t lo,
		  Elf **elfp)
{
	*elfp = NULL;
	if (size == 0)
		return -ENOEXEC;
	pthread_mutex_lock(&uw_lock);
	struct uw_map_slot *s = NULL;
	for (int i = 0; i < UW_MAP_SLOTS && !s; i++)
		if (!uw_slots[i].addr)
			s = &uw_slots[i];
	if (!s || uw_held + need > UW_MAP_BUDGET) {
		pthread_mutex_unlock(&uw_lock);
		return -ENOSPC;
	}
	/* writable so that libelf may convert in place */
	void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		int err = -errno;
		pthread_mutex_unlock(&uw_lock);
		return err;
	}
	s->owner = owner;
	s->lo = lo;
	s->need = need;
	s->len = (size_t)size;
	s->addr = p;
	uw_held += need;
	pthread_mutex_unlock(&uw_lock);
	uw_map_fill(p, fd, size, where);
	elf_version(EV_CURRENT); /* once libdwfl has, a no-op */
	*elfp = elf_memory(p, (size_t)size);
	if (!*elfp) {
		uw_map_release(owner, lo);
		return -ENOEXEC;
	}
	return 0;
}

void uw_map_release(const void *owner, uint64_t lo)
{
	pthread_mutex_lock(&uw_lock);
	for (int i = 0; i < UW_MAP_SLOTS; i++) {
		struct uw_map_slot *s = &uw_slots[i];
		if (!s->addr || s->owner != owner || (lo && s->lo != lo))
			continue;
		munmap(s->addr, s->len);
		s->addr = NULL;
		uw_held -= s->need;
		s->owner = NULL;
	}
	pthread_mutex_unlock(&uw_lock);
}

uint64_t uw_map_held(void)
{
	pthread_mutex_lock(&uw_lock);
	uint64_t h = uw_held;
	pthread_mutex_unlock(&uw_lock);
	return h;
}
