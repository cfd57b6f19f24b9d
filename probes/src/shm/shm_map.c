/*
 * shm_map.c — a read-only shared mapping of a validated segment, so that
 * the per-tick hot read of a slot (probe_shm_read_hot) costs a few loads
 * and the table read (probe_shm_read) a few copies instead of pread(2)s,
 * and the SIGBUS guard that keeps a segment truncated under the mapping
 * from killing the monitor.
 *
 * The file's owner can truncate it at any time; touching a mapped page
 * that is then wholly past EOF raises SIGBUS in the reading thread. Every
 * load from a mapping runs inside a guard: a thread-local flag, the range
 * being read and a sigjmp_buf. The process-wide SIGBUS handler (installed
 * once, when the first mapping is made) jumps back into the guarded read
 * when the fault is the kernel's, in this thread, inside a guard, at an
 * address in the guarded range; the read then fails with -EBADMSG and the
 * mapping is dropped for good (pread from then on). Any other SIGBUS gets
 * what it would have got without us: the handler found at install time,
 * or the default action (death with SIGBUS).
 */
#include "shm_int.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>

/*
 * One guard per thread. initial-exec: the handler must reach it without
 * the lazy TLS allocation a dynamic model may do (not async-signal-safe).
 */
struct shm_guard {
	volatile sig_atomic_t on;  /* 1 while the thread loads from [base, base + len) */
	const char *base;
	size_t      len;
	sigjmp_buf  env;           /* taken with savemask 0: no sigprocmask call per read */
};
static __thread struct shm_guard guard __attribute__((tls_model("initial-exec")));

static struct sigaction prev_bus;   /* what SIGBUS did before us; written once, before install */
static int bus_installed;           /* 1 once our handler is in place (under bus_once) */
static pthread_once_t bus_once = PTHREAD_ONCE_INIT;

/* Not ours: behave as if libprobes had never installed anything. */
static void chain_sigbus(int sig, siginfo_t *si, void *uc)
{
	void (*h)(int) = prev_bus.sa_handler;
	/* an ignored SIGBUS that someone sent stays ignored; a fault cannot be
	 * ignored (the kernel would kill on the re-fault) */
	if (h == SIG_IGN && si->si_code <= 0)
		return;
	if (h != SIG_DFL && h != SIG_IGN) {
		if (prev_bus.sa_flags & SA_SIGINFO)
			prev_bus.sa_sigaction(sig, si, uc);
		else
			h(sig);
		return;
	}
	/* default action: die of it. SA_NODEFER keeps SIGBUS unblocked here,
	 * so the raise terminates before it returns */
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct shm_guard *g = &guard;
	/* si_code > 0: raised by the kernel for a fault, so si_addr is real
	 * (another process can queue a SIGBUS with any si_addr, but only with
	 * si_code < 0) */
	if (g->on && si->si_code > 0 && (uintptr_t)si->si_addr - (uintptr_t)g->base < g->len) {
		g->on = 0;
		siglongjmp(g->env, 1);
	}
	chain_sigbus(sig, si, uc);
}

/*
 * SA_NODEFER: siglongjmp with a mask-less sigjmp_buf would leave SIGBUS
 * blocked after the jump, and a later fault with it blocked kills the
 * process. No SA_ONSTACK: the handler jumps back to the thread's stack,
 * which sanitizers (and readers of core dumps) expect from a normal stack.
 */
static void install_sigbus(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, NULL, &prev_bus) == 0 && sigaction(SIGBUS, &sa, NULL) == 0)
		bus_installed = 1;
}

/* Whether SIGBUS is guarded now: installed once, and not replaced since by
 * a handler of the application's (then mapped reads would not be caught). */
