/*
 * ops_time.c — sleep, timer_loop and timeout scopes.
 *
 * Timeout scopes are the loop's own timers, not backend timers, so that one
 * implementation serves every backend: armed scopes bound the blocking
 * poll's wait and are checked after every poll. The clock is read for them
 * only while a scope is armed.
 *
 * Scopes nest on a fiber's stack. A scope that fired stays expired until it
 * closes: every op inside it returns -ETIMEDOUT (fl_fiber.expired keeps the
 * interrupt armed), so an outer deadline that interrupts an inner scope's op
 * is not lost when the inner scope returns.
 */
#include "fl_internal.h"


struct fl__timeout_scope {
	uint64_t                  deadline;  /* CLOCK_MONOTONIC ns */
	fl_fiber                 *fiber;     /* borrowed: the fiber in the scope */
	int                       fired;
	struct fl__timeout_scope *next;      /* in l->timeouts, by deadline */
};

static uint64_t secs_to_ns(double s)
{
	if (!(s > 0))
		return 0;
	if (s > 1e9)
		s = 1e9;
	return (uint64_t)(s * 1e9 + 0.5);
}

int64_t fl__next_timeout_ns(struct fl_loop *l)
{
	if (!l->timeouts)
		return -1;
	uint64_t now = fl__now_ns();
	return l->timeouts->deadline > now ? (int64_t)(l->timeouts->deadline - now) : 0;
}

void fl__check_timeouts(struct fl_loop *l)
{
	uint64_t now = fl__now_ns();
	while (l->timeouts && l->timeouts->deadline <= now) {
		struct fl__timeout_scope *s = l->timeouts;
		l->timeouts = s->next;
		s->fired = 1;
		s->fiber->expired++;
		/* a pending cancel is reported first; -ETIMEDOUT follows it */
		if (s->fiber->interrupt != -ECANCELED)
			s->fiber->interrupt = -ETIMEDOUT;
		if (s->fiber->wait == FL__WAIT_OP)
			fl__schedule(l, s->fiber, NULL, 0);
	}
}

static void scope_unlink(struct fl_loop *l, struct fl__timeout_scope *s)
{
	for (struct fl__timeout_scope **p = &l->timeouts; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			return;
		}
	}
}

int fl_timeout(double seconds, int (*fn)(void *arg), void *arg)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return -EPERM;
	if (!fn || !(seconds >= 0))
		return -EINVAL;
	struct fl__timeout_scope s = {
		.deadline = fl__now_ns() + secs_to_ns(seconds),
		.fiber = l->current,
	};
	struct fl__timeout_scope **p = &l->timeouts;
	while (*p && (*p)->deadline <= s.deadline)
		p = &(*p)->next;
	s.next = *p;
	*p = &s;

	int ret = fn(arg);

	if (s.fired) {
		/* closing the last expired scope: its -ETIMEDOUT must not leak
		 * out (an enclosing expired scope keeps it) */
		fl_fiber *f = l->current;
		if (--f->expired == 0 && f->interrupt == -ETIMEDOUT)
			f->interrupt = 0;
	} else {
		scope_unlink(l, &s);
	}
	return ret;
}

int fl_sleep(double seconds)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return -EPERM;
	if (!(seconds >= 0))
		return -EINVAL;
	int err = fl__op_begin(l);
	if (err)
		return err;
	return l->be->sleep(l, secs_to_ns(seconds));
}

int fl_timer_loop(double interval, int (*cb)(void *arg), void *arg)
{
	struct fl_loop *l = fl__op_loop();
	if (!l)
		return -EPERM;
	uint64_t step = secs_to_ns(interval);
	if (!cb || step == 0)
		return -EINVAL;
	uint64_t next = fl__now_ns() + step;
	for (;;) {
		uint64_t now = fl__now_ns();
		if (next > now) {
			int err = fl__op_begin(l);
			if (err)
				return err;
			err = l->be->sleep(l, next - now);
			if (err)
				return err;
		}
		if (cb(arg))
			return 0;
		/* fixed schedule: the next tick still in the future, skipping
		 * those already missed rather than firing them back to back */
		now = fl__now_ns();
		next += step;
		if (next <= now)
			next += ((now - next) / step + 1) * step;
	}
}
