/* The schedstat shortcut on real threads: the same shares with and without it on a thread alternating its poll and a blocking read, a thread woken out of its poll never reported still in it, and the shortcut taken for an idle thread exactly when the costs measured here say it pays. */
#include <criterion/criterion.h>
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
#include "probe_shm.h"
#include "collect/sampler.h"
#include "collect/targets.h"
#include "support/support.h"

static char *dir;
static volatile int stop;
static pid_t worker_tid;
static int wake_fd;
static volatile uint64_t woken_ns;   /* when it left its poll, CLOCK_MONOTONIC */


static void setup(void)
{
	dir = ts_tmpdir("unchanged");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);   /* no segments: every thread is uninstrumented */
	stop = 0;
	worker_tid = 0;
	woken_ns = 0;
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(sampler_unchanged, .init = setup, .fini = teardown, .timeout = 60);

/* A plain loop: 6 ms in epoll_wait, then 4 ms blocked in read(2) on a timerfd. */
static void *alternating(void *arg)
{
	(void)arg;
	worker_tid = gettid();
	int ep = epoll_create1(0), tfd = timerfd_create(CLOCK_MONOTONIC, 0);
	struct itimerspec four_ms = { .it_value = { 0, 4000000 } };
	while (!stop) {
		struct epoll_event ev;
		epoll_wait(ep, &ev, 1, 6);
		uint64_t n;
		timerfd_settime(tfd, 0, &four_ms, NULL);
		if (read(tfd, &n, sizeof(n)) < 0)
			break;
	}
	close(ep);
	close(tfd);
	return NULL;
}

static struct targets self;   /* this process: its worker thread is uninstrumented */

static struct sampler *start(struct sampler_opts *o)
{
	char pid[16], msg[128];
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	targets_init(&self);
	cr_assert_eq(targets_add_pids(&self, pid, msg, sizeof(msg)), 0, "%s", msg);
	o->targets = &self;
	struct sampler *s;
	cr_assert_eq(sampler_new(o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	return s;
}

static const struct worker_view *find(const struct model *m)
{
	return ts_find_tid(m, worker_tid);
}

static void wait_for_worker(void)
{
	for (int i = 0; i < 200 && !__atomic_load_n(&worker_tid, __ATOMIC_ACQUIRE); i++)
		usleep(5000);
	cr_assert(worker_tid);
}

Test(sampler_unchanged, the_same_shares_with_and_without_the_shortcut)
{
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, alternating, NULL), 0);
	wait_for_worker();
	struct sampler_opts with_o = { .rate_hz = 2000, .always_check_schedstat = 1 };
	struct sampler_opts without_o = { .rate_hz = 2000, .no_shortcuts = 1 };
	struct sampler *with = start(&with_o), *without = start(&without_o);
	usleep(5000000);
	struct model a, b;
	sampler_stop(with);
	sampler_stop(without);
	cr_assert_eq(model_of_sampler(with, 0, &a), 0);   /* the whole run, as the counts of reuse are */
	cr_assert_eq(model_of_sampler(without, 0, &b), 0);
	const struct worker_view *wa = find(&a), *wb = find(&b);
	cr_assert(wa && wb, "the worker was listed by both");
	cr_log_info("with the schedstat check: idle %.2f blocked %.2f (%llu samples, %llu reused); without: idle %.2f "
		    "blocked %.2f (%llu)", wa->idle_pct, wa->blocked_pct, (unsigned long long)wa->samples,
		    (unsigned long long)wa->unchanged_samples, wb->idle_pct, wb->blocked_pct, (unsigned long long)wb->samples);
	cr_assert_gt(wa->unchanged_samples, wa->samples / 4, "many ticks fell inside one wait: %llu of %llu",
		     (unsigned long long)wa->unchanged_samples, (unsigned long long)wa->samples);
	cr_assert_eq(wb->unchanged_samples, 0);
	cr_assert_float_eq(wa->idle_pct, wb->idle_pct, 2.0, "idle %.2f vs %.2f", wa->idle_pct, wb->idle_pct);
	cr_assert_float_eq(wa->blocked_pct, wb->blocked_pct, 2.0, "blocked %.2f vs %.2f", wa->blocked_pct, wb->blocked_pct);
	cr_assert_gt(wb->blocked_pct, 20, "the read is blocked time: %.2f", wb->blocked_pct);
	model_done(&a);
	model_done(&b);
	stop = 1;
	pthread_join(th, NULL);
	sampler_delete(with);
	sampler_delete(without);
}

/* ---- leaving the poll between two ticks ---- */

/* Parked in epoll_wait on an eventfd; once woken, blocked in read(2) on a pipe for good. */
static void *wakes_into_a_read(void *arg)
{
	int *pipefd = arg;
	worker_tid = gettid();
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, wake_fd, &ev);
	epoll_wait(ep, &ev, 1, -1);
	woken_ns = ts_mono_ns();
	char c;
	ssize_t r = read(pipefd[0], &c, 1);
	(void)r;
	close(ep);
	return NULL;
}

