/*
 * sched.c — the per-thread scheduler: the switch rule (Polyphony 0.62),
 * schedule / snooze / suspend / cancel, cross-thread wakeups, polling with
 * its stats, and the hooks.
 *
 * A switch goes straight from one fiber's stack to the next; the scheduler
 * runs on the stack of the fiber that gives up the CPU, polling included.
 */
#include "fl_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Polyphony's anti-starvation threshold: with ops pending, poll (without
 * blocking) at least every this many switches. */
#define FL__ANTI_STARVE_SWITCHES 64

__thread struct fl_loop *fl__tls_loop __attribute__((tls_model("initial-exec")));

uint64_t fl__now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void fl__pending_inc(struct fl_loop *l)
{
	l->pending++;
	FL__STAT_SET(l, pending_ops, l->pending);
}

void fl__pending_dec(struct fl_loop *l)
{
	l->pending--;
	FL__STAT_SET(l, pending_ops, l->pending);
}

#ifndef FL_NO_STATS
_Static_assert(offsetof(struct loopstat_shm_slot, span_h19) ==
		       offsetof(struct loopstat_shm_slot, span_h0) + (LOOPSTAT_SPAN_BUCKETS - 1) * sizeof(uint64_t),
	       "the span histogram is one array of counters");

/* One busy span (the end of the last blocking poll to the start of this
 * one) into the slot's log2 histogram: from the two clock reads the poll
 * makes anyway. */
static void count_span(struct fl_loop *l, uint64_t ns)
{
	int k = ns ? 63 - __builtin_clzll(ns) - LOOPSTAT_SPAN_SHIFT : 0;
	k = k < 0 ? 0 : k >= LOOPSTAT_SPAN_BUCKETS ? LOOPSTAT_SPAN_BUCKETS - 1 : k;
	fl__stat_add((uint64_t *)((char *)l->slot + offsetof(struct loopstat_shm_slot, span_h0)) + k, 1);
}
#endif

static void poll_backend(struct fl_loop *l, int blocking)
{
	int64_t timeout = 0;
	if (blocking)
		timeout = l->timeouts ? fl__next_timeout_ns(l) : -1;
	if (l->trace)
		l->trace(FL_TRACE_POLL_ENTER, NULL, blocking, l->trace_data);
	FL__STAT_ADD(l, polls, 1);
	if (blocking) {
		FL__STAT_ADD(l, polls_blocking, 1);
		FL__STAT_SET(l, current_fiber, 0);
		FL__STAT_SET(l, current_tag, 0);
		/* the runqueue is empty here; a fiber deleted from it since the
		 * last switch (one that queued itself and returned) would leave
		 * the gauge stale for the whole poll */
		FL__STAT_SET(l, runqueue_len, l->rq.len);
		if (l->be->flush)
			l->be->flush(l);
#ifndef FL_NO_STATS
		/* the only clock reads of the loop: around blocking polls */
		uint64_t t0 = fl__now_ns();
		/* a reader counts a poll still in progress from here; cleared
		 * first so that a torn read never counts the poll twice */
		FL__STAT_SET(l, poll_since_ns, t0);
		if (l->poll_left_ns)
			count_span(l, t0 - l->poll_left_ns);
		l->be->poll(l, timeout);
		uint64_t t1 = fl__now_ns();
		FL__STAT_SET(l, poll_since_ns, 0);
		FL__STAT_ADD(l, poll_time_ns, t1 - t0);
		l->poll_left_ns = t1;
#else
		l->be->poll(l, timeout);
#endif
	} else {
		l->be->poll(l, 0);
	}
	l->switches_at_poll = *fl__switches(l);
	if (l->trace)
		l->trace(FL_TRACE_POLL_LEAVE, NULL, blocking, l->trace_data);
	if (l->timeouts)
		fl__check_timeouts(l);
}

