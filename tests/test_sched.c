/* Scheduler: FIFO order, priority unshift, anti-starvation (and its period), cross-thread wakeup, idle hook, idle period and trace hooks, runqueue growth. */
#include "support/fl_test.h"

#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct order {
	char log[64];
	int  n;
};

struct who {
	struct order *o;
	char          name;
	int           rounds;
};

static void *logger(void *arg)
{
	struct who *w = arg;
	for (int i = 0; i < w->rounds; i++) {
		w->o->log[w->o->n++] = w->name;
		fl_snooze();
	}
	return NULL;
}

static void *fifo_main(void *arg)
{
	(void)arg;
	struct order o = { .n = 0 };
	struct who w[3] = { { &o, 'a', 3 }, { &o, 'b', 3 }, { &o, 'c', 3 } };
	fl_fiber *f[3];
	for (int i = 0; i < 3; i++)
		fl_fiber_ref(f[i] = fl_spin(logger, &w[i], NULL));
	for (int i = 0; i < 3; i++) {
		fl_await(f[i], NULL);
		fl_fiber_unref(f[i]);
	}
	o.log[o.n] = '\0';
	cr_assert_str_eq(o.log, "abcabcabc");
	return NULL;
}

Test(sched, fifo_order, .timeout = 10)
{
	fl_test_run(fifo_main, NULL);
}

static void *parked(void *arg)
{
	struct who *w = arg;
	fl_suspend();
	w->o->log[w->o->n++] = w->name;
	return NULL;
}

static void *unshift_main(void *arg)
{
	(void)arg;
	struct order o = { .n = 0 };
	struct who a = { &o, 'a', 1 }, b = { &o, 'b', 1 }, p = { &o, 'p', 1 };
	fl_fiber *fp = fl_spin(parked, &p, NULL);
	fl_snooze(); /* fp parks */
	fl_spin(logger, &a, NULL);
	fl_spin(logger, &b, NULL);
	fl_schedule_first(fp, NULL); /* jumps the queue */
	fl_schedule_first(fp, NULL); /* already runnable: no second entry */
	fl_snooze();
	fl_snooze();
	fl_snooze();
	o.log[o.n] = '\0';
	cr_assert_str_eq(o.log, "pab");
	return NULL;
}

Test(sched, unshift_has_priority, .timeout = 10)
{
	fl_test_run(unshift_main, NULL);
}

/* ---- anti-starvation ----------------------------------------------------- */

struct starve {
	int  p[2];
	int  done;
	long snoozes;
};

