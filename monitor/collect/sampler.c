/*
 * sampler.c — the sampling thread: tick timing, the tick itself, the
 * controls views use, and the snapshot the model is computed from.
 *
 * One thread owns all /proc and shm reads. Each tick it samples the
 * syscall file of the live worker threads whose stride takes the tick
 * (precision.h: every tick for one whose state changes, a few a second for
 * a loop parked in its poll); the gap to the next tick is drawn uniformly
 * from [0.5, 1.5] x 1/rate so that sampling does not alias with periodic
 * workloads. Slower duties ride on the same ticks:
 * shm counters at SAMPLER_SHM_HZ, schedstat four times and discovery once
 * a second. Views never read the tables: they take a snapshot (a copy made
 * under the lock) and the model is computed from it outside the lock.
 *
 * Two shortcuts spare a /proc read whose answer is known: an instrumented
 * worker's slot still showing the poll /proc confirmed (confirm_poll), and
 * a thread schedstat shows was not put on a CPU since a sample found it off
 * one (the schedstat check, used for the threads where it pays).
 */
#include "collect/sampler.h"
#include "probe_classify.h"
#include "collect/sampler_int.h"
#include "collect/sampler_bpf.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ns since the sampler started: the series' clock */
static uint64_t elapsed_ns(const struct sampler *s)
{
	return mono_ns() - s->t0;
}

static __thread char source_why[200];

int sampler_new(const struct sampler_opts *o, struct sampler **out)
{
	source_why[0] = '\0';
	struct sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->rate_hz = o->rate_hz > 0 ? o->rate_hz : SAMPLER_DEFAULT_HZ;
	/* a hook keeps its own record of every sample, unweighted */
	s->precision_pts = o->on_sample || o->precision_pts < 0 ? 0 : o->precision_pts > 0 ? o->precision_pts : PREC_DEFAULT_PTS;
	s->prec = prec_conf(s->rate_hz, s->precision_pts);
	s->targets = o->targets;
	s->all_threads = o->all_threads;
	/* named processes are shown whatever their loops are for */
	s->servers_only = o->targets && !o->targets->npids && !o->targets->has_re && !o->targets->all_roles;
	s->no_realtime = o->no_realtime;
	s->no_shortcuts = o->no_shortcuts;
	s->always_check_schedstat = o->always_check_schedstat;
	s->on_sample = o->on_sample;
	s->on_stall = o->on_stall;
	s->max_workers = o->max_workers ? o->max_workers : SAMPLER_MAX_WORKERS;
	s->on_sample_arg = o->on_sample_arg;
	idmap_init(&s->by_tid);
	idmap_init(&s->live_by_pid);
	idmap_init(&s->by_listener);
	idmap_init(&s->by_pid);
	idmap_init(&s->rt_by_pid);
	/* t0 one second back: bucket 0 never starts at a partial instant */
	s->t0 = mono_ns() - NS;
	s->rng = (unsigned)s->t0 ^ (unsigned)getpid();
	s->stall_ns = o->stall_ms < 0 ? 0 : (uint64_t)((o->stall_ms > 0 ? o->stall_ms : SAMPLER_STALL_MS) * 1e6);
	s->fds = probe_fd_cache_new(1024);
	if ((s->targets && targets_host(s->targets) && probe_sweep_new(&s->sweep) < 0) || !s->fds ||
	    sample_batch_new(&s->batch) < 0 || sampler_stall_init(s) < 0) {
		sample_batch_delete(s->batch);
		probe_sweep_delete(s->sweep);
		probe_fd_cache_delete(s->fds);
		free(s);
		return -ENOMEM;
	}
	int err = sampler_bpf_open(s, o->source);
	if (err < 0) {
		snprintf(source_why, sizeof(source_why), "%s", s->source_why);
		sampler_delete(s);
		return err;
	}
	/* the clock starts once the sources are ready: loading the bpf
	 * programs takes tenths of a second that nothing measured */
	s->t0 = mono_ns() - NS;
	*out = s;
	return 0;
}