/*
 * The slot's part of a switch: the switch count, the runqueue length, the
 * running fiber's id and tag. A switch is ~9 ns and ~150 instructions here,
 * and the first store added to it costs about a cycle, ~3 %, wherever it
 * goes (bench/switch; docs/performance.md), so what the stats writer adds
 * is counted in stores:
 *  - the switch count costs none: it is the scheduler's own count (the
 *    anti-starvation rule's), kept in the slot (fl__switches);
 *  - the runqueue length: one store of a register still holding it from
 *    the shift; storing it unconditionally is cheaper than comparing it
 *    with the published one;
 *  - the id and tag: one 16-byte copy; the fiber keeps them side by side,
 *    as the slot's current_fiber and current_tag are. An aligned 16-byte
 *    store is never split below its 8-byte halves (x86-64: atomic as a
 *    whole on CPUs with AVX; aarch64: a pair of single-copy atomic 64-bit
 *    writes), so a reader's u64 loads see each value whole, as with
 *    fl_stat_set();
 *  - the stores are unconditional also when next is the current fiber:
 *    a branch costs more than the store it saves, and storing the id and
 *    tag again is what repairs the "no fiber running" a blocking poll
 *    published during this switch;
 *  - every value is loaded before the first store (for the compiler a
 *    store into the slot may alias the loop's and fibers' fields), and
 *    nothing reads the stores back: they stay off the switch's dependency
 *    chain (runqueue shift -> next fiber -> its stack pointer).
 *
 * runqueue_len is the length at the last switch, not after every schedule:
 * the monitor can only attribute time at the points the slot marks, and
 * those are switches (the switch count moves) and blocking polls
 * (poll_backend stores the length, 0, there). While a fiber runs, the gauge
 * is what the runqueue held when it was switched to; what that fiber
 * schedules shows at its next switch, which is where it can first run.
 */
_Static_assert(offsetof(struct loopstat_shm_slot, current_tag) == offsetof(struct loopstat_shm_slot, current_fiber) + 8 &&
		       offsetof(struct loopstat_shm_slot, current_fiber) % 16 == 0,
	       "current_fiber and current_tag are one aligned 16-byte store");

static inline void publish_switch(struct fl_loop *l, const fl_fiber *next)
{
#ifndef FL_NO_STATS
	struct loopstat_shm_slot *s = l->slot;
	uint64_t len = l->rq.len;
	fl__u64x2 cur = next->pub; /* { id, tag_index }; the root's id is 0 */
	fl__stat_inc(&s->switches);
	fl_stat_set(&s->runqueue_len, len);
	*(fl__u64x2 *)&s->current_fiber = cur;
#else
	(void)next;
	l->switches++;
#endif
}

/* Switches done since the last poll: the switch that polled counts, so
 * the rule polls every 64 switches whether the last poll blocked or not. */
static inline uint64_t switches_since_poll(struct fl_loop *l)
{
	return *fl__switches(l) - l->switches_at_poll;
}

/*
 * The runqueue emptied: the idle hook runs every time, the periodic task
 * (Polyphony's idle_gc_period) only when its period has passed since its
 * last run. This is the one clock read outside poll_backend's; it is made
 * only with a period set and, like those, just before a blocking poll,
 * never on the switch path.
 */
static void run_idle_tasks(struct fl_loop *l)
{
	if (l->idle)
		l->idle(l->idle_data);
	if (l->idle_period_ns) {
		uint64_t now = fl__now_ns();
		if (now - l->idle_period_last_ns >= l->idle_period_ns) {
			l->idle_period_last_ns = now;
			l->idle_period_fn(l->idle_period_data);
		}
	}
}

/*
 * Runs the next runnable fiber; returns, in the calling fiber, the value it
 * is eventually resumed with. The caller has set its own state (and queued
 * itself if it wants to run again).
 */
