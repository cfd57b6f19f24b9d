/*
 * loop.c — a loop's life: backend choice, setup of the runqueue, the stats
 * slot and the backend, running until every fiber is done, and teardown.
 */
#include "fl_internal.h"

#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FL__DEFAULT_STACK (256 * 1024)

/* The name asked for: the option, else $FL_BACKEND; NULL for the default. */
static const char *backend_wanted(const char *name)
{
	if (!name || !*name)
		name = getenv("FL_BACKEND");
	return name && *name ? name : NULL;
}

const struct fl__backend *fl__backend_find(const char *name)
{
	name = backend_wanted(name);
	if (!name || strcmp(name, "io_uring") == 0 || strcmp(name, "uring") == 0)
		return &fl__backend_uring;
	if (strcmp(name, "libev") == 0 || strcmp(name, "ev") == 0)
		return &fl__backend_ev;
	return NULL;
}

/* Whether the kernel lets this process set up a ring: io_uring is often
 * refused (kernel.io_uring_disabled, seccomp), and a caller asking before
 * it chooses must not be told yes and then run libev under that name.
 * Probed once per process: the answer does not change while it runs. */
static int uring_usable(void)
{
	static int state;   /* 0: not probed, 1: usable, -1: refused */
	int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
	if (!s) {
		struct io_uring ring;
		int err = io_uring_queue_init(1, &ring, 0);
		if (!err)
			io_uring_queue_exit(&ring);
		s = err ? -1 : 1;
		__atomic_store_n(&state, s, __ATOMIC_RELAXED);
	}
	return s > 0;
}

int fl_backend_available(const char *name)
{
	const struct fl__backend *be = name ? fl__backend_find(name) : NULL;
	return be && (be != &fl__backend_uring || uring_usable());
}

static size_t stack_size_option(const struct fl_options *o)
{
	size_t sz = o && o->stack_size ? o->stack_size : 0;
	const char *env = getenv("FL_STACK_SIZE");
	if (!sz && env && *env)
		sz = strtoull(env, NULL, 0);
	if (!sz)
		sz = FL__DEFAULT_STACK;
	if (sz < 16 * 1024)
		sz = 16 * 1024;
	/* whole pages plus the guard page, in the machine's page size (16 or
	 * 64 KiB on some aarch64 kernels: a 4 KiB rounding would let the
	 * guard page swallow most of a small stack) */
	size_t ps = fl__page_size();
	return ((sz + ps - 1) & ~(ps - 1)) + ps;
}

/*
 * io_uring is often refused (seccomp profiles of container runtimes,
 * kernel.io_uring_disabled): the default then falls back to libev. Said
 * once per process, however many loops start.
 */
static void fallback_notice(int err)
{
	static int said;
	if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
		fprintf(stderr, "libfiberloop: io_uring unavailable (io_uring_setup: %s), using libev\n",
			strerror(-err));
}

static int loop_init(struct fl_loop *l, const struct fl_options *o)
{
	int err;
	memset(l, 0, sizeof(*l));
	l->be = fl__backend_find(o ? o->backend : NULL);
	if (!l->be)
		return -EINVAL;
	l->stack_size = stack_size_option(o);
	l->slot = &l->dummy_slot;
	l->current = &l->root;
	l->root.state = FL__FIBER_RUNNING;
	l->root.loop = l;
	pthread_mutex_init(&l->xlock, NULL);
	err = fl__rq_init(&l->rq, 64);
	if (err)
		goto fail_lock;
	err = l->be->init(l, o);
	if (err && l->be == &fl__backend_uring && !backend_wanted(o ? o->backend : NULL)) {
		/* the default only: io_uring asked for by name fails instead */
		fallback_notice(err);
		l->be = &fl__backend_ev;
		err = l->be->init(l, o);
	}
	if (err)
		goto fail_rq;
	/* No shm (or no free slot) must not put a branch on the hot path:
	 * the counters then go to the loop's private dummy slot. */
	struct loopstat_shm_slot *s = fl_stats_slot_acquire(o ? o->tag : NULL, l->be->kind, l->be->wait_fd(l));
	if (s)
		l->slot = s;
	l->rq.pub_hwm = &l->slot->runqueue_hwm;
	l->rq.pub_cap = &l->slot->runqueue_cap;
	FL__STAT_SET(l, runqueue_cap, l->rq.cap);
	return 0;

fail_rq:
	fl__rq_done(&l->rq);
fail_lock:
	pthread_mutex_destroy(&l->xlock);
	return err;
}

static void loop_done(struct fl_loop *l)
{
	/* before the backend closes its eventfd / async watcher */
	fl__xq_close(l);
	if (l->zombie) {
		fl__fiber_reap(l, l->zombie);
		l->zombie = NULL;
	}
	l->be->done(l);
	fl__stack_cache_done(l);
	fl__rq_done(&l->rq);
	free(l->xq);
	pthread_mutex_destroy(&l->xlock);
	FL__STAT_SET(l, current_fiber, 0);
	FL__STAT_SET(l, runqueue_len, 0);
	if (l->slot != &l->dummy_slot)
		fl_stats_slot_release(l->slot);
}

int fl_run(fl_fn main, void *arg, const struct fl_options *opts, void **result)
{
	if (fl__tls_loop)
		return -EBUSY;
	if (!main)
		return -EINVAL;
	/* the struct is 64-byte aligned (its fallback slot is): malloc's 16
	 * would misplace its hot fields across cache lines at random */
	struct fl_loop *l = aligned_alloc(_Alignof(struct fl_loop), sizeof(*l));
	if (!l)
		return -ENOMEM;
	int err = loop_init(l, opts);
	if (err)
		goto out_free;
	fl__debug_add(FL__DBG_LOOPS, 1);
	fl__tls_loop = l;

	fl_fiber *f = fl__fiber_new(l, main, arg, NULL);
	if (!f) {
		err = -ENOMEM;
		goto out_done;
	}
	f->refs++; /* keep it for its result */
	fl__schedule(l, f, NULL, 0);
	l->root.state = FL__FIBER_WAITING;
	fl__switch(l); /* returns when every fiber has finished */
	l->root.state = FL__FIBER_RUNNING;
	if (result)
		*result = f->result;
	fl_fiber_unref(f);

out_done:
	loop_done(l);
	/* op contexts still counted here leaked: the leak check sees them */
	fl__debug_add(FL__DBG_OPCTX, l->opctx_live);
	fl__tls_loop = NULL;
	fl__debug_add(FL__DBG_LOOPS, -1);
out_free:
	free(l);
	return err;
}
