/* Polls that never block still bring every completion in: CQ overflow is flushed while the runqueue never empties (both backends). */
#include "support/fl_test.h"

#include <fcntl.h>
#include <unistd.h>

#define WAITERS 64

struct flood {
	int p[2];
	int done;
	int stop;
};

static void *waiter(void *arg)
{
	struct flood *f = arg;
	/* readable at once: every poll SQE completes at submission */
	cr_assert(fl_wait_io(f->p[0], FL_READABLE) > 0);
	f->done++;
	return NULL;
}

static void *snoozer(void *arg)
{
	struct flood *f = arg;
	/* keeps the runqueue non-empty: only non-blocking polls happen */
	for (long i = 0; i < 200000 && f->done < WAITERS; i++)
		fl_snooze();
	return NULL;
}

static void *overflow_main(void *arg)
{
	(void)arg;
	struct flood f = { .done = 0 };
	cr_assert_eq(pipe2(f.p, O_CLOEXEC), 0);
	cr_assert_eq(write(f.p[1], "x", 1), 1);
	fl_fiber *s = fl_spin(snoozer, &f, NULL);
	fl_fiber_ref(s);
	for (int i = 0; i < WAITERS; i++)
		fl_spin(waiter, &f, NULL);
	fl_await(s, NULL);
	fl_fiber_unref(s);
	/* before: the CQEs past the 8-entry CQ sat in the kernel's overflow
	 * list until something else was submitted */
	cr_assert_eq(f.done, WAITERS, "only %d of %d completions came in while the runqueue was busy", f.done,
		     WAITERS);
	close(f.p[0]);
	close(f.p[1]);
	return NULL;
}

Test(uring_poll, cq_overflow_flushed_without_blocking_polls, .timeout = 30)
{
	struct fl_options o = { .ring_entries = 4 };
	fl_test_run_opts(overflow_main, NULL, &o);
}
