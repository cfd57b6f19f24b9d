/* Sampler on real processes: workers appear when seen polling, blocked reads are attributed, exited workers drop, renamed processes are shown by their new name. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/prctl.h>

#include "model/feed.h"
#include "model/model_build.h"

#include "fiberloop_stats.h"
#include "collect/sampler.h"
#include "support/fl_test.h"
#include "support/children.h"
#include "support/support.h"

static struct targets t;
static struct sampler *s;

static void start(pid_t a, pid_t b, int all_threads)
{
	targets_init(&t);
	t.pids[t.npids++] = a;
	if (b > 0)
		t.pids[t.npids++] = b;
	struct sampler_opts o = { .rate_hz = 500, .targets = &t, .all_threads = all_threads };
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
}

static const struct worker_view *find(const struct model *m, pid_t pid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->workers[i].pid == pid)
			return &m->workers[i];
	return NULL;
}

/* Polls the model until pred holds or the deadline passes; returns it. */
static int wait_for(struct model *m, int (*pred)(const struct model *, pid_t), pid_t pid, int ms)
{
	long long end = ts_now_ms() + ms;
	for (;;) {
		cr_assert_eq(model_of_sampler(s, 5, m), 0);
		if (pred(m, pid))
			return 1;
		if (ts_now_ms() > end)
			return 0;
		model_done(m);
		usleep(50000);
	}
}

static int present(const struct model *m, pid_t pid) { return find(m, pid) != NULL; }
static int absent(const struct model *m, pid_t pid) { return find(m, pid) == NULL; }
static int marked_gone(const struct model *m, pid_t pid)
{
	const struct worker_view *w = find(m, pid);
	return w && w->gone;
}

Test(sampler, blocked_read_is_attributed_to_read_on_its_fd, .timeout = 30)
{
	int fd, wr;
	pid_t child = tc_spawn_blocked_read(&fd, &wr);
	start(child, 0, 1); /* all threads: a reader never polls, so it is no worker by default */
	struct model m;
	cr_assert(wait_for(&m, present, child, 5000), "blocked child never listed with all_threads");
	model_done(&m);
	usleep(600000);
	cr_assert_eq(model_of_sampler(s, 5, &m), 0);
	const struct worker_view *w = find(&m, child);
	cr_assert(w);
	cr_assert_gt(w->samples, 100);
	cr_assert_geq(w->blocked_pct, 99.0, "blocked %.1f%%", w->blocked_pct);
	cr_assert_eq(w->nblocked_top, 1);
	cr_assert_str_eq(w->blocked_top[0].syscall, "read");
	cr_assert_eq(w->blocked_top[0].fd, fd);
	cr_assert(strncmp(w->blocked_top[0].target, "pipe:[", 6) == 0, "target '%s'", w->blocked_top[0].target);
	cr_assert_lt(w->cpu_pct, 5.0, "cpu %f", w->cpu_pct);
	cr_assert(!w->instrumented);
	cr_assert_str_eq(w->backend, "none");
	model_done(&m);

	sampler_set_all_threads(s, 0);
	cr_assert_eq(model_of_sampler(s, 5, &m), 0);
	cr_assert_null(find(&m, child), "a thread never seen polling is not a worker");
	model_done(&m);
	sampler_delete(s);
	tc_kill(child);
	close(wr);
}

Test(sampler, worker_appears_then_is_marked_gone_then_dropped, .timeout = 30)
{
	const char *args[] = { "--idle", "0.8", "--seconds", "20", "--plain", NULL };
	pid_t child = tc_spawn_example("duty_cycle", args, NULL);
	start(child, 0, 0);
	struct model m;
	cr_assert(wait_for(&m, present, child, 5000), "polling child never became a worker");
	const struct worker_view *w = find(&m, child);
	cr_assert(!w->gone);
	cr_assert_eq(w->tid, child);
	model_done(&m);

	tc_kill(child);
	cr_assert(wait_for(&m, marked_gone, child, 3000), "exit not noticed");
	model_done(&m);
	long long gone_at = ts_now_ms();
	cr_assert(wait_for(&m, absent, child, 8000), "gone worker never dropped");
	model_done(&m);
	long long kept = ts_now_ms() - gone_at;
	cr_assert_geq(kept, (long long)(SAMPLER_GONE_KEEP_S * 1000) - 1000, "dropped after only %lld ms", kept);
	sampler_delete(s);
}