const char *sampler_source_why(void)
{
	return source_why;
}

static void report_sample(struct sampler *s, const struct sworker *w, uint64_t now, const struct probe_sc_sample *smp,
			  const struct probe_verdict *v)
{
	struct sampler_event ev = {
		.pid = w->pid, .tid = w->tid, .name = w->name, .instrumented = w->instrumented, .t_ns = now,
		.sample = smp, .verdict = v, .fiber_tag = w->instrumented ? w->series.fiber_tag : NULL,
		.run_ns = w->series.sched_last.run_ns, .wait_ns = w->series.sched_last.wait_ns,
		.switches = w->instrumented ? w->series.shm_last.v[PROBE_SHM_switches] : 0,
		.service = w->service, .weight = s->tick_weight ? s->tick_weight : 1,
	};
	for (int i = 0; i < w->ntargets && v->fd >= 0; i++)
		if (w->targets[i].fd == v->fd)
			ev.target = w->targets[i].text;
	s->on_sample(s->on_sample_arg, &ev);
}

/*
 * What /proc said against what the slot says. A poll sample with the slot's
 * poll_since_ns set confirms that poll: later ticks that find the same
 * value count as idle without a read. A cross-check read that finds the
 * thread elsewhere while the slot still claims that poll (re-read, so a
 * poll that just ended is no lie) is a disagreement: counted, shown, and
 * the shortcut is off until /proc confirms a poll again — for good once
 * the worker was caught SAMPLER_DISTRUST_AFTER times.
 */
static void confirm_poll(struct sampler *s, struct sworker *w, const struct probe_verdict *v)
{
	if (!w->instrumented)
		return;
	if (v->cls == PROBE_POLL && w->hot_since) {
		w->confirmed_since = w->hot_since;
		return;
	}
	/* running is the moment between the poll's return and the slot's update:
	 * a lag, not a lie; off the CPU elsewhere is a lie */
	if (w->tick_mode == TICK_CROSS_CHECK && (v->cls == PROBE_BLOCKED || v->cls == PROBE_OTHER) &&
	    sampler_read_hot(s, w) == w->confirmed_since)
		w->series.self_disagreements++;
	w->confirmed_since = 0;
}

/* An eighth of a new per-read cost into an average: both are measured the
 * same way, on this machine, under the load it has now. */
static void cost_note(uint64_t *avg, uint64_t spent_ns, size_t reads)
{
	if (!reads)
		return;
	uint64_t per = spent_ns / reads;
	*avg = *avg ? *avg - *avg / 8 + per / 8 : per;
}

/* One tick in this many is timed: clock reads are syscalls too */
#define SAMPLER_COST_EVERY 16

/* The schedstat check, before the /proc read: 1 when schedstat shows w has
 * not been put on a CPU since the sample last_smp holds, so that sample is
 * what a read would give now. Otherwise the reading it took stands as the
 * reference for the read that follows (taken before it, so that nothing
 * the thread did between the two can hide behind it). */
static int unchanged_since_last(struct sworker *w, uint64_t t)
{
	struct probe_schedstat now;
	w->gate_fresh = 0;
	if (probe_schedstat_sample(&w->ss, &now) < 0)
		return 0;
	w->tick_ss = now;
	w->tick_ss_ok = 1;
	w->check_ss = now;
	w->check_at = t;
	if (w->last_ok && probe_schedstat_unchanged(&w->gate_ref, &now))
		return 1;
	w->gate_ref = now;
	w->gate_fresh = 1;
	return 0;
}

/* The tick's mode for w: the slot's poll shortcut, the schedstat one, or a
 * read (sometimes a cross-check of the slot). */