static int sigbus_guarded(void)
{
	struct sigaction cur;
	pthread_once(&bus_once, install_sigbus);
	return bus_installed && sigaction(SIGBUS, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	       cur.sa_sigaction == on_sigbus;
}

static void map_drop(struct shm_map *m)
{
	if (m->base)
		munmap((void *)m->base, m->len);
	m->base = NULL;
	m->len = 0;
	m->state = SHM_MAP_OFF;
}

/*
 * Runs fn(base + off, arg) with the guard up. Returns what fn returns, or
 * -EBADMSG (and the mapping dropped) if it faulted. Nothing that lives
 * across the sigsetjmp is modified between it and a jump, so no volatile.
 */
static inline int guarded(struct shm_map *m, size_t off, int (*fn)(const char *p, void *arg), void *arg)
{
	struct shm_guard *g = &guard;
	if (sigsetjmp(g->env, 0)) {
		map_drop(m);
		return -EBADMSG;
	}
	g->base = m->base;
	g->len = m->len;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	g->on = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	int r = fn(m->base + off, arg);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	g->on = 0;
	return r;
}

#define LOAD(p) __atomic_load_n(p, __ATOMIC_RELAXED)

/* the tag name is loaded as aligned u64 words */
_Static_assert(offsetof(struct loopstat_shm_slot, tags) % 8 == 0 && sizeof(struct loopstat_shm_tag) % 8 == 0 &&
		       offsetof(struct loopstat_shm_tag, name) % 8 == 0 && LOOPSTAT_TAG_LEN % 8 == 0,
	       "tag names are 8-byte aligned");

/* The mapped header must still describe the geometry validated at open. */
static int header_matches(const char *p, void *arg)
{
	const struct loopstat_shm_header *h = (const void *)p, *want = arg;
	return LOAD(&h->magic) == LOOPSTAT_SHM_MAGIC && LOAD(&h->header_size) == want->header_size &&
			       LOAD(&h->slot_size) == want->slot_size && LOAD(&h->slot_count) == want->slot_count &&
			       LOAD(&h->pid) == want->pid
		       ? 0
		       : -ESTALE;
}

int shm_map_open(struct shm_map *m, int fd, const struct loopstat_shm_header *geo)
{
	size_t len = geo->header_size + (size_t)geo->slot_count * geo->slot_size;
	struct stat st;
	m->state = SHM_MAP_OFF;
	/* u64 fields must be 8-aligned for single-copy atomic loads (and for
	 * UBSan); the writer lays out 64-byte multiples, a forgery may not */
	if (geo->header_size % 8 || geo->slot_size % 8)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((size_t)st.st_size < len)
		return -EBADMSG;
	if (!sigbus_guarded())
		return -ENOTSUP;
	void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	m->base = p;
	m->len = len;
	m->state = SHM_MAP_ON;
	int err = guarded(m, 0, header_matches, (void *)geo);
	if (err < 0)
		map_drop(m);
	return err;
}

void shm_map_close(struct shm_map *m)
{
	map_drop(m);
}

struct hot_args {
	int minor1;               /* the writer publishes poll_since_ns */
	struct shm_hot_raw *r;
};

static int load_hot(const char *p, void *arg)
{
	const struct loopstat_shm_slot *s = (const void *)p;
	struct hot_args *a = arg;
	struct shm_hot_raw *r = a->r;
	r->state = LOAD(&s->state);
	r->tid = LOAD(&s->tid);
	r->generation = LOAD(&s->generation);
	r->current_fiber = LOAD(&s->current_fiber);
	r->current_tag = LOAD(&s->current_tag);
	r->poll_since_ns = a->minor1 ? LOAD(&s->poll_since_ns) : 0;
	uint64_t ti = r->current_tag;
	if (ti >= 1 && ti <= LOOPSTAT_TAG_MAX) {
		const struct loopstat_shm_tag *t = &s->tags[ti - 1];
		/* the writer stores the name, then len with release */
		r->tag.len = __atomic_load_n(&t->len, __ATOMIC_ACQUIRE);
		const uint64_t *src = (const void *)t->name;
		uint64_t words[LOOPSTAT_TAG_LEN / 8];
		for (size_t i = 0; i < LOOPSTAT_TAG_LEN / 8; i++)
			words[i] = LOAD(&src[i]);
		__builtin_memcpy(r->tag.name, words, sizeof(words));
	}
	return 0;
}

int shm_map_read_hot(struct shm_map *m, size_t off, int minor1, struct shm_hot_raw *r)
{
	struct hot_args a = { .minor1 = minor1, .r = r };
	return guarded(m, off, load_hot, &a);
}

struct copy_args {
	void  *dst;
	size_t len;
};

/* A plain copy, as the kernel's pread makes: the writer's stores race with
 * it and the caller's seqlock (the header generation) decides whether the
 * copy is consistent, as it does for pread. */
static int copy_out(const char *p, void *arg)
{
	struct copy_args *a = arg;
	__builtin_memcpy(a->dst, p, a->len);
	return 0;
}

int shm_map_copy(struct shm_map *m, size_t off, size_t len, void *dst)
{
	if (off > m->len || len > m->len - off)
		return -EINVAL;
	struct copy_args a = { .dst = dst, .len = len };
	return guarded(m, off, copy_out, &a);
}

/* the generation is loaded as one aligned u64 */
_Static_assert(offsetof(struct loopstat_shm_header, generation) % 8 == 0, "generation is 8-byte aligned");

static int load_gen_open(const char *p, void *arg)
{
	/* acquire: the slot copies that follow cannot be satisfied before it */
	*(uint64_t *)arg = __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_ACQUIRE);
	return 0;
}

static int load_gen_close(const char *p, void *arg)
{
	/* the fence keeps the slot copies before this load (seqlock reader) */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	*(uint64_t *)arg = LOAD((const uint64_t *)(const void *)p);
	return 0;
}

int shm_map_generation(struct shm_map *m, int closing, uint64_t *gen)
{
	return guarded(m, offsetof(struct loopstat_shm_header, generation), closing ? load_gen_close : load_gen_open,
		       gen);
}