Test(sampler, rate_and_pause_controls, .timeout = 30)
{
	const char *args[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	pid_t child = tc_spawn_example("duty_cycle", args, NULL);
	start(child, 0, 0);
	sampler_set_rate(s, 100);
	cr_assert_float_eq(sampler_rate(s), 100.0, 1e-9);
	sampler_set_rate(s, -5);
	cr_assert_float_eq(sampler_rate(s), 100.0, 1e-9, "invalid rates are ignored");
	struct model m;
	cr_assert(wait_for(&m, present, child, 5000));
	model_done(&m);
	sampler_set_paused(s, 1);
	usleep(200000);
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	uint64_t before = m.total_samples;
	model_done(&m);
	usleep(500000);
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	cr_assert_eq(m.total_samples, before, "paused sampler took samples");
	model_done(&m);
	sampler_set_paused(s, 0);
	usleep(500000);
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	/* 100 Hz for 0.5 s: about 50, never the 250 of the old rate */
	cr_assert(m.total_samples - before >= 25 && m.total_samples - before <= 100, "took %lu",
		  (unsigned long)(m.total_samples - before));
	model_done(&m);
	sampler_delete(s);
	tc_kill(child);
}

/* A child with n threads parked in epoll_wait: n workers for the sampler. */
static void *park_thread(void *arg)
{
	struct epoll_event ev;
	for (;;)
		epoll_wait((int)(intptr_t)arg, &ev, 1, -1);
	return NULL;
}

static pid_t spawn_threads(int n)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int ep = epoll_create1(0);
		for (int i = 1; i < n; i++) {
			pthread_t th;
			pthread_create(&th, NULL, park_thread, (void *)(intptr_t)ep);
		}
		write(ready[1], "x", 1);
		park_thread((void *)(intptr_t)ep);
	}
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	close(ready[1]);
	return pid;
}

#define SLOW_BUILDS 400   /* one slow view's request: this many model builds */

static volatile int hammer_stop;
static long hammer_requests;
static double hammer_slow_ms, hammer_snap_ms;

/* A slow view: each request takes a dashboard's snapshot, then spends
 * SLOW_BUILDS model builds on it, back to back, as fast as it can. */
static void *hammer(void *arg)
{
	(void)arg;
	struct snapshot snap = { 0 };
	while (!hammer_stop) {
		struct model m;
		long long t0 = ts_now_ms();
		cr_assert_eq(sampler_snapshot(s, 5, 1, &snap), 0);
		long long t1 = ts_now_ms();
		for (int i = 0; i < SLOW_BUILDS; i++) {
			cr_assert_eq(model_build(&snap, 5, &m), 0);
			model_done(&m);
		}
		hammer_snap_ms += (double)(t1 - t0);
		hammer_slow_ms += (double)(ts_now_ms() - t1);
		hammer_requests++;
	}
	snapshot_done(&snap);
	return NULL;
}

Test(sampler, heavy_models_are_built_outside_the_ticks_lock, .timeout = 60)
{
	pid_t child = spawn_threads(256);
	start(child, 0, 0);
	struct model m;
	long long end = ts_now_ms() + 10000;
	do {
		cr_assert_eq(model_of_sampler(s, 5, &m), 0);
		size_t n = m.n;
		model_done(&m);
		if (n == 256)
			break;
		usleep(100000);
	} while (ts_now_ms() < end);
	cr_assert_lt(ts_now_ms(), end, "256 threads never all seen polling");
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	double lag_before = m.tick_lag_max_ms;
	model_done(&m);

	pthread_t th;
	hammer_stop = 0;
	cr_assert_eq(pthread_create(&th, NULL, hammer, NULL), 0);
	usleep(3000000);
	hammer_stop = 1;
	pthread_join(th, NULL);
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	double slow_ms = hammer_slow_ms / (double)hammer_requests, snap_ms = hammer_snap_ms / (double)hammer_requests;
	cr_log_info("%ld slow requests of %.1f ms each, their snapshots %.2f ms under the lock; tick lag max %.2f ms "
		    "(%.2f before)", hammer_requests, slow_ms, snap_ms, m.tick_lag_max_ms, lag_before);
	/* A request that computed under the lock would hold it slow_ms at a
	 * time, and some tick would wait most of that; the snapshot holds it for
	 * a copy only. */
	double bound = fmax(2 * lag_before, 20) + 4 * snap_ms;
	if (slow_ms < 2 * bound)
		cr_skip_test("this machine is too noisy for the bound: a slow request took %.1f ms, the bound is %.1f ms",
			     slow_ms, bound);
	cr_assert_lt(m.tick_lag_max_ms, bound, "ticks waited %.2f ms: a %.1f ms request held the lock", m.tick_lag_max_ms,
		     slow_ms);
	model_done(&m);
	sampler_delete(s);
	tc_kill(child);
}