static int tick_mode(struct sampler *s, struct sworker *w, uint64_t now)
{
	if (s->no_shortcuts)
		return TICK_READ;
	int check = w->gated || s->always_check_schedstat;
	if (w->hot_since && w->hot_since == w->confirmed_since && w->series.self_disagreements < SAMPLER_DISTRUST_AFTER) {
		/* still in the blocking poll /proc confirmed: idle, seen now
		 * without a read, but for a random 1 in CROSS_CHECK */
		if (rand_r(&s->rng) % SAMPLER_CROSS_CHECK)
			return TICK_POLL_SHORTCUT;
		/* a thread not run since /proc confirmed that poll cannot have
		 * left it: schedstat answers the cross-check as exactly as a read */
		return check && unchanged_since_last(w, now) ? TICK_UNCHANGED : TICK_CROSS_CHECK;
	}
	return check && unchanged_since_last(w, now) ? TICK_UNCHANGED : TICK_READ;
}

/* All reads first (one io_uring batch for a large fleet), then the verdicts. */
static void sample_all(struct sampler *s, uint64_t now)
{
	struct probe_syscall **slot = sample_batch_slots(s->batch, s->n);
	if (!slot) {
		for (size_t i = 0; i < s->n; i++) {
			s->w[i]->tick_ss_ok = 0; /* no check read this tick */
			s->w[i]->tick_mode = TICK_SKIP;
		}
		return; /* out of memory: this tick is lost, not the sampler */
	}
	int64_t sec = (int64_t)(now / NS);
	uint64_t gap = s->last_tick_ns && now > s->last_tick_ns ? now - s->last_tick_ns : 0;
	s->last_tick_ns = now;
	size_t nreads = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		slot[i] = w->gone_ns || w->sched ? NULL : &w->sc; /* a row's members are read for it */
		w->tick_mode = TICK_SKIP;
		w->gate_fresh = w->tick_ss_ok = 0;
		if (!slot[i])
			continue;
		/* not this tick: what it would have seen, its next sample counts
		 * for; a pool's thread at every tick, its row counts them all */
		if (!(w->weight = w->member ? 1 : prec_take(&w->prec, &s->prec, sec, &s->rng))) {
			slot[i] = NULL;
			continue;
		}
		/* the fiber running at this tick, not at the last 10 Hz reading */
		w->hot_since = w->instrumented ? sampler_read_hot(s, w) : 0;
		w->tick_mode = tick_mode(s, w, now);
		if (w->tick_mode == TICK_POLL_SHORTCUT || w->tick_mode == TICK_UNCHANGED)
			slot[i] = NULL;
		nreads += slot[i] != NULL;
	}
	/* until a read's cost is known, every tick with reads is timed: with
	 * the shortcuts a small fleet may read once in many ticks */
	int timed = (s->ticks++ % SAMPLER_COST_EVERY == 0 || !s->read_ns) && nreads;
	uint64_t t0 = timed ? thread_cpu_ns() : 0;
	sample_batch_run(s->batch);
	/* the ring's reads run on io-wq threads this clock misses: time pread only */
	if (timed && !sample_batch_used_ring(s->batch))
		cost_note(&s->read_ns, thread_cpu_ns() - t0, nreads);
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->tick_mode == TICK_SKIP)
			continue;
		int reused = w->tick_mode == TICK_POLL_SHORTCUT || w->tick_mode == TICK_UNCHANGED;
		if (w->tick_mode == TICK_POLL_SHORTCUT) {
			w->series.shortcut_samples++;
		} else if (w->tick_mode == TICK_UNCHANGED) {
			w->series.unchanged_samples++;
		} else {
			struct probe_sc_sample smp;
			struct probe_verdict v;
			if (!slot[i])
				continue;
			w->last_ok = 0;
			if (sample_batch_result(s->batch, i, &smp) < 0)
				continue;
			if (probe_loop_classify(&w->loop, &smp, w->instrumented ? w->wait_fd : -1, &v) == -EAGAIN)
				continue; /* the wait ended under the read: not a sample */
			confirm_poll(s, w, &v);
			w->last_smp = smp;
			w->last_v = v;
			/* on a CPU, it can leave without being put back on one: only
			 * a sample off the CPU is reusable */
			w->last_ok = w->gate_fresh && (v.cls == PROBE_POLL || v.cls == PROBE_BLOCKED || v.cls == PROBE_OTHER);
		}
		/* this tick's sample: just read, or the one it reuses */
		const struct probe_sc_sample *smp = &w->last_smp;
		const struct probe_verdict *v = &w->last_v;
		if (v->cls == PROBE_GONE) {
			sampler_mark_gone(w, now);
			continue;
		}
		w->no_access = v->cls == PROBE_NO_ACCESS;
		if (w->no_access && !w->access_text[0])
			probe_access_explain(w->pid, w->access_text, sizeof(w->access_text));
		struct series_ctx ctx = { .sp = smp->sp, .pc = smp->pc, .fiber = w->series.fiber_now,
					  .weight = w->weight, .tick_gap_ns = w->prec.skipped ? gap : 0 };
		series_add_sample(&w->series, now, v, &ctx);
		int cls = series_class_of(v->cls);
		if (cls >= 0)
			prec_note(&w->prec, cls, w->weight);
		/* a new fd is named at once, not a sweep later; a reused sample's
		 * was named when it was read, and sweeps keep it */
		if ((v->cls == PROBE_BLOCKED || v->cls == PROBE_POLL) && v->fd >= 0 && !reused)
			sampler_add_target(s, w, v->fd, v->fd_ino);
		if (v->cls == PROBE_POLL || v->cls == PROBE_BLOCKED) {
			w->basis = v->basis;
			w->loop_fd = v->loop_fd;
		}
		if (v->cls == PROBE_POLL && v->basis == PROBE_BASIS_PLAIN && !reused) {
			/* what a plain poll loop waits on, for its role */
			w->npoll_fds = v->nfds < PROBE_VERDICT_FDS ? v->nfds : PROBE_VERDICT_FDS;
			memcpy(w->poll_fds, v->fds, (size_t)w->npoll_fds * sizeof(v->fds[0]));
		}
		if (s->on_sample)
			report_sample(s, w, now, smp, v);
		s->total_samples++;
	}
}

