/* The poll_since_ns shortcut: the same shares with and without it on a worker alternating its poll and a blocking read, a slot that lies about its poll is caught by the cross-check, and schedstat answers the cross-checks of a thread that has not run. */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "model/feed.h"
#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "collect/sampler.h"
#include "collect/sampler_int.h"
#include "collect/targets.h"
#include "support/support.h"

static char *dir;
static volatile int stop, lie;
static pid_t worker_tid;

static void setup(void)
{
	dir = ts_tmpdir("shortcut");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
	stop = lie = 0;
}

static void teardown(void)
{
	fl_stats_close();
	ts_rmtree_free(dir);
}

TestSuite(sampler_shortcut, .init = setup, .fini = teardown, .timeout = 60);

/* An instrumented loop: 6 ms in epoll_wait with poll_since_ns set, as the
 * runtime sets it, then 4 ms blocked in read(2) on a timerfd. While `lie`
 * is set it leaves poll_since_ns standing through the read. */
static void *worker(void *arg)
{
	(void)arg;
	worker_tid = gettid();
	int ep = epoll_create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("shortcut", LOOPSTAT_BACKEND_LIBEV, ep);
	cr_assert(s);
	struct itimerspec four_ms = { .it_value = { 0, 4000000 } };
	while (!stop) {
		struct epoll_event ev;
		uint64_t since = ts_mono_ns();
		fl_stat_set(&s->poll_since_ns, since);
		epoll_wait(ep, &ev, 1, 6);
		if (!lie)
			fl_stat_set(&s->poll_since_ns, 0);
		fl_stat_set(&s->polls, s->polls + 1);
		fl_stat_set(&s->switches, s->switches + 1);
		uint64_t n;
		timerfd_settime(tfd, 0, &four_ms, NULL);
		if (read(tfd, &n, sizeof(n)) < 0)
			break;
		if (lie)   /* a slot whose poll never ends */
			fl_stat_set(&s->poll_since_ns, since);
	}
	fl_stats_slot_release(s);
	close(ep);
	close(tfd);
	return NULL;
}

static struct sampler *start(int no_shortcuts)
{
	struct sampler_opts o = { .rate_hz = 2000, .no_shortcuts = no_shortcuts };
	struct sampler *s;
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	return s;
}

static const struct worker_view *find(const struct model *m)
{
	return ts_find_tid(m, worker_tid);
}

Test(sampler_shortcut, the_same_shares_with_and_without_the_shortcut)
{
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, worker, NULL), 0);
	usleep(200000);
	struct sampler *with = start(0), *without = start(1);
	usleep(5000000);
	struct model a, b;
	sampler_stop(with);
	sampler_stop(without);
	cr_assert_eq(model_of_sampler(with, 4, &a), 0);
	cr_assert_eq(model_of_sampler(without, 4, &b), 0);
	const struct worker_view *wa = find(&a), *wb = find(&b);
	cr_assert(wa && wb, "the worker was listed by both");
	cr_log_info("with shortcut: idle %.2f blocked %.2f (%llu samples, %llu without a read); without: idle %.2f blocked %.2f (%llu)",
		    wa->idle_pct, wa->blocked_pct, (unsigned long long)wa->samples, (unsigned long long)wa->shortcut_samples,
		    wb->idle_pct, wb->blocked_pct, (unsigned long long)wb->samples);
	cr_assert_gt(wa->shortcut_samples, wa->samples / 4, "the shortcut served many idle samples");
	cr_assert_eq(wb->shortcut_samples, 0);
	cr_assert_float_eq(wa->idle_pct, wb->idle_pct, 2.0, "idle %.2f vs %.2f", wa->idle_pct, wb->idle_pct);
	cr_assert_float_eq(wa->blocked_pct, wb->blocked_pct, 2.0, "blocked %.2f vs %.2f", wa->blocked_pct, wb->blocked_pct);
	cr_assert_gt(wb->blocked_pct, 20, "the read is blocked time: %.2f", wb->blocked_pct);
	cr_assert_eq(wa->self_report_disagreements, 0, "an honest slot is never contradicted");
	model_done(&a);
	model_done(&b);
	stop = 1;
	pthread_join(th, NULL);
	sampler_delete(with);
	sampler_delete(without);
}

