/* io_uring with a full SQ that a submit cannot empty: a cancel or the wake read that did not fit is sent at the next poll, never lost. */
#include "support/fl_test.h"

#include <dlfcn.h>
#include <liburing.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* While set, io_uring_submit refuses like a kernel with an overflowing CQ
 * (the blocking polls' io_uring_submit_and_wait are left alone). */
static int refuse_submits;

int io_uring_submit(struct io_uring *ring)
{
	static int (*real)(struct io_uring *);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "io_uring_submit");
	if (__atomic_load_n(&refuse_submits, __ATOMIC_RELAXED))
		return -EBUSY;
	return real(ring);
}

static void *long_sleep(void *arg)
{
	(void)arg;
	fl_sleep(10);
	return NULL;
}

/* Two sleeps fill the 2-entry SQ while submits are refused. */
static void fill_sq(fl_fiber **b, fl_fiber **c)
{
	__atomic_store_n(&refuse_submits, 1, __ATOMIC_RELAXED);
	*b = fl_spin(long_sleep, NULL, NULL);
	*c = fl_spin(long_sleep, NULL, NULL);
	fl_snooze(); /* both prepare their SQE and park */
}

static void *blocked_read(void *arg)
{
	int *p = arg;
	char c;
	return (void *)(intptr_t)fl_read(p[0], &c, 1);
}

static void *lost_cancel_main(void *arg)
{
	(void)arg;
	if (strcmp(fl_test_backend, "io_uring") != 0)
		return NULL;
	int p[2];
	fl_fiber *b, *c;
	cr_assert_eq(pipe(p), 0);
	fl_fiber *a = fl_spin(blocked_read, p, NULL);
	fl_fiber_ref(a);
	fl_sleep(0.01); /* a's read is in the kernel */
	fill_sq(&b, &c);
	fl_cancel(a);
	fl_snooze(); /* a: its cancel SQE does not fit; a waits for its CQE */
	__atomic_store_n(&refuse_submits, 0, __ATOMIC_RELAXED);
	fl_cancel(b);
	fl_cancel(c);
	void *res;
	/* before: the cancel was dropped and a waited for ever */
	fl_await(a, &res);
	cr_assert_eq((intptr_t)res, -ECANCELED);
	fl_fiber_unref(a);
	close(p[0]);
	close(p[1]);
	return NULL;
}

Test(uring_sqfull, cancel_that_did_not_fit_is_sent_later, .timeout = 10)
{
	struct fl_options o = { .ring_entries = 2 };
	fl_test_run_opts(lost_cancel_main, NULL, &o);
}

struct xwake {
	fl_fiber *target;
	int       delay_ms;
};

static void *schedule_from_thread(void *arg)
{
	struct xwake *x = arg;
	struct timespec ts = { 0, x->delay_ms * 1000L * 1000 };
	nanosleep(&ts, NULL);
	fl_schedule(x->target, (void *)1);
	return NULL;
}

static int woken;

static void *suspender(void *arg)
{
	(void)arg;
	while (fl_suspend())
		woken++;
	return NULL;
}

static void *lost_wake_main(void *arg)
{
	(void)arg;
	if (strcmp(fl_test_backend, "io_uring") != 0)
		return NULL;
	fl_fiber *b, *c;
	woken = 0;
	fl_fiber *d = fl_spin(suspender, NULL, NULL);
	fl_fiber_ref(d);
	fl_sleep(0.01); /* the wake read is in the kernel; d is parked */
	fill_sq(&b, &c);
	struct xwake x = { d, 0 };
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, schedule_from_thread, &x), 0);
	pthread_join(t, NULL);
	/* non-blocking polls reap the wake CQE; its re-arm does not fit */
	for (int i = 0; i < 1000 && !woken; i++) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
		fl_snooze();
	}
	cr_assert_eq(woken, 1);
	__atomic_store_n(&refuse_submits, 0, __ATOMIC_RELAXED);
	fl_cancel(b);
	fl_cancel(c);
	/* the next cross-thread schedule must still wake the blocked loop:
	 * before, the wake read was never re-armed and this hung */
	x.delay_ms = 50;
	cr_assert_eq(pthread_create(&t, NULL, schedule_from_thread, &x), 0);
	fl_sleep(0.2);
	pthread_join(t, NULL);
	cr_assert_eq(woken, 2, "the second cross-thread schedule was lost");
	fl_schedule(d, NULL); /* ends it */
	fl_await(d, NULL);
	fl_fiber_unref(d);
	return NULL;
}

Test(uring_sqfull, wake_read_that_did_not_fit_is_rearmed, .timeout = 10)
{
	struct fl_options o = { .ring_entries = 2 };
	fl_test_run_opts(lost_wake_main, NULL, &o);
}