static void *snoozer(void *arg)
{
	struct starve *s = arg;
	while (!s->done) {
		s->snoozes++;
		fl_snooze();
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct starve *s = arg;
	char c;
	cr_assert_eq(fl_read(s->p[0], &c, 1), 1);
	s->done = 1;
	return NULL;
}

static void *writer(void *arg)
{
	struct starve *s = arg;
	cr_assert_eq(fl_write(s->p[1], "x", 1), 1);
	return NULL;
}

static void *starve_main(void *arg)
{
	(void)arg;
	struct starve s = { .done = 0 };
	cr_assert_eq(pipe(s.p), 0);
	uint64_t blocking0 = fl_stats_slot()->polls_blocking;
	fl_fiber *fs = fl_spin(snoozer, &s, NULL);
	fl_spin(reader, &s, NULL);
	fl_spin(writer, &s, NULL);
	fl_await(fs, NULL);
	/* the runqueue never emptied: only non-blocking polls brought the
	 * completions in */
	cr_assert_eq(fl_stats_slot()->polls_blocking, blocking0);
	cr_assert(s.snoozes > 0);
	close(s.p[0]);
	close(s.p[1]);
	return NULL;
}

Test(sched, snoozing_fiber_does_not_starve_io, .timeout = 10)
{
	fl_test_run(starve_main, NULL);
}

/* The rule's period, exactly: with an op pending and two fibers snoozing
 * (the next fiber is never the current one), a non-blocking poll every 64
 * switches. A switch that polls emits POLL_ENTER before its RUN. */
#define PERIODS 8

struct period {
	long runs;              /* RUN events since the last non-blocking poll */
	int  polls;
	long seen[PERIODS];
	int  n;
};

static void on_period_trace(enum fl_trace_event ev, fl_fiber *f, intptr_t arg, void *data)
{
	struct period *p = data;
	(void)f;
	if (ev == FL_TRACE_RUN) {
		p->runs++;
	} else if (ev == FL_TRACE_POLL_ENTER && !arg) {
		if (p->polls++ > 0 && p->n < PERIODS)
			p->seen[p->n++] = p->runs;
		p->runs = 0;
	}
}

static void *period_snoozer(void *arg)
{
	struct period *p = arg;
	/* bounded: a rule that never polls must fail, not hang */
	for (int i = 0; i < 100000 && p->n < PERIODS; i++)
		fl_snooze();
	return NULL;
}

static void *period_reader(void *arg)
{
	int *fds = arg;
	char c;
	cr_assert_eq(fl_read(fds[0], &c, 1), 1);
	return NULL;
}

static void *period_main(void *arg)
{
	(void)arg;
	struct period p = { 0 };
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	fl_spin(period_reader, fds, NULL);
	fl_snooze(); /* the reader parks: one op pending from here on */
	fl_set_trace_hook(on_period_trace, &p);
	fl_fiber *a = fl_spin(period_snoozer, &p, NULL), *b = fl_spin(period_snoozer, &p, NULL);
	fl_fiber_ref(a);
	fl_fiber_ref(b);
	fl_await(a, NULL);
	fl_await(b, NULL);
	fl_set_trace_hook(NULL, NULL);
	fl_fiber_unref(a);
	fl_fiber_unref(b);
	cr_assert_eq(p.n, PERIODS, "%d periods seen", p.n);
	for (int i = 0; i < PERIODS; i++)
		cr_assert_eq(p.seen[i], 64, "period %d: a poll after %ld switches", i, p.seen[i]);
	cr_assert_eq(write(fds[1], "x", 1), 1);
	fl_sleep(0.01); /* the reader completes and finishes */
	close(fds[0]);
	close(fds[1]);
	return NULL;
}

Test(sched, anti_starvation_polls_every_64_switches, .timeout = 10)
{
	fl_test_run(period_main, NULL);
}

/* ---- cross-thread schedule ----------------------------------------------- */

struct xthread {
	fl_fiber *target;
	void     *value;
};

static void *other_thread(void *arg)
{
	struct xthread *x = arg;
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	fl_schedule(x->target, x->value);
	return NULL;
}

static void *xthread_main(void *arg)
{
	(void)arg;
	struct xthread x = { fl_current(), (void *)0x1234 };
	pthread_t t;
	uint64_t blocking0 = fl_stats_slot()->polls_blocking;
	cr_assert_eq(pthread_create(&t, NULL, other_thread, &x), 0);
	void *v = fl_suspend(); /* nothing else to do: the loop blocks in poll */
	cr_assert_eq(v, (void *)0x1234);
	cr_assert(fl_stats_slot()->polls_blocking > blocking0, "loop never blocked");
	pthread_join(t, NULL);
	return NULL;
}

Test(sched, cross_thread_schedule_wakes_blocked_loop, .timeout = 10)
{
	fl_test_run(xthread_main, NULL);
}

/* ---- hooks and growth ---------------------------------------------------- */

static int idle_calls;
static int trace_counts[8];

static void on_idle(void *data)
{
	(void)data;
	idle_calls++;
}

static void on_trace(enum fl_trace_event ev, fl_fiber *f, intptr_t arg, void *data)
{
	(void)f, (void)arg, (void)data;
	trace_counts[ev]++;
}

static void *hooks_main(void *arg)
{
	(void)arg;
	idle_calls = 0;
	memset(trace_counts, 0, sizeof(trace_counts));
	fl_set_idle_hook(on_idle, NULL);
	fl_set_trace_hook(on_trace, NULL);
	fl_sleep(0.01);
	fl_snooze();
	fl_set_trace_hook(NULL, NULL);
	fl_set_idle_hook(NULL, NULL);
	cr_assert_eq(idle_calls, 1, "idle ran %d times", idle_calls);
	cr_assert_eq(trace_counts[FL_TRACE_SWITCHPOINT], 2);
	cr_assert_eq(trace_counts[FL_TRACE_RUN], 2);
	cr_assert_eq(trace_counts[FL_TRACE_SCHEDULE], 2);
	cr_assert_eq(trace_counts[FL_TRACE_POLL_ENTER], 1);
	cr_assert_eq(trace_counts[FL_TRACE_POLL_LEAVE], 1);
	return NULL;
}

Test(sched, idle_and_trace_hooks, .timeout = 10)
{
	fl_test_run(hooks_main, NULL);
}

static void *nop(void *arg)
{
	return arg;
}

static void *observer(void *arg)
{
	(void)arg;
	/* runqueue_len is published at each switch: 1000 nops + main */
	cr_assert_eq(fl_stats_slot()->runqueue_len, 1001);
	return NULL;
}

static void *grow_main(void *arg)
{
	(void)arg;
	fl_spin(observer, NULL, NULL);
	for (int i = 0; i < 1000; i++)
		fl_spin(nop, NULL, NULL);
	struct loopstat_shm_slot *s = fl_stats_slot();
	cr_assert(s->runqueue_cap >= 1001);
	cr_assert(s->runqueue_hwm >= 1001);
	fl_snooze();
	cr_assert_eq(s->runqueue_len, 0);
	cr_assert(s->runqueue_hwm >= 1000);
	return NULL;
}

Test(sched, runqueue_grows_and_tracks_high_water, .timeout = 10)
{
	fl_test_run(grow_main, NULL);
}

/* ---- a fiber that finishes while queued ---------------------------------- */

static int self_scheduled_ran;

static void *schedule_self_and_return(void *arg)
{
	(void)arg;
	self_scheduled_ran++;
	/* queued while RUNNING: the entry must go when the fiber finishes */
	fl_schedule(fl_current(), (void *)1);
	return NULL;
}

static void *finish_queued_main(void *arg)
{
	(void)arg;
	self_scheduled_ran = 0;
	for (int i = 0; i < 4; i++)
		fl_spin(schedule_self_and_return, NULL, NULL);
	for (int i = 0; i < 8; i++)
		fl_snooze();
	cr_assert_eq(self_scheduled_ran, 4, "ran %d times", self_scheduled_ran);
	cr_assert_eq(fl_stats_slot()->runqueue_len, 0);
	return NULL;
}

Test(sched, fiber_finishing_while_queued_leaves_no_entry, .timeout = 10)
{
	fl_test_run(finish_queued_main, NULL);
}

/* ---- cross-thread schedules run in the order they were made -------------- */

#define XORDER 200

struct xorder {
	fl_fiber *f[XORDER];
	int       log[XORDER];
	int       n;
};

static void *xorder_waiter(void *arg)
{
	struct xorder *x = arg;
	intptr_t i = (intptr_t)fl_suspend();
	x->log[x->n++] = (int)i;
	return NULL;
}

static void *xorder_pusher(void *arg)
{
	struct xorder *x = arg;
	for (intptr_t i = 0; i < XORDER; i++)
		fl_schedule(x->f[i], (void *)i);
	return NULL;
}

static void *xorder_main(void *arg)
{
	(void)arg;
	static struct xorder x;
	memset(&x, 0, sizeof(x));
	for (int i = 0; i < XORDER; i++)
		fl_fiber_ref(x.f[i] = fl_spin(xorder_waiter, &x, NULL));
	fl_snooze(); /* all park */
	pthread_t t;
	cr_assert_eq(pthread_create(&t, NULL, xorder_pusher, &x), 0);
	pthread_join(t, NULL); /* all queued before the loop drains them */
	for (int i = 0; i < XORDER; i++) {
		fl_await(x.f[i], NULL);
		fl_fiber_unref(x.f[i]);
	}
	cr_assert_eq(x.n, XORDER);
	for (int i = 0; i < XORDER; i++)
		cr_assert_eq(x.log[i], i, "run %d was schedule %d", i, x.log[i]);
	return NULL;
}

Test(sched, cross_thread_schedules_run_in_order, .timeout = 10)
{
	fl_test_run(xorder_main, NULL);
}

/* ---- the periodic idle task (Polyphony's idle_gc_period) ----------------- */

#define PERIOD_NS  50000000ull /* 50 ms */
#define MAX_RUNS   64

struct idle_period {
	int      runs;
	uint64_t at_ns[MAX_RUNS]; /* CLOCK_MONOTONIC of each run */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_period(void *data)
{
	struct idle_period *p = data;
	if (p->runs < MAX_RUNS)
		p->at_ns[p->runs] = mono_ns();
	p->runs++;
}

static void *idle_period_main(void *arg)
{
	(void)arg;
	struct idle_period p = { 0 };
	uint64_t t0 = mono_ns();
	cr_assert_eq(fl_set_idle_period(PERIOD_NS / 1e9, on_period, &p), 0);
	/* the loop goes idle 30 times, about every 10 ms */
	for (int i = 0; i < 30; i++)
		cr_assert_eq(fl_sleep(0.01), 0);
	uint64_t wall = mono_ns() - t0;
	cr_assert_eq(fl_set_idle_period(0, NULL, NULL), 0);
	/* >= 300 ms of idling: a run every ~50-60 ms, so 5 or 6 when the
	 * sleeps take 10 ms; longer sleeps (a loaded machine) mean more wall
	 * time and so more runs, never fewer */
	cr_assert(p.runs >= 4, "%d runs in %.1f ms", p.runs, wall / 1e6);
	/* at most once per period, the first a period after the call */
	cr_assert(p.runs <= (int)(wall / PERIOD_NS) && p.runs <= MAX_RUNS, "%d runs in %.1f ms", p.runs,
		  wall / 1e6);
	cr_assert(p.at_ns[0] - t0 >= PERIOD_NS, "first run after %.1f ms", (p.at_ns[0] - t0) / 1e6);
	for (int i = 1; i < p.runs; i++)
		cr_assert(p.at_ns[i] - p.at_ns[i - 1] >= PERIOD_NS, "runs %d and %d %.1f ms apart", i - 1, i,
			  (p.at_ns[i] - p.at_ns[i - 1]) / 1e6);
	return NULL;
}

Test(sched, idle_period_runs_at_most_once_per_period, .timeout = 20)
{
	fl_test_run(idle_period_main, NULL);
}

struct busy {
	uint64_t until_ns;
	long     snoozes;
};

static void *busy_snoozer(void *arg)
{
	struct busy *b = arg;
	while (mono_ns() < b->until_ns) {
		b->snoozes++;
		fl_snooze();
	}
	return NULL;
}

static void *idle_period_busy_main(void *arg)
{
	(void)arg;
	struct idle_period p = { 0 };
	struct busy b = { mono_ns() + 6 * 20000000ull, 0 };
	cr_assert_eq(fl_set_idle_period(0.02, on_period, &p), 0);
	/* six periods with two fibers always runnable: never idle */
	fl_fiber *f[2];
	for (int i = 0; i < 2; i++)
		fl_fiber_ref(f[i] = fl_spin(busy_snoozer, &b, NULL));
	for (int i = 0; i < 2; i++) {
		fl_await(f[i], NULL);
		fl_fiber_unref(f[i]);
	}
	cr_assert(b.snoozes > 100, "only %ld snoozes", b.snoozes);
	cr_assert_eq(p.runs, 0, "ran %d times with a runqueue that never emptied", p.runs);
	/* the first idle after that runs it: its period is long past */
	cr_assert_eq(fl_sleep(0.001), 0);
	cr_assert_eq(p.runs, 1);
	cr_assert_eq(fl_set_idle_period(0, NULL, NULL), 0);
	return NULL;
}

Test(sched, idle_period_not_while_runqueue_busy, .timeout = 20)
{
	fl_test_run(idle_period_busy_main, NULL);
}

static void *idle_period_off_main(void *arg)
{
	(void)arg;
	struct idle_period p = { 0 };
	cr_assert_eq(fl_set_idle_period(0.001, on_period, &p), 0);
	cr_assert_eq(fl_set_idle_period(0, on_period, &p), 0, "period 0 disables");
	for (int i = 0; i < 5; i++)
		cr_assert_eq(fl_sleep(0.005), 0);
	cr_assert_eq(fl_set_idle_period(0.001, NULL, &p), 0, "no function disables");
	for (int i = 0; i < 5; i++)
		cr_assert_eq(fl_sleep(0.005), 0);
	cr_assert_eq(p.runs, 0, "disabled, ran %d times", p.runs);
	/* control: the same sleeps with a period set do run it */
	cr_assert_eq(fl_set_idle_period(0.001, on_period, &p), 0);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(fl_sleep(0.005), 0);
	cr_assert(p.runs >= 4, "enabled, ran %d times", p.runs);
	cr_assert_eq(fl_set_idle_period(-1, on_period, &p), -EINVAL);
	cr_assert_eq(fl_set_idle_period(0.0 / 0.0, on_period, &p), -EINVAL);
	cr_assert_eq(fl_set_idle_period(0, NULL, NULL), 0);
	return NULL;
}

Test(sched, idle_period_zero_disables, .timeout = 20)
{
	fl_test_run(idle_period_off_main, NULL);
	cr_assert_eq(fl_set_idle_period(0.01, on_period, NULL), -EPERM, "outside a loop");
}
