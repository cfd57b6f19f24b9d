/*
 * fiber.c — fiber lifetime: stacks (mmap + guard page, cached per loop),
 * creation, entry and exit, references, and the sanitizer/valgrind
 * annotations that make switched stacks understandable to those tools.
 */
#include "fl_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef FL__ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define FL__VALGRIND 1
#endif
#endif

/* Beyond this many idle stacks per loop, stacks go back to the kernel. */
#define FL__STACK_CACHE_MAX 64

static int64_t dbg[4];

void fl__debug_add(int which, int64_t n)
{
	__atomic_add_fetch(&dbg[which], n, __ATOMIC_RELAXED);
}

void fl_debug_counters(struct fl_debug_counters *out)
{
	out->fibers = __atomic_load_n(&dbg[FL__DBG_FIBERS], __ATOMIC_RELAXED);
	out->stacks = __atomic_load_n(&dbg[FL__DBG_STACKS], __ATOMIC_RELAXED);
	out->op_ctx = __atomic_load_n(&dbg[FL__DBG_OPCTX], __ATOMIC_RELAXED);
	out->loops = __atomic_load_n(&dbg[FL__DBG_LOOPS], __ATOMIC_RELAXED);
}

size_t fl__page_size(void)
{
	static size_t ps;
	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* The lowest page is PROT_NONE: an overflow faults there instead of
 * silently running into the neighbouring mapping. */
static void *stack_map(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
		       -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p, fl__page_size(), PROT_NONE) < 0) {
		munmap(p, size);
		return NULL;
	}
	fl__debug_add(FL__DBG_STACKS, 1);
	return p;
}

static void stack_unmap(void *p, size_t size)
{
	munmap(p, size);
	fl__debug_add(FL__DBG_STACKS, -1);
}

static void *stack_get(struct fl_loop *l)
{
	void *p = l->stack_cached ? l->stack_cache[--l->stack_cached] : stack_map(l->stack_size);
#ifdef FL__ASAN
	/* A dead fiber's frames leave poisoned redzones behind, in a cached
	 * stack or in a fresh mapping at a reused address alike. */
	if (p)
		__asan_unpoison_memory_region((char *)p + fl__page_size(), l->stack_size - fl__page_size());
#endif
	return p;
}

static void stack_put(struct fl_loop *l, void *p)
{
	if (l->stack_cached == l->stack_cache_cap && l->stack_cache_cap < FL__STACK_CACHE_MAX) {
		unsigned cap = l->stack_cache_cap ? l->stack_cache_cap * 2 : 8;
		void **n = realloc(l->stack_cache, cap * sizeof(*n));
		if (n) {
			l->stack_cache = n;
			l->stack_cache_cap = cap;
		}
	}
	if (l->stack_cached < l->stack_cache_cap)
		l->stack_cache[l->stack_cached++] = p;
	else
		stack_unmap(p, l->stack_size);
}

void fl__stack_cache_done(struct fl_loop *l)
{
	while (l->stack_cached)
		stack_unmap(l->stack_cache[--l->stack_cached], l->stack_size);
	free(l->stack_cache);
	l->stack_cache = NULL;
	l->stack_cache_cap = 0;
}

/* Plants the frame fl__ctx_switch pops, so that the first switch to the
 * fiber "returns" into fl__ctx_trampoline with the fiber in rbx / x19. */
static void *initial_sp(fl_fiber *f)
{
	uintptr_t top = ((uintptr_t)f->stack + f->stack_size) & ~(uintptr_t)15;
	uint64_t *sp;
#if defined(__x86_64__)
	sp = (uint64_t *)top - 8;
	memset(sp, 0, 8 * sizeof(*sp));
	/* default MXCSR (all exceptions masked, round to nearest), x87 CW 0x37f */
	sp[0] = 0x1f80 | ((uint64_t)0x037f << 32);
	sp[5] = (uintptr_t)f;                     /* rbx */
	sp[7] = (uintptr_t)fl__ctx_trampoline;    /* return address */
#else
	sp = (uint64_t *)top - 20;
	memset(sp, 0, 20 * sizeof(*sp));
	sp[0] = (uintptr_t)f;                     /* x19 */
	sp[11] = (uintptr_t)fl__ctx_trampoline;   /* x30 */
#endif
	return sp;
}

fl_fiber *fl__fiber_new(struct fl_loop *l, fl_fn fn, void *arg, const char *tag)
{
	static uint64_t next_id;
	fl_fiber *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->stack = stack_get(l);
	if (!f->stack) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	f->stack_size = l->stack_size;
	f->loop = l;
	f->id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
	f->fn = fn;
	f->arg = arg;
	f->refs = 1;
	f->state = FL__FIBER_WAITING;
	f->sp = initial_sp(f);
	f->asan_bottom = (char *)f->stack + fl__page_size();
	f->asan_size = f->stack_size - fl__page_size();
#ifdef FL__VALGRIND
	f->vg_id = VALGRIND_STACK_REGISTER((char *)f->stack + fl__page_size(), (char *)f->stack + f->stack_size);
#endif
	if (tag)
		fl_fiber_set_tag(f, tag);
	fl__debug_add(FL__DBG_FIBERS, 1);
	l->live++;
	FL__STAT_ADD(l, fibers_spawned, 1);
	FL__STAT_SET(l, fibers_live, l->live);
	return f;
}