/* Still in the blocking poll it was in, confirmed by /proc, at its last
 * reading: its schedstat is that reading's (see read_sched_all). A worker
 * this tick skipped counts when its slot shows that poll now, as the
 * shortcut would have. */
/* w's voluntary switches for a schedstat reading st at `at`: read at most
 * once a second, and only for a thread that ran since its last reading (a
 * parked loop costs nothing); 0: not read this time. */
static uint64_t wakes_of(struct sworker *w, const struct probe_schedstat *st, uint64_t at)
{
	uint64_t n;
	if (at < w->wakes_at + NS || st->run_ns == w->judged.run_ns ||
	    probe_schedstat_voluntary(w->pid, w->tid, &n) < 0 || !n)
		return 0;
	w->wakes_at = at;
	return n;
}

static int sched_unchanged(const struct sworker *w)
{
	int in_poll = w->tick_mode == TICK_POLL_SHORTCUT ||
		      (w->tick_mode == TICK_SKIP && w->hot_since && w->hot_since == w->confirmed_since &&
		       w->series.self_disagreements < SAMPLER_DISTRUST_AFTER);
	return in_poll && w->sched_poll && w->sched_poll == w->confirmed_since;
}

/*
 * Four times a second: every thread's CPU time (cpu%), the cost of such a
 * read, and for each thread whether checking schedstat before its /proc
 * read pays, judged on how often it was put on a CPU (and how long it was
 * on one) since the last time, against the two costs measured here.
 */
