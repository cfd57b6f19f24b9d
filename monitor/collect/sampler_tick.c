/*
 * sampler_tick.c — the tick: the syscall file of each live worker thread
 * whose stride takes the tick (precision.h: every tick for one whose state
 * changes, a few a second for a loop parked in its poll), read in one
 * batch and classified into its series. Slower duties ride on the same
 * ticks: shm counters at SAMPLER_SHM_HZ, schedstat four times and
 * discovery once a second (sampler_step).
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
#include "collect/sampler_cost.h"
#include "collect/sampler_limits.h"
#include "collect/sampler_pools.h"
#include "collect/sampler_roles.h"
#include "collect/sampler_sched.h"
#include "collect/sampler_stall.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
/* Where w's poll is said without a read: its slot (instrumented) or the
 * kernel (the bpf source). */
static uint64_t hot_of(struct sampler *s, struct sworker *w)
{
	return w->instrumented ? sampler_read_hot(s, w) : sampler_bpf_hot(s, w);
}

static void confirm_poll(struct sampler *s, struct sworker *w, const struct probe_verdict *v)
{
	if (!w->instrumented && !w->hot_since && !w->confirmed_since)
		return;
	if (v->cls == PROBE_POLL && w->hot_since) {
		w->confirmed_since = w->hot_since;
		return;
	}
	/* running is the moment between the poll's return and the slot's update:
	 * a lag, not a lie; off the CPU elsewhere is a lie */
	if (w->tick_mode == TICK_CROSS_CHECK && (v->cls == PROBE_BLOCKED || v->cls == PROBE_OTHER) &&
	    hot_of(s, w) == w->confirmed_since)
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
	uint64_t period = (uint64_t)(NS / s->rate_hz);
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
		w->hot_since = hot_of(s, w);
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
					  .weight = w->weight, .tick_gap_ns = w->prec.skipped ? gap : 0,
					  .due_ns = period * (w->prec.skipped + 1) };
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

/* Still in the blocking poll it was in, confirmed by /proc, at its last
 * reading: its schedstat is that reading's (see read_sched_all). A worker
 * this tick skipped counts when its slot shows that poll now, as the
 * shortcut would have. */
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
			w->hot_since = hot_of(s, w);
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
void sampler_sample_tick(struct sampler *s, uint64_t now)
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
	uint64_t now = sampler_elapsed_ns(s);
	if (now >= s->next_discover) {
		/* its size is others' to choose: never at real-time priority */
		int rt = sampler_realtime(s);
		if (rt)
			sampler_cost_demote(s);
		sampler_discover(s, now);
		if (rt)
			sampler_cost_restore(s);
		s->next_discover = now + (uint64_t)(SAMPLER_DISCOVER_S * NS);
		now = sampler_elapsed_ns(s);
	} else if (s->relook_at && now >= s->relook_at) {
		sampler_relook(s, now);
		now = sampler_elapsed_ns(s);
	}
	pthread_mutex_lock(&s->lock);
	sampler_sample_tick(s, now);
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