Test(sampler_shortcut, a_slot_that_lies_about_its_poll_is_caught)
{
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, worker, NULL), 0);
	usleep(200000);
	struct sampler *s = start(0);
	usleep(1000000);
	lie = 1;
	usleep(3000000);
	struct model m;
	cr_assert_eq(model_of_sampler(s, 2, &m), 0);
	const struct worker_view *w = find(&m);
	cr_assert(w);
	cr_log_info("lying slot: %llu disagreements, idle %.2f blocked %.2f", (unsigned long long)w->self_report_disagreements,
		    w->idle_pct, w->blocked_pct);
	cr_assert_gt(w->self_report_disagreements, 0, "the cross-check found the thread out of its poll");
	/* caught often enough, the worker is read at every tick: the last 2 s
	 * show its read as the blocked time it is */
	cr_assert_gt(w->blocked_pct, 30, "blocked %.2f", w->blocked_pct);
	model_done(&m);
	stop = 1;
	pthread_join(th, NULL);
	sampler_delete(s);
}

static uint64_t thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An instrumented loop parked poll_ms in its poll, then spin_ms on a CPU. */
struct shape {
	int poll_ms, spin_ms;
};

static void *shaped(void *arg)
{
	const struct shape *sh = arg;
	worker_tid = gettid();
	int ep = epoll_create1(0);
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("shaped", LOOPSTAT_BACKEND_LIBEV, ep);
	cr_assert(s);
	while (!stop) {
		struct epoll_event ev;
		fl_stat_set(&s->poll_since_ns, ts_mono_ns());
		epoll_wait(ep, &ev, 1, sh->poll_ms);
		fl_stat_set(&s->poll_since_ns, 0);
		fl_stat_set(&s->polls, s->polls + 1);
		for (uint64_t end = thread_cpu() + (uint64_t)sh->spin_ms * 1000000ull; thread_cpu() < end && !stop;)
			;
	}
	fl_stats_slot_release(s);
	close(ep);
	return NULL;
}

Test(sampler_shortcut, schedstat_answers_the_cross_checks_of_a_thread_that_has_not_run)
{
	pthread_t th;
	static const struct shape parked = { .poll_ms = 250 }; /* woken 4 times a second */
	cr_assert_eq(pthread_create(&th, NULL, shaped, (void *)&parked), 0);
	usleep(200000);
	struct sampler_opts o = { .rate_hz = 1000, .always_check_schedstat = 1 };
	struct sampler *s;
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	usleep(3000000);
	struct model m;
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	const struct worker_view *w = find(&m);
	cr_assert(w);
	cr_log_info("parked: %llu samples, %llu from the slot, %llu cross-checks answered by schedstat, idle %.2f",
		    (unsigned long long)w->samples, (unsigned long long)w->shortcut_samples,
		    (unsigned long long)w->unchanged_samples, w->idle_pct);
	cr_assert_gt(w->shortcut_samples, w->samples / 2);
	/* about one in SAMPLER_CROSS_CHECK of the rest; each /proc-confirmed poll restarts the chain */
	cr_assert_gt(w->unchanged_samples, w->shortcut_samples / (4 * SAMPLER_CROSS_CHECK),
		     "cross-checks of an unmoved thread need no read");
	cr_assert_float_eq(w->idle_pct, 100.0, 1.0, "idle %.2f", w->idle_pct);
	cr_assert_eq(w->self_report_disagreements, 0);
	model_done(&m);
	stop = 1;
	pthread_join(th, NULL);
	sampler_delete(s);
}

static uint64_t sched_reused(struct sampler *s)
{
	struct sworker *w = sampler_find_worker(s, getpid(), worker_tid);
	cr_assert(w);
	return w->sched_reused;
}

/* The 4 Hz schedstat reading of a loop still in the poll /proc confirmed
 * before it stands for the next: its busy spells are all counted. */