void *fl__switch(struct fl_loop *l)
{
	fl_fiber *cur = l->current;
	struct fl__rq_entry e;
	int polled = 0, idled = 0;

	if (l->trace)
		l->trace(FL_TRACE_SWITCHPOINT, cur, 0, l->trace_data);
	for (;;) {
		if (fl__rq_shift(&l->rq, &e) == 0) {
			/* Anti-starvation: a runqueue that never empties would
			 * otherwise never let completions (or expired timeout
			 * scopes) in. */
			if (!polled && (l->pending || l->timeouts) &&
			    (switches_since_poll(l) >= FL__ANTI_STARVE_SWITCHES || e.fiber == cur))
				poll_backend(l, 0);
			break;
		}
		if (l->live == 0) {
			/* every fiber finished: back to fl_run */
			e.fiber = &l->root;
			e.value = NULL;
			break;
		}
		if (!idled) {
			idled = 1;
			if (l->idle || l->idle_period_ns) {
				/* they may schedule fibers: look again */
				run_idle_tasks(l);
				continue;
			}
		}
		poll_backend(l, 1);
		polled = 1;
	}

	fl_fiber *next = e.fiber;
	/* first: the runqueue length is still in a register */
	publish_switch(l, next);
	next->in_rq = 0;
	next->state = FL__FIBER_RUNNING;
	if (l->trace)
		l->trace(FL_TRACE_RUN, next, 0, l->trace_data);
	if (next == cur)
		return e.value;
	next->value = e.value;
	l->current = next;
	fl__asan_before(l, cur, next);
	fl__ctx_switch(&cur->sp, next->sp);
	fl__after_switch(l, cur);
	return cur->value;
}

void fl__schedule(struct fl_loop *l, fl_fiber *f, void *value, int first)
{
	if (f->in_rq || f->state == FL__FIBER_DONE)
		return;
	int err = first ? fl__rq_unshift(&l->rq, f, value) : fl__rq_push(&l->rq, f, value);
	if (FL__UNLIKELY(err))
		abort(); /* out of memory growing the runqueue: a lost fiber would hang the loop */
	f->in_rq = 1;
	if (f->state != FL__FIBER_RUNNING)
		f->state = FL__FIBER_RUNNABLE;
	/* runqueue_len is published at the next switch, not here: a spin or
	 * a snooze would otherwise pay for two stores of the same gauge */
	if (l->trace)
		l->trace(FL_TRACE_SCHEDULE, f, 0, l->trace_data);
}

void *fl__park(struct fl_loop *l, enum fl__wait_kind wait)
{
	fl_fiber *me = l->current;
	me->state = FL__FIBER_WAITING;
	me->wait = wait;
	void *v = fl__switch(l);
	me->wait = FL__WAIT_NONE;
	return v;
}

/* ---- cross-thread schedule ----------------------------------------------- */

/*
 * The wakeup happens under the lock: loop teardown takes the lock and sets
 * xclosed before closing the eventfd / async watcher, so a pusher can never
 * wake a loop that has finished (and freed its backend) in between.
 */
static void xq_push(struct fl_loop *l, fl_fiber *f, void *value)
{
	pthread_mutex_lock(&l->xlock);
	if (FL__UNLIKELY(l->xclosed)) {
		/* every fiber of the loop has finished: nobody to run */
		pthread_mutex_unlock(&l->xlock);
		return;
	}
	if (l->xlen == l->xcap) {
		unsigned cap = l->xcap ? l->xcap * 2 : 16;
		struct fl__xentry *n = realloc(l->xq, cap * sizeof(*n));
		if (!n)
			abort();
		l->xq = n;
		l->xcap = cap;
	}
	l->xq[l->xlen++] = (struct fl__xentry){ f, value };
	l->be->wakeup(l);
	pthread_mutex_unlock(&l->xlock);
}

void fl__xq_close(struct fl_loop *l)
{
	pthread_mutex_lock(&l->xlock);
	l->xclosed = 1;
	l->xlen = 0; /* their fibers are done (maybe freed): never schedule them */
	pthread_mutex_unlock(&l->xlock);
}