struct seen {
	pid_t want;
	int events, in_read;
	uint64_t last_t, pc;
	int fd_ok;
};

static void on_sample(void *arg, const struct sampler_event *ev)
{
	struct seen *e = arg;
	if (ev->pid != e->want)
		return;
	e->events++;
	cr_assert_geq(ev->t_ns, e->last_t, "events come in time order");
	e->last_t = ev->t_ns;
	if (ev->verdict->cls == PROBE_BLOCKED && ev->sample->state == PROBE_SC_IN_SYSCALL) {
		e->in_read++;
		e->pc = ev->sample->pc;
		e->fd_ok = ev->verdict->fd >= 0 && ev->target && strncmp(ev->target, "pipe:[", 6) == 0;
	}
	cr_assert_null(ev->fiber_tag, "an uninstrumented worker has no fiber");
}

Test(sampler, every_sample_reaches_the_hook_with_its_syscall_context, .timeout = 30)
{
	int fd, wr;
	pid_t child = tc_spawn_blocked_read(&fd, &wr);
	static struct seen e;
	e = (struct seen){ .want = child };
	targets_init(&t);
	t.pids[t.npids++] = child;
	struct sampler_opts o = { .rate_hz = 500, .targets = &t, .all_threads = 1, .on_sample = on_sample, .on_sample_arg = &e };
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	usleep(1500000);
	sampler_stop(s);
	struct model m;
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	const struct worker_view *w = find(&m, child);
	cr_assert(w);
	cr_assert_eq((uint64_t)e.events, w->samples, "one event per sample: %d events, %llu samples", e.events,
		     (unsigned long long)w->samples);
	cr_assert_gt(e.in_read, 100);
	cr_assert_neq(e.pc, 0, "the syscall's pc reaches the hook (the profiler unwinds from it)");
	cr_assert(e.fd_ok);
	cr_assert_eq(w->nkeys, 1, "one call site");
	cr_assert_eq(w->keys[0].pc, e.pc);
	cr_assert(strncmp(w->keys[0].target, "pipe:[", 6) == 0, "the key's fd is resolved: '%s'", w->keys[0].target);
	model_done(&m);
	sampler_delete(s);
	tc_kill(child);
	close(wr);
}

Test(sampler, the_worker_cap_turns_threads_away_and_counts_them, .timeout = 30)
{
	pid_t child = spawn_threads(64);
	targets_init(&t);
	t.pids[t.npids++] = child;
	struct sampler_opts o = { .rate_hz = 200, .targets = &t, .max_workers = 10 };
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	struct model m;
	long long end = ts_now_ms() + 10000;
	for (;;) {
		cr_assert_eq(model_of_sampler(s, 5, &m), 0);
		if (m.n == 10 || ts_now_ms() > end)
			break;
		model_done(&m);
		usleep(100000);
	}
	cr_assert_eq(m.n, 10, "%zu workers sampled", m.n);
	cr_assert_eq(m.ignored, 54, "the other 54 threads are counted: %u", m.ignored);
	cr_assert_eq(m.max_workers, 10);
	model_done(&m);
	sampler_delete(s);
	tc_kill(child);
}

/* ---- the running fiber, read at the tick's own instant -------------------- */

static struct loopstat_shm_slot *hot_slot;
static int hot_pipe[2] = { -1, -1 };
static pthread_mutex_t hot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hot_cv = PTHREAD_COND_INITIALIZER;