Test(sampler_shortcut, a_parked_loop_s_cpu_time_is_not_read_again_and_its_spells_are_counted)
{
	pthread_t th;
	static const struct shape spells = { .poll_ms = 900, .spin_ms = 150 };
	cr_assert_eq(pthread_create(&th, NULL, shaped, (void *)&spells), 0);
	usleep(200000);
	struct sampler_opts o = { .rate_hz = 200 };
	struct sampler *with, *without;
	cr_assert_eq(sampler_new(&o, &with), 0);
	o.no_shortcuts = 1;
	cr_assert_eq(sampler_new(&o, &without), 0);
	cr_assert_eq(sampler_start(with), 0);
	cr_assert_eq(sampler_start(without), 0);
	usleep(3400000);
	sampler_stop(with);
	sampler_stop(without);
	struct model a, b;
	cr_assert_eq(model_of_sampler(with, 3, &a), 0);
	cr_assert_eq(model_of_sampler(without, 3, &b), 0);
	const struct worker_view *wa = find(&a), *wb = find(&b);
	cr_assert(wa && wb);
	uint64_t reused = sched_reused(with);
	cr_log_info("cpu %.2f%% with %llu readings standing, %.2f%% reading every time", wa->cpu_pct,
		    (unsigned long long)reused, wb->cpu_pct);
	cr_assert_gt(reused, 3, "a parked loop's readings stand");
	cr_assert_eq(sched_reused(without), 0);
	cr_assert_float_eq(wa->cpu_pct, wb->cpu_pct, 4.0, "cpu %.2f vs %.2f", wa->cpu_pct, wb->cpu_pct);
	cr_assert_gt(wa->cpu_pct, 7, "the busy spells are counted: %.2f", wa->cpu_pct);
	model_done(&a);
	model_done(&b);
	stop = 1;
	pthread_join(th, NULL);
	sampler_delete(with);
	sampler_delete(without);
}

/* An instrumented loop parked in one poll until stopped (parked_stop). */
static int parked_stop = -1;

static void *parked_for_good(void *arg)
{
	(void)arg;
	worker_tid = gettid();
	int ep = epoll_create1(0);
	struct epoll_event in = { .events = EPOLLIN };
	cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, parked_stop, &in), 0);
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("parked", LOOPSTAT_BACKEND_LIBEV, ep);
	cr_assert(s);
	struct epoll_event ev;
	fl_stat_set(&s->poll_since_ns, ts_mono_ns());
	epoll_wait(ep, &ev, 1, 20000);
	fl_stat_set(&s->poll_since_ns, 0);
	fl_stats_slot_release(s);
	close(ep);
	return NULL;
}

/* Readings that stand still judge whether the schedstat check pays, so a
 * parked loop's cross-checks are answered by it where it costs less. */
Test(sampler_shortcut, standing_readings_still_open_the_schedstat_check)
{
	pthread_t th;
	parked_stop = eventfd(0, EFD_CLOEXEC);
	cr_assert_geq(parked_stop, 0);
	cr_assert_eq(pthread_create(&th, NULL, parked_for_good, NULL), 0);
	usleep(50000);
	struct sampler_opts o = { .rate_hz = 1000 };
	struct sampler *s;
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	usleep(2500000);
	sampler_stop(s);
	struct model m;
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	const struct worker_view *w = find(&m);
	cr_assert(w);
	uint64_t check_ns, read_ns;
	sampler_read_costs(s, &check_ns, &read_ns);
	struct sworker *sw = sampler_find_worker(s, getpid(), worker_tid);
	cr_assert(sw);
	cr_log_info("parked: %llu samples, %llu from the slot, %llu cross-checks by schedstat, %llu readings standing; "
		    "costs %llu / %llu ns", (unsigned long long)w->samples, (unsigned long long)w->shortcut_samples,
		    (unsigned long long)w->unchanged_samples, (unsigned long long)sw->sched_reused,
		    (unsigned long long)check_ns, (unsigned long long)read_ns);
	cr_assert_gt(sw->sched_reused, 3);
	cr_assert_gt(w->shortcut_samples, w->samples / 2);
	/* an idle thread's check pays when it costs less than the read it saves */
	if ((double)read_ns > 1.5 * (double)check_ns)
		cr_assert_gt(w->unchanged_samples, w->shortcut_samples / (4 * SAMPLER_CROSS_CHECK),
			     "the check pays here, and answers most cross-checks");
	else if (read_ns < check_ns)
		cr_assert_eq(w->unchanged_samples, 0, "the check does not pay here");
	model_done(&m);
	uint64_t one = 1;
	cr_assert_eq(write(parked_stop, &one, sizeof(one)), (ssize_t)sizeof(one));
	pthread_join(th, NULL);
	close(parked_stop);
	sampler_delete(s);
}