/* Oldest first: cross-thread schedules run in the order they were made. */
void fl__drain_xq(struct fl_loop *l)
{
	struct fl__xentry batch[64];
	unsigned n;
	do {
		pthread_mutex_lock(&l->xlock);
		n = l->xlen < 64 ? l->xlen : 64;
		if (n) { /* xq may still be NULL */
			memcpy(batch, l->xq, n * sizeof(*batch));
			l->xlen -= n;
			memmove(l->xq, l->xq + n, l->xlen * sizeof(*l->xq));
		}
		pthread_mutex_unlock(&l->xlock);
		for (unsigned i = 0; i < n; i++)
			fl__schedule(l, batch[i].fiber, batch[i].value, 0);
	} while (n == 64);
}

/* ---- public -------------------------------------------------------------- */

void fl_schedule(fl_fiber *f, void *value)
{
	if (f->loop != fl__tls_loop)
		xq_push(f->loop, f, value);
	else
		fl__schedule(f->loop, f, value, 0);
}

void fl_schedule_first(fl_fiber *f, void *value)
{
	if (f->loop != fl__tls_loop)
		xq_push(f->loop, f, value);
	else
		fl__schedule(f->loop, f, value, 1);
}

void fl_snooze(void)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return;
	fl_fiber *me = l->current;
	fl__schedule(l, me, NULL, 0);
	fl__switch(l);
}

void *fl_suspend(void)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return NULL;
	return fl__park(l, FL__WAIT_SUSPEND);
}

int fl_cancel(fl_fiber *f)
{
	struct fl_loop *l = fl__tls_loop;
	if (!l || f->loop != l)
		return -EINVAL;
	if (f->state == FL__FIBER_DONE)
		return -ESRCH;
	f->interrupt = -ECANCELED;
	if (f->wait == FL__WAIT_OP)
		fl__schedule(l, f, NULL, 0);
	return 0;
}

int fl_wait_event(void **value)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return -EPERM;
	int err = fl__op_begin(l);
	if (err)
		return err;
	fl_fiber *me = l->current;
	fl__pending_inc(l);
	void *v = fl__op_park(l);
	fl__pending_dec(l);
	FL__STAT_ADD(l, completions, 1);
	/* an interrupt schedules with NULL; a real event clears nothing */
	if (me->interrupt)
		return fl__take_interrupt(l);
	if (value)
		*value = v;
	return 0;
}

void fl_set_trace_hook(fl_trace_fn fn, void *data)
{
	struct fl_loop *l = fl__tls_loop;
	if (l) {
		l->trace = fn;
		l->trace_data = data;
	}
}

void fl_set_idle_hook(fl_idle_fn fn, void *data)
{
	struct fl_loop *l = fl__tls_loop;
	if (l) {
		l->idle = fn;
		l->idle_data = data;
	}
}

int fl_set_idle_period(double seconds, fl_idle_fn fn, void *data)
{
	struct fl_loop *l = fl__tls_loop;
	if (!l)
		return -EPERM;
	/* !(x >= 0) also catches NaN; the bound keeps the ns in 64 bits */
	if (!(seconds >= 0) || seconds > 1e9)
		return -EINVAL;
	uint64_t ns = fn ? (uint64_t)(seconds * 1e9) : 0; /* 0: disabled */
	if (fn && seconds > 0 && ns == 0)
		ns = 1; /* a period under 1 ns is not "disabled" */
	l->idle_period_ns = ns;
	l->idle_period_fn = fn;
	l->idle_period_data = data;
	/* the first run is one period from now, not at the next idle */
	l->idle_period_last_ns = ns ? fl__now_ns() : 0;
	return 0;
}

struct loopstat_shm_slot *fl_stats_slot(void)
{
	struct fl_loop *l = fl__tls_loop;
	return l ? l->slot : NULL;
}

const char *fl_backend_name(void)
{
	struct fl_loop *l = fl__tls_loop;
	return l ? l->be->name : NULL;
}