static void read_sched_all(struct sampler *s, uint64_t now)
{
	/* the reads alone are timed, for the cost they measure; a thread the
	 * check read at this tick is not read again */
	size_t reads = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->tick_mode == TICK_SKIP && !w->gone_ns)   /* where its slot is now, not at its last sample */
			w->hot_since = w->instrumented ? sampler_read_hot(s, w) : 0;
	}
	uint64_t t0 = thread_cpu_ns();
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (!w->gone_ns && !w->tick_ss_ok && !sched_unchanged(w) && !(w->check_at > s->sched_at)) {
			w->tick_ss_ok = probe_schedstat_sample(&w->ss, &w->tick_ss) == 0;
			reads += w->tick_ss_ok;
		}
	}
	uint64_t spent = thread_cpu_ns() - t0;
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		const struct probe_schedstat *st = &w->tick_ss;
		uint64_t at = now;
		if (w->gone_ns)
			continue;
		if (w->tick_ss_ok) {
			/* read after this tick's /proc sample, which confirmed the
			 * poll if confirmed_since is the slot's poll now */
			w->sched_poll = w->hot_since && w->hot_since == w->confirmed_since ? w->hot_since : 0;
		} else if (sched_unchanged(w)) {
			/*
			 * A thread that has not left the poll /proc confirmed before
			 * its last reading has not run since (its slot's only writer
			 * is the thread, blocked in that poll): that reading stands,
			 * as the slot shortcut's idle does, for the series and for
			 * the judgement alike. What it can miss is the poll's own
			 * end, the instant between the wake and the slot's update,
			 * counted at the next reading.
			 */
			st = &w->judged;
			w->sched_reused++;
		} else if (w->check_at > s->sched_at) {
			/* a thread sampled less often than every tick (precision.h)
			 * was checked since the last pass: that reading, at its time */
			st = &w->check_ss;
			at = w->check_at;
			w->sched_poll = 0;
			w->sched_reused++;
		} else {
			continue;
		}
		series_add_sched_wakes(&w->series, at, st->run_ns, st->wait_ns, wakes_of(w, st, at));
		struct probe_schedstat cur = *st;
		w->judged = cur;
		/* a thread sampled less often than this pass may have no sample
		 * since the last judgement: nothing to judge it on, so it stands
		 * and the next one covers both spells */
		if (w->series.samples == w->judged_samples && w->judged_ns)
			continue;
		w->gated = probe_schedstat_check_pays(s->check_ns, s->read_ns, &w->judge_ref, &cur,
						      w->series.samples - w->judged_samples, at - w->judged_ns);
		w->judge_ref = cur;
		w->judged_samples = w->series.samples;
		w->judged_ns = at;
	}
	/* the pass also walks every worker: with most readings reused (thinned
	 * workers' checks), that walk over a few reads would read as their cost */
	if (reads * 4 >= s->n)
		cost_note(&s->check_ns, spent, reads);
	s->sched_at = now;
}

/* A tick's samples, with s->lock held. */
static void sample_tick(struct sampler *s, uint64_t now)
{
	/* a hook attributes each sample to the running fiber: read it in the same tick */
	if (now >= s->next_shm || s->on_sample) {
		sampler_read_segments(s, now);
		s->next_shm = now + (uint64_t)(NS / SAMPLER_SHM_HZ);
	}
	sample_all(s, now);
	sampler_sample_scheds(s, now);
	sampler_check_stalls(s, now);
	sampler_sample_pools(s, now);
	if (now >= s->next_sched) {
		read_sched_all(s, now);
		sampler_sched_cpu(s, now);
		s->next_sched = now + NS / 4;
	}
}