static void fiber_free(fl_fiber *f)
{
	free(f);
	fl__debug_add(FL__DBG_FIBERS, -1);
}

/* Called on another stack than f's: f's stack is reusable now. */
void fl__fiber_reap(struct fl_loop *l, fl_fiber *f)
{
#ifdef FL__VALGRIND
	VALGRIND_STACK_DEREGISTER(f->vg_id);
#endif
	stack_put(l, f->stack);
	f->stack = NULL;
	if (--f->refs == 0)
		fiber_free(f);
}

#ifdef FL__ASAN
void fl__asan_before(struct fl_loop *l, fl_fiber *from, fl_fiber *to)
{
	/* the resumed side reports the switch done, naming this fiber */
	l->switch_from = from;
	/* a dying fiber passes NULL so ASan frees its fake stack */
	__sanitizer_start_switch_fiber(from->state == FL__FIBER_DONE ? NULL : &from->asan_fake, to->asan_bottom,
				       to->asan_size);
}

void fl__asan_after(struct fl_loop *l, fl_fiber *self)
{
	fl_fiber *prev = l->switch_from;
	/* also learns the root (thread) stack's bounds on the first switch */
	__sanitizer_finish_switch_fiber(self->asan_fake, &prev->asan_bottom, &prev->asan_size);
}
#endif

void fl__fiber_entry(fl_fiber *f)
{
	struct fl_loop *l = f->loop;
	fl__after_switch(l, f);

	f->result = f->fn(f->arg);

	f->state = FL__FIBER_DONE;
	f->interrupt = 0;
	/* fl_schedule(fl_current(), v) before returning queued it: that entry
	 * would be switched to after the fiber is reaped (use after free) */
	if (FL__UNLIKELY(f->in_rq)) {
		fl__rq_delete(&l->rq, f);
		f->in_rq = 0;
	}
	l->live--;
	FL__STAT_ADD(l, fibers_done, 1);
	FL__STAT_SET(l, fibers_live, l->live);
	for (fl_fiber *w = f->awaiters, *next; w; w = next) {
		next = w->next_awaiter;
		w->next_awaiter = NULL;
		fl__schedule(l, w, NULL, 0);
	}
	f->awaiters = NULL;
	/* the next fiber unmaps/caches this stack once it is off it */
	l->zombie = f;
	fl__switch(l);
	__builtin_unreachable();
}

/* ---- public -------------------------------------------------------------- */

fl_fiber *fl_spin(fl_fn fn, void *arg, const char *tag)
{
	struct fl_loop *l = fl__tls_loop;
	if (!l || !fn) {
		errno = l ? EINVAL : EPERM;
		return NULL;
	}
	fl_fiber *f = fl__fiber_new(l, fn, arg, tag);
	if (f)
		fl__schedule(l, f, NULL, 0);
	return f;
}

const char *fl_fiber_tag(const fl_fiber *f)
{
	return f ? f->tag : NULL;
}

void fl_fiber_set_tag(fl_fiber *f, const char *tag)
{
	if (!f)
		return;
	f->tag = tag;
	f->tag_index = tag ? fl_stats_tag_index(f->loop->slot, tag) : 0;
	if (f->loop->current == f)
		FL__STAT_SET(f->loop, current_tag, f->tag_index);
}

uint64_t fl_fiber_id(const fl_fiber *f)
{
	return f ? f->id : 0;
}

int fl_fiber_done(const fl_fiber *f)
{
	return f->state == FL__FIBER_DONE;
}

void fl_fiber_ref(fl_fiber *f)
{
	f->refs++;
}

void fl_fiber_unref(fl_fiber *f)
{
	if (--f->refs == 0)
		fiber_free(f);
}

void *fl_fiber_guard_page(const fl_fiber *f)
{
	return f->stack;
}

fl_fiber *fl_current(void)
{
	struct fl_loop *l = fl__tls_loop;
	return l && l->current != &l->root ? l->current : NULL;
}

int fl_await(fl_fiber *f, void **result)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return -EPERM;
	if (f->loop != l)
		return -EINVAL;
	if (f == l->current)
		return -EDEADLK;
	if (f->state != FL__FIBER_DONE) {
		fl_fiber *me = l->current;
		f->refs++; /* f is freed when done; keep it for the result */
		me->next_awaiter = f->awaiters;
		f->awaiters = me;
		while (f->state != FL__FIBER_DONE)
			fl__park(l, FL__WAIT_SUSPEND);
		if (result)
			*result = f->result;
		fl_fiber_unref(f);
		return 0;
	}
	if (result)
		*result = f->result;
	return 0;
}