/* An instrumented thread of this process, parked in a read. */
static void *hot_worker(void *arg)
{
	(void)arg;
	struct loopstat_shm_slot *sl = fl_stats_slot_acquire("hotw", LOOPSTAT_BACKEND_LIBEV, -1);
	fl_stat_set(&sl->current_tag, fl_stats_tag_index(sl, "first"));
	fl_stats_tag_index(sl, "second");
	pthread_mutex_lock(&hot_mu);
	hot_slot = sl;
	pthread_cond_signal(&hot_cv);
	pthread_mutex_unlock(&hot_mu);
	char c;
	while (read(hot_pipe[0], &c, 1) < 0)
		;
	fl_stats_slot_release(sl);
	return NULL;
}

struct fiber_seen {
	pid_t tid;
	char tag[LOOPSTAT_TAG_LEN];
	int events;
};

static void on_fiber(void *arg, const struct sampler_event *ev)
{
	struct fiber_seen *f = arg;
	if (ev->tid != f->tid)
		return;
	f->events++;
	snprintf(f->tag, sizeof(f->tag), "%s", ev->fiber_tag ? ev->fiber_tag : "(null)");
}

Test(sampler, a_sample_names_the_fiber_running_at_its_tick, .timeout = 30, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	cr_assert_eq(pipe(hot_pipe), 0);
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, hot_worker, NULL), 0);
	pthread_mutex_lock(&hot_mu);
	while (!hot_slot)
		pthread_cond_wait(&hot_cv, &hot_mu);
	pthread_mutex_unlock(&hot_mu);
	static struct fiber_seen f;
	f = (struct fiber_seen){ .tid = hot_slot->tid };
	usleep(20000); /* into its read */
	targets_init(&t);
	t.pids[t.npids++] = getpid();
	struct sampler_opts o = { .rate_hz = 100, .targets = &t, .on_sample = on_fiber, .on_sample_arg = &f };
	cr_assert_eq(sampler_new(&o, &s), 0);
	sampler_step(s); /* discovery and the table's reading: "first" */
	cr_assert_eq(f.events, 1);
	cr_assert_str_eq(f.tag, "first");
	/* a switch after the table's 10 Hz reading: the next tick, well before
	 * the next reading, names the fiber it finds running */
	fl_stat_set(&hot_slot->current_tag, 2);
	sampler_step(s);
	cr_assert_eq(f.events, 2);
	cr_assert_str_eq(f.tag, "second");
	fl_stat_set(&hot_slot->current_tag, 0);
	sampler_step(s);
	cr_assert_str_eq(f.tag, "", "no fiber: the loop itself");
	sampler_delete(s);
	targets_done(&t);
	cr_assert_eq(write(hot_pipe[1], "x", 1), 1);
	pthread_join(th, NULL);
	close(hot_pipe[0]);
	close(hot_pipe[1]);
}

/* A process renamed after the sampler found it (as one found just before
 * its execve is) is shown by its new name at the next discovery. */
Test(sampler, a_renamed_process_is_shown_by_its_new_name, .timeout = 30)
{
	int go[2];
	cr_assert_eq(pipe(go), 0);
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "before");
		int ep = epoll_create1(0);
		struct epoll_event ev = { .events = EPOLLIN };
		epoll_ctl(ep, EPOLL_CTL_ADD, go[0], &ev);
		epoll_wait(ep, &ev, 1, -1);
		prctl(PR_SET_NAME, "after");
		for (;;)
			epoll_wait(ep, &ev, 1, -1);   /* go stays readable: a busy poll loop */
	}
	start(child, 0, 0);
	struct model m;
	int seen = 0;
	for (long long end = ts_now_ms() + 5000; !seen && ts_now_ms() < end; usleep(50000)) {
		cr_assert_eq(model_of_sampler(s, 1, &m), 0);
		const struct worker_view *w = find(&m, child);
		seen = w && strcmp(w->name, "before") == 0;
		model_done(&m);
	}
	cr_assert(seen, "listed as 'before'");
	cr_assert_eq(write(go[1], "x", 1), 1);
	seen = 0;
	for (long long end = ts_now_ms() + 5000; !seen && ts_now_ms() < end; usleep(50000)) {
		cr_assert_eq(model_of_sampler(s, 1, &m), 0);
		const struct worker_view *w = find(&m, child);
		seen = w && strcmp(w->name, "after") == 0;
		model_done(&m);
	}
	cr_assert(seen, "renamed to 'after' within a discovery sweep or two");
	sampler_delete(s);
	tc_kill(child);
	close(go[0]);
	close(go[1]);
}