/* Samples of the worker, split at 50 ms after it left its poll (by the
 * hook's clock: a tick's reads come just before its hooks). */
struct record {
	pthread_mutex_t mu;
	unsigned polls_before, polls_after, blocked_after;
};

static void on_sample(void *arg, const struct sampler_event *ev)
{
	struct record *r = arg;
	if (ev->tid != worker_tid)
		return;
	uint64_t woke = woken_ns, now = ts_mono_ns();
	pthread_mutex_lock(&r->mu);
	if (!woke)
		r->polls_before += ev->verdict->cls == PROBE_POLL;
	else if (now > woke + 50000000ull) {
		r->polls_after += ev->verdict->cls == PROBE_POLL;
		r->blocked_after += ev->verdict->cls == PROBE_BLOCKED;
	}
	pthread_mutex_unlock(&r->mu);
}

Test(sampler_unchanged, a_thread_woken_out_of_its_poll_is_never_reported_still_in_it)
{
	int pipefd[2];
	cr_assert_eq(pipe(pipefd), 0);
	wake_fd = eventfd(0, 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, wakes_into_a_read, pipefd), 0);
	wait_for_worker();
	struct record r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct sampler_opts o = { .rate_hz = 1000, .always_check_schedstat = 1, .on_sample = on_sample, .on_sample_arg = &r };
	struct sampler *s = start(&o);
	usleep(1500000);   /* parked: the shortcut serves its poll */
	struct model m;
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	const struct worker_view *w = find(&m);
	cr_assert(w);
	uint64_t reused = w->unchanged_samples;
	model_done(&m);
	uint64_t one = 1;
	cr_assert_eq(write(wake_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	usleep(1000000);
	sampler_stop(s);
	cr_log_info("before the wake: %u polls (%llu reused by then); after: %u polls, %u blocked", r.polls_before,
		    (unsigned long long)reused, r.polls_after, r.blocked_after);
	cr_assert_gt(reused, 100, "the parked poll was served by the shortcut");
	cr_assert_gt(r.blocked_after, 200, "its read was sampled");
	cr_assert_eq(r.polls_after, 0, "a woken thread is never reported still in its poll");
	cr_assert_eq(write(pipefd[1], "x", 1), 1);
	pthread_join(th, NULL);
	sampler_delete(s);
	close(pipefd[0]);
	close(pipefd[1]);
	close(wake_fd);
}

/* ---- the measured choice ---- */

/* Parked in epoll_wait until wake_fd is written: never woken before, so
 * it never waits for a CPU either, however loaded the machine. */
static void *parked(void *arg)
{
	(void)arg;
	worker_tid = gettid();
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, wake_fd, &ev);
	epoll_wait(ep, &ev, 1, -1);
	close(ep);
	return NULL;
}

Test(sampler_unchanged, taken_for_an_idle_thread_when_the_measured_costs_say_it_pays)
{
	wake_fd = eventfd(0, 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, parked, NULL), 0);
	wait_for_worker();
	usleep(100000);   /* into its epoll_wait: the whole run is idle */
	/* every tick: thinned, the first second's reads (before the costs are
	 * known) would outweigh the rest, and the rule is what is judged here */
	struct sampler_opts o = { .rate_hz = 500, .precision_pts = -1 };
	struct sampler *s = start(&o);
	usleep(2500000);
	uint64_t check_ns, read_ns;
	sampler_read_costs(s, &check_ns, &read_ns);
	struct model m;
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	const struct worker_view *w = find(&m);
	cr_assert(w);
	cr_log_info("a schedstat read %llu ns, a syscall file %llu ns; %llu of %llu samples reused",
		    (unsigned long long)check_ns, (unsigned long long)read_ns, (unsigned long long)w->unchanged_samples,
		    (unsigned long long)w->samples);
	cr_assert_gt(check_ns, 0, "measured");
	cr_assert_gt(read_ns, 0, "measured");
	/* an idle thread saves a whole read at every tick: the rule, on this machine's costs */
	if ((double)read_ns > 1.25 * (double)check_ns)
		cr_expect_gt(w->unchanged_samples, w->samples / 2, "it pays here, so it was taken");
	else if ((double)read_ns < (double)check_ns)
		cr_expect_eq(w->unchanged_samples, 0, "it does not pay here, so it was not taken");
	cr_expect_float_eq(w->idle_pct, 100.0, 0.5, "parked in its poll: idle %.2f", w->idle_pct);
	model_done(&m);
	sampler_stop(s);
	uint64_t one = 1;
	cr_assert_eq(write(wake_fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	pthread_join(th, NULL);
	close(wake_fd);
	sampler_delete(s);
}
