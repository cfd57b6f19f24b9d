/* A cross-thread schedule racing the loop's exit: the wakeup never touches a loop that has finished. */
#include "support/fl_test.h"

#include <dlfcn.h>
#include <ev.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/*
 * The backends' wakeups (eventfd_write for io_uring, ev_async_send for
 * libev) are interposed: the second wakeup of the pushing thread stalls
 * 300 ms after its entry was queued. The loop, woken by the first one,
 * drains both entries, runs both fibers and exits meanwhile, unless the
 * wakeup holds the queue's lock (then teardown waits for it).
 */
static pthread_t pusher_thread;
static int wakeups_seen, run_returned, stale_wakeups;

static void stall_second_wakeup(void)
{
	if (!pthread_equal(pthread_self(), pusher_thread) || ++wakeups_seen != 2)
		return;
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

/* 1 if the wakeup may go on; 0 if its loop is gone (counted, skipped) */
static int loop_still_there(void)
{
	if (!pthread_equal(pthread_self(), pusher_thread) || !__atomic_load_n(&run_returned, __ATOMIC_SEQ_CST))
		return 1;
	__atomic_add_fetch(&stale_wakeups, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int eventfd_write(int fd, eventfd_t value)
{
	stall_second_wakeup();
	if (!loop_still_there())
		return 0;
	return write(fd, &value, sizeof(value)) == sizeof(value) ? 0 : -1;
}

void ev_async_send(struct ev_loop *loop, ev_async *w)
{
	static void (*real)(struct ev_loop *, ev_async *);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "ev_async_send");
	stall_second_wakeup();
	if (loop_still_there())
		real(loop, w);
}

struct pair {
	fl_fiber *a, *b;
};

static void *pusher(void *arg)
{
	struct pair *p = arg;
	fl_schedule(p->a, (void *)1);
	fl_schedule(p->b, (void *)2);
	return NULL;
}

static void *parked(void *arg)
{
	(void)arg;
	return fl_suspend();
}

static void *race_main(void *arg)
{
	struct pair *p = arg;
	fl_fiber *a = fl_spin(parked, NULL, NULL), *b = fl_spin(parked, NULL, NULL);
	fl_fiber_ref(a);
	fl_fiber_ref(b);
	fl_snooze(); /* both park */
	p->a = a;
	p->b = b;
	wakeups_seen = 0;
	cr_assert_eq(pthread_create(&pusher_thread, NULL, pusher, p), 0);
	/* keep the loop off its poll until both entries are queued */
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	void *ra, *rb;
	fl_await(a, &ra);
	fl_await(b, &rb);
	cr_assert_eq(ra, (void *)1);
	cr_assert_eq(rb, (void *)2);
	fl_fiber_unref(a);
	fl_fiber_unref(b);
	return NULL;
}

Test(xthread_exit, wakeup_does_not_outlive_the_loop, .timeout = 20)
{
	fl_test_shm_setup();
	for (const char *const *be = fl_test_backends(); *be; be++) {
		struct fl_options o = { .backend = *be };
		struct pair p = { 0 };
		int fds = fl_test_fd_count();
		run_returned = stale_wakeups = 0;
		cr_assert_eq(fl_run(race_main, &p, &o, NULL), 0);
		__atomic_store_n(&run_returned, 1, __ATOMIC_SEQ_CST);
		pthread_join(pusher_thread, NULL);
		cr_assert_eq(stale_wakeups, 0, "%s: a wakeup ran after fl_run returned", *be);
		fl_test_assert_no_leaks();
		cr_assert_eq(fl_test_fd_count(), fds, "fd leak on %s", *be);
	}
	fl_test_shm_done();
}
