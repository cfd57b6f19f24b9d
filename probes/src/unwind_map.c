/*
 * unwind_map.c — the objects of other users, mapped for libdwfl without a
 * copy, under one budget for the whole run.
 *
 * Copying a target's object (as the unwinder once did, to be safe from a
 * file truncated under libelf) let a target that maps a dozen sparse
 * 256-MB files cost gigabytes. A private mapping costs only the pages
 * libdwfl touches; uw_elf_need() bounds those per object and this file
 * bounds their sum over all objects held, so what a target makes loopstat
 * hold is stated: UW_MAP_BUDGET. The hazard of a mapping — the owner
 * truncates the file and a read past the new end raises SIGBUS — is
 * answered here: a SIGBUS inside one of these mappings maps a page of
 * zeros over the faulting page and the read is retried, so libelf sees
 * zeros (a broken object) rather than killing loopstat. Any other SIGBUS
 * goes to the handler that was there before, or kills as it would have.
 */
#include "unwind_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define UW_MAP_SLOTS 512 /* objects mapped at once, over all unwinders */

struct uw_map_slot {
	_Atomic uintptr_t addr;  /* 0: free; read by the signal handler */
	_Atomic size_t    len;
	const void *owner;       /* the unwinder's pid entry it belongs to */
	uint64_t    lo;          /* the module's load address */
	uint64_t    need;        /* bytes charged to the budget */
};

static struct uw_map_slot uw_slots[UW_MAP_SLOTS];
static pthread_mutex_t uw_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t uw_held;     /* under uw_lock */
static struct sigaction uw_old_bus;
static pthread_once_t uw_once = PTHREAD_ONCE_INIT;

static void uw_map_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	for (int i = 0; i < UW_MAP_SLOTS; i++) {
		uintptr_t base = atomic_load_explicit(&uw_slots[i].addr, memory_order_acquire);
		size_t len = atomic_load_explicit(&uw_slots[i].len, memory_order_relaxed);
		if (!base || a < base || a - base >= len)
			continue;
		uintptr_t page = a & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
		if (mmap((void *)page, (size_t)sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE,
			 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED)
			return; /* the read is retried and sees zeros */
		break;
	}
	if ((uw_old_bus.sa_flags & SA_SIGINFO) && uw_old_bus.sa_sigaction) {
		uw_old_bus.sa_sigaction(sig, si, uc);
	} else if (uw_old_bus.sa_handler != SIG_DFL && uw_old_bus.sa_handler != SIG_IGN) {
		uw_old_bus.sa_handler(sig);
	} else {
		/* not ours: die of it as before (the fault repeats on return) */
		signal(SIGBUS, SIG_DFL);
	}
}

static void uw_map_install(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = uw_map_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &uw_old_bus);
}

int uw_map_object(int fd, uint64_t size, uint64_t need, const void *owner, uint64_t lo, Elf **elfp)
{
	*elfp = NULL;
	if (size == 0)
		return -ENOEXEC;
	pthread_once(&uw_once, uw_map_install);
	pthread_mutex_lock(&uw_lock);
	struct uw_map_slot *s = NULL;
	for (int i = 0; i < UW_MAP_SLOTS && !s; i++)
		if (!atomic_load_explicit(&uw_slots[i].addr, memory_order_relaxed))
			s = &uw_slots[i];
	if (!s || uw_held + need > UW_MAP_BUDGET) {
		pthread_mutex_unlock(&uw_lock);
		return -ENOSPC;
	}
	/* writable so that libelf may convert in place; private, so nothing
	 * reaches the file */
	void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_NORESERVE, fd, 0);
	if (p == MAP_FAILED) {
		int err = -errno;
		pthread_mutex_unlock(&uw_lock);
		return err;
	}
	s->owner = owner;
	s->lo = lo;
	s->need = need;
	atomic_store_explicit(&s->len, (size_t)size, memory_order_relaxed);
	atomic_store_explicit(&s->addr, (uintptr_t)p, memory_order_release);
	uw_held += need;
	pthread_mutex_unlock(&uw_lock);
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
		uintptr_t base = atomic_load_explicit(&s->addr, memory_order_relaxed);
		if (!base || s->owner != owner || (lo && s->lo != lo))
			continue;
		size_t len = atomic_load_explicit(&s->len, memory_order_relaxed);
		atomic_store_explicit(&s->addr, 0, memory_order_release);
		munmap((void *)base, len);
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