void sampler_step(struct sampler *s)
{
	uint64_t now = elapsed_ns(s);
	if (now >= s->next_discover) {
		/* its size is others' to choose: never at real-time priority */
		int rt = sampler_realtime(s);
		if (rt)
			sampler_cost_demote(s);
		sampler_discover(s, now);
		if (rt)
			sampler_cost_restore(s);
		s->next_discover = now + (uint64_t)(SAMPLER_DISCOVER_S * NS);
		now = elapsed_ns(s);
	}
	pthread_mutex_lock(&s->lock);
	sample_tick(s, now);
	int limits = now >= s->next_limits;
	if (limits) {
		sampler_read_limits(s, now);
		sampler_bpf_read(s, now);
		s->next_limits = now + NS;
	}
	/* after the listening sockets, before the pools (a helper loop gets no
	 * pool figure); a loop just found is shown once its role is judged: soon */
	if (limits || now >= s->next_roles)
		s->next_roles = now + (sampler_judge_roles(s, now) ? NS / 10 : NS);
	if (limits)
		sampler_read_pools(s, now);
	sampler_drop_gone(s, now);
	pthread_mutex_unlock(&s->lock);
}

/* The next tick's time: a jittered gap after the last one's, so that
 * samples never lock step with a periodic load. */
static void schedule_next(struct sampler *s, int paused, double hz)
{
	double jitter = 0.5 + (double)rand_r(&s->rng) / ((double)RAND_MAX + 1.0);
	uint64_t gap = paused ? NS / 20 : (uint64_t)(jitter * 1e9 / hz);
	uint64_t now = mono_ns();
	s->due_ns += gap;
	s->tick_weight = 1;
	if (s->due_ns < now) { /* fell behind: skip, don't burst */
		/* the next tick stands for the ticks skipped too (dithered to an
		 * integer, unbiased): a tick slowed by what it found (stacks to
		 * unwind) would otherwise leave that state under-sampled */
		double lost = (double)(now - s->due_ns) * hz / 1e9;
		double u = (double)rand_r(&s->rng) / ((double)RAND_MAX + 1.0);
		if (!paused && lost < 1e6)
			s->tick_weight += (uint32_t)(lost + u);
		s->due_ns = now + gap;
	}
}

void sampler_tick_if_due(void *arg)
{
	struct sampler *s = arg;
	if (!s->due_ns || mono_ns() < s->due_ns)
		return;
	pthread_mutex_lock(&s->lock);
	int paused = s->paused;
	double hz = s->rate_hz;
	uint64_t c0 = thread_cpu_ns();
	if (!paused)
		sample_tick(s, elapsed_ns(s));
	pthread_mutex_unlock(&s->lock);
	schedule_next(s, paused, hz);
	s->tick_cpu_ns += thread_cpu_ns() - c0;   /* the sweep's gap leaves it out */
}