/* An uninstrumented loop: 6 ms in epoll_wait on a set with an eventfd in
 * it, then 4 ms blocked in read(2) on a timerfd. */
static void *plain_worker(void *arg)
{
	(void)arg;
	worker_tid = gettid();
	int ep = epoll_create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, 0), efd = eventfd(0, EFD_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	cr_assert_eq(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev), 0);
	struct itimerspec four_ms = { .it_value = { 0, 4000000 } };
	while (!stop) {
		uint64_t n;
		epoll_wait(ep, &ev, 1, 6);
		timerfd_settime(tfd, 0, &four_ms, NULL);
		if (read(tfd, &n, sizeof(n)) < 0)
			break;
	}
	close(ep);
	close(tfd);
	close(efd);
	return NULL;
}

static struct sampler *start_bpf(const struct targets *t, int no_shortcuts)
{
	struct sampler_opts o = { .rate_hz = 2000, .no_shortcuts = no_shortcuts, .targets = t,
				  .source = SAMPLER_SOURCE_BPF };
	struct sampler *s;
	int err = sampler_new(&o, &s);
	if (err < 0)
		cr_skip_test("the bpf source cannot load here: %s", sampler_source_why());
	cr_assert_eq(sampler_start(s), 0);
	return s;
}

/* Under the bpf source the kernel says which threads wait in their loop's
 * poll: an uninstrumented loop's idle ticks are counted without a read, as
 * an instrumented one's slot lets them be, to the same shares. */
Test(sampler_shortcut, the_kernel_s_poll_answers_for_a_plain_loop_under_bpf)
{
	struct targets t;
	char self[16], msg[128];
	targets_init(&t);
	snprintf(self, sizeof(self), "%d", (int)getpid());
	cr_assert_eq(targets_add_pids(&t, self, msg, sizeof(msg)), 0, "%s", msg);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, plain_worker, NULL), 0);
	usleep(200000);
	struct sampler *with = start_bpf(&t, 0), *without = start_bpf(&t, 1);
	usleep(3000000);
	sampler_stop(with);
	sampler_stop(without);
	stop = 1;
	pthread_join(th, NULL);
	struct model a, b;
	cr_assert_eq(model_of_sampler(with, 0, &a), 0);
	cr_assert_eq(model_of_sampler(without, 0, &b), 0);
	const struct worker_view *wa = find(&a), *wb = find(&b);
	cr_assert(wa && wb, "the worker was listed by both");
	cr_log_info("bpf with shortcut: idle %.2f blocked %.2f (%llu samples, %llu without a read); without: idle %.2f "
		    "blocked %.2f (%llu)", wa->idle_pct, wa->blocked_pct, (unsigned long long)wa->samples,
		    (unsigned long long)wa->shortcut_samples, wb->idle_pct, wb->blocked_pct,
		    (unsigned long long)wb->samples);
	cr_assert_gt(wa->shortcut_samples, wa->samples / 4, "the kernel's word served many idle samples");
	cr_assert_eq(wb->shortcut_samples, 0);
	cr_assert_float_eq(wa->idle_pct, wb->idle_pct, 2.0, "idle %.2f vs %.2f", wa->idle_pct, wb->idle_pct);
	cr_assert_float_eq(wa->blocked_pct, wb->blocked_pct, 2.0, "blocked %.2f vs %.2f", wa->blocked_pct,
			   wb->blocked_pct);
	cr_assert_eq(wa->self_report_disagreements, 0, "the kernel is never contradicted");
	model_done(&a);
	model_done(&b);
	sampler_delete(with);
	sampler_delete(without);
	targets_done(&t);
}