/* ---- the thread ------------------------------------------------------------- */

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	struct sampler_cost cost;
	pthread_mutex_lock(&s->lock);
	s->self_tid = gettid();
	pthread_mutex_unlock(&s->lock);
	sampler_cost_start(s, &cost);
	s->due_ns = mono_ns();
	for (;;) {
		pthread_mutex_lock(&s->lock);
		int stop = s->stop, paused = s->paused;
		double hz = s->rate_hz;
		uint64_t lag = mono_ns() - s->due_ns;
		if (!paused && lag > s->tick_lag_max_ns)
			s->tick_lag_max_ns = lag;
		pthread_mutex_unlock(&s->lock);
		if (stop)
			break;
		if (!paused)
			sampler_step(s);
		sampler_cost_tick(s, &cost);
		schedule_next(s, paused, hz);
		struct timespec next = { (time_t)(s->due_ns / NS), (long)(s->due_ns % NS) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	s->due_ns = 0;
	return NULL;
}

int sampler_start(struct sampler *s)
{
	int err = pthread_create(&s->thread, NULL, sampler_main, s);
	if (err)
		return -err;
	s->started = 1;
	return 0;
}

void sampler_stop(struct sampler *s)
{
	if (!s->started)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	s->started = 0;
}

void sampler_delete(struct sampler *s)
{
	if (!s)
		return;
	sampler_stop(s);
	sampler_free_workers(s);
	sampler_free_limits(s);
	sampler_stall_free(s);
	sampler_free_pools(s);
	sampler_free_rts(s);
	sampler_bpf_close(s);
	probe_fd_cache_delete(s->fds);
	sample_batch_delete(s->batch);
	probe_sweep_delete(s->sweep);
	free(s->w);
	free(s->seg);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void sampler_set_rate(struct sampler *s, double hz)
{
	if (!(hz >= 1 && hz <= 10000))
		return;
	pthread_mutex_lock(&s->lock);
	s->rate_hz = hz;
	s->prec = prec_conf(hz, s->precision_pts);
	pthread_mutex_unlock(&s->lock);
}

void sampler_read_costs(struct sampler *s, uint64_t *check_ns, uint64_t *read_ns)
{
	pthread_mutex_lock(&s->lock);
	*check_ns = s->check_ns;
	*read_ns = s->read_ns;
	pthread_mutex_unlock(&s->lock);
}

int sampler_realtime(struct sampler *s)
{
	return __atomic_load_n(&s->realtime, __ATOMIC_RELAXED);
}

double sampler_rate(struct sampler *s)
{
	pthread_mutex_lock(&s->lock);
	double hz = s->rate_hz;
	pthread_mutex_unlock(&s->lock);
	return hz;
}

void sampler_set_paused(struct sampler *s, int paused)
{
	pthread_mutex_lock(&s->lock);
	s->paused = paused;
	pthread_mutex_unlock(&s->lock);
}

void sampler_set_all_threads(struct sampler *s, int on)
{
	pthread_mutex_lock(&s->lock);
	s->all_threads = on;
	pthread_mutex_unlock(&s->lock);
}

/* ---- the snapshot --------------------------------------------------------- */

static int shown(const struct sampler *s, const struct sworker *w)
{
	if (w->sched)
		return w->series.samples > 0;
	return w->instrumented || (sampler_is_loop(w) && !w->member) || s->all_threads;
}

/* Shown, and of a role shown: a loop left out is counted by its role. */
static int shown_counted(const struct sampler *s, const struct sworker *w, struct snapshot *snap)
{
	if (!shown(s, w))
		return 0;
	if (s->all_threads || sampler_role_shown(s, w))
		return 1;
	if (!w->gone_ns)
		snap->left_out[w->role]++;
	return 0;
}

static void copy_worker(const struct sampler *s, struct snap_worker *d, const struct sworker *w, int64_t now_sec,
			double window_s, int with_history)
{
	d->pid = w->pid;
	d->tid = w->tid;
	memcpy(d->name, w->name, sizeof(d->name));
	d->role = w->role;
	d->nhelpers = 0;
	const char *cg;
	d->nspenders = sampler_cgroup_spenders(s, w->cg, d->spenders, SNAP_SPENDERS, &cg);
	snprintf(d->cgroup, sizeof(d->cgroup), "%s", cg ? cg : "");
	memcpy(d->service, w->service, sizeof(d->service));
	memcpy(d->tag, w->tag, sizeof(d->tag));
	d->instrumented = w->instrumented;
	d->backend = w->backend;
	d->gone = w->gone_ns != 0;
	d->no_access = w->no_access;
	d->basis = w->basis;
	d->loop_fd = w->loop_fd;
	memcpy(d->access_text, w->access_text, sizeof(d->access_text));
	d->ntargets = w->ntargets;
	memcpy(d->targets, w->targets, (size_t)w->ntargets * sizeof(d->targets[0]));
	sampler_sched_copy(d, w);
	series_copy_window(&d->series, &w->series, now_sec, window_s, with_history);
}

/* Each helper loop left out is named by its process's main worker: the
 * one on the process's main thread if it is shown, else its first shown. */
static void fold_helpers(const struct sampler *s, struct snapshot *snap)
{
	if (!snap->left_out[SNAP_ROLE_HELPER])
		return;
	for (size_t i = 0; i < s->n; i++) {
		const struct sworker *h = s->w[i];
		if (h->role != SNAP_ROLE_HELPER || h->gone_ns || sampler_role_shown(s, h) || s->all_threads)
			continue;
		struct snap_worker *main = NULL;
		for (size_t k = 0; k < snap->n; k++)
			if (snap->w[k].pid == h->pid && (!main || snap->w[k].tid == h->pid))
				main = &snap->w[k];
		if (main && main->nhelpers < SNAP_HELPERS)
			main->helpers[main->nhelpers++] = h->tid;
	}
}

/* A process counts once, however many of its threads were refused. */
static void add_refusal(struct snapshot *snap, const struct sworker *w)
{
	unsigned named = snap->nrefused < SNAP_REFUSED ? snap->nrefused : SNAP_REFUSED;
	for (unsigned i = 0; i < named; i++)
		if (snap->refused[i].pid == w->pid)
			return;
	if (snap->nrefused < SNAP_REFUSED) {
		snap->refused[snap->nrefused].pid = w->pid;
		memcpy(snap->refused[snap->nrefused].text, w->access_text, sizeof(w->access_text));
	}
	snap->nrefused++;
}

/* Workers' room a snapshot keeps beyond the fleet's size. */
#define SNAP_SPARE 16

int sampler_snapshot(struct sampler *s, double window_s, int with_history, struct snapshot *snap)
{
	pthread_mutex_lock(&s->lock);
	/* a snapshot is ~90 KB a worker: one that held a flood's is cut down
	 * when the flood went, not kept at its size for good */
	int shrink = snap->cap > 2 * s->n + SNAP_SPARE;
	if (snap->cap < s->n || shrink) {
		/* grown without the lock would mean a second pass: allocate inside,
		 * it happens only when the fleet grows */
		size_t cap = shrink ? s->n + SNAP_SPARE : s->n;
		struct snap_worker *w = realloc(snap->w, cap * sizeof(*w));
		if (!w) {
			pthread_mutex_unlock(&s->lock);
			return -ENOMEM;
		}
		snap->w = w;
		snap->cap = cap;
	}
	int trim = shrink || s->trim_due > 0;
	s->trim_due -= s->trim_due > 0;
	snap->n = 0;
	snap->nrefused = 0;
	snap->now_ns = elapsed_ns(s);
	snap->naccessible = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->w[i]->no_access)
			add_refusal(snap, s->w[i]);
		else if (!s->w[i]->gone_ns && s->w[i]->series.samples)
			snap->naccessible++;
	}
	memset(snap->left_out, 0, sizeof(snap->left_out));
	snap->servers_only = s->servers_only && !s->all_threads;
	for (size_t i = 0; i < s->n; i++)
		if (shown_counted(s, s->w[i], snap))
			copy_worker(s, &snap->w[snap->n++], s->w[i], (int64_t)(snap->now_ns / NS), window_s, with_history);
	fold_helpers(s, snap);
	snap->rate_hz = s->rate_hz;
	snprintf(snap->source, sizeof(snap->source), "%s", s->source);
	snprintf(snap->source_why, sizeof(snap->source_why), "%s", s->source_why);
	snap->precision_pts = s->precision_pts;
	snap->total_samples = s->total_samples;
	snap->tick_lag_max_ns = s->tick_lag_max_ns;
	snap->ignored = s->ignored_threads + s->ignored_slots + s->swept.ignored_limit;
	snap->swept = s->sweep != NULL;
	snap->sweep = s->swept;
	snap->max_workers = s->max_workers;
	sampler_snapshot_pools(s, snap, window_s);
	pthread_mutex_unlock(&s->lock);
	if (trim)
		malloc_trim(0);   /* what the flood's workers and snapshots held, back to the system */
	return 0;
}

