/*
 * sampler_sched.c — pooled runtimes as schedulers (probe_rt.h): a Go,
 * tokio or ForkJoinPool process's pool of threads is one worker row, its
 * capacity the pool's threads' worth (GOMAXPROCS, tokio's workers).
 *
 * A JVM's row holds its ForkJoinPool workers (virtual threads' carriers,
 * parallel streams): its event loops keep their own rows; a row with no
 * pool thread takes no sample and is not shown.
 *
 * The row is a worker of its own (tid 0, no /proc file of its own); its
 * pool's threads are workers too, sampled at every tick like loops but
 * not shown (member). After the tick's reads each row counts its members'
 * states: busy running, busy blocked (a tokio worker stuck in a syscall),
 * or parked; capped at its capacity, that many samples go into its series
 * (series_add_pooled), so idle is the parked share of the capacity and
 * every figure, interval and verdict of a loop holds for it.
 *
 * Once a second a row lists its process's threads again, names new ones
 * (their comm) and re-reads Go's GOMAXPROCS. At the 4 Hz schedstat pass
 * its threads' CPU and CPU-wait times, over its capacity, become its own
 * (cpu_pct: CPU time / (capacity x wall), the runtime's own busy share
 * on a machine where it never waits for a CPU). Runs on the sampling thread
 * with s->lock held, but for sampler_runtime_of, called by discovery
 * before it takes the lock.
 */
#include "collect/sampler_sched.h"
#include "collect/sampler_int.h"
#include "probe_proc.h"
#include "probe_stat.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A row's thread count and capacity are looked at again this often; its
 * thread list when the count changed, else every SCHED_RELIST_EVERY looks. */
#define SCHED_REFRESH_NS   NS
#define SCHED_RELIST_EVERY 10

const struct probe_rt_proc *sampler_runtime_of(struct sampler *s, pid_t pid, uint64_t start_time, const char *comm)
{
	size_t i;
	if (idmap_get(&s->rt_by_pid, (uint64_t)pid, &i) && s->rts[i].start_time == start_time)
		return &s->rts[i].rt;
	if (!idmap_get(&s->rt_by_pid, (uint64_t)pid, &i)) {
		if (s->nrts == s->rtcap) {
			size_t cap = s->rtcap ? s->rtcap * 2 : 16;
			struct sampler_rt *n = realloc(s->rts, cap * sizeof(*n));
			if (!n)
				return NULL;
			s->rts = n;
			s->rtcap = cap;
		}
		if (idmap_put(&s->rt_by_pid, (uint64_t)pid, s->nrts) < 0)
			return NULL;
		i = s->nrts++;
	}
	s->rts[i].start_time = start_time;
	if (probe_rt_detect(pid, comm, &s->rts[i].rt) < 0)
		memset(&s->rts[i].rt, 0, sizeof(s->rts[i].rt));
	return &s->rts[i].rt;
}

int sampler_rt_is_scheduler(const struct probe_rt_proc *rt)
{
	/* a JVM's row holds its ForkJoinPool workers, once it has any */
	return rt && (rt->rt == PROBE_RT_GO || rt->rt == PROBE_RT_TOKIO || rt->rt == PROBE_RT_JVM);
}

struct sworker *sampler_sched_row(struct sampler *s, pid_t pid, const char *comm, const struct probe_rt_proc *rt)
{
	struct sworker *w = sampler_find_worker(s, pid, 0);
	if (w && !w->gone_ns)
		return w;
	if (w)
		return NULL; /* a row of the pid's last process: a new one once it is dropped */
	if (!(w = sampler_add_worker(s, pid, 0, comm, &s->ignored_threads)))
		return NULL;
	if (!(w->sched = calloc(1, sizeof(*w->sched)))) {
		sampler_mark_gone(w, 1);
		return NULL;
	}
	w->sched->rt = *rt;
	w->runtime = rt->rt;
	return w;
}

void sampler_name_thread(struct sworker *w)
{
	struct probe_stat st;
	if (w->tid > 0 && probe_stat_read(w->pid, w->tid, &st) == 0)
		snprintf(w->thread_name, sizeof(w->thread_name), "%.15s", st.comm);
}

static struct sched_member *member_of(struct sched_row *r, pid_t tid)
{
	for (int i = 0; i < r->nm; i++)
		if (r->m[i].tid == tid)
			return &r->m[i];
	return NULL;
}

/* Marks tid's member live; 1 when it is one. */
static int m_tid_live(struct sched_row *r, pid_t tid)
{
	struct sched_member *m = member_of(r, tid);
	if (m)
		m->live = 1;
	return m != NULL;
}

/* The process's threads listed again: new pool threads become members
 * (workers, sampled but not shown), those gone are no longer counted. */
static void refresh_row(struct sampler *s, struct sworker *row, uint64_t now)
{
	struct sched_row *r = row->sched;
	r->next_refresh = now + SCHED_REFRESH_NS;
	if (r->rt.rt == PROBE_RT_GO && probe_rt_go_capacity(row->pid, &r->rt) == -ESRCH) {
		sampler_mark_gone(row, now);
		return;
	}
	/* a thread list that kept its length is listed again only now and
	 * then: its threads that are not the pool's would be named again */
	int nt = probe_proc_nthreads(row->pid);
	if (nt == r->nthreads && ++r->unchanged % SCHED_RELIST_EVERY)
		return;
	r->nthreads = nt;
	int n = probe_discover_threads(row->pid, s->tids, SAMPLER_MAX_THREADS);
	if (n == -ESRCH) {
		sampler_mark_gone(row, now);
		return;
	}
	if (n < 0)
		return;
	for (int i = 0; i < r->nm; i++)
		r->m[i].live = 0;
	for (int t = 0; t < n && t < SAMPLER_MAX_THREADS; t++)
		m_tid_live(r, s->tids[t]);
	/* the exited go: tokio's blocking pool comes and goes with its load */
	int j = 0;
	for (int i = 0; i < r->nm; i++)
		if (r->m[i].live)
			r->m[j++] = r->m[i];
	r->nm = j;
	for (int t = 0; t < n && t < SAMPLER_MAX_THREADS; t++) {
		pid_t tid = s->tids[t];
		if (member_of(r, tid))
			continue;
		if (tid == s->self_tid || r->nm == SCHED_MEMBERS)
			continue;
		struct probe_stat st;
		if (probe_stat_read(row->pid, tid, &st) < 0 || !probe_rt_member(r->rt.rt, st.comm))
			continue;
		struct sworker *w = sampler_find_worker(s, row->pid, tid);
		if (!w && !(w = sampler_add_worker(s, row->pid, tid, row->name, &s->ignored_threads)))
			continue;
		w->member = 1;
		snprintf(w->thread_name, sizeof(w->thread_name), "%.15s", st.comm);
		struct sched_member *m = &r->m[r->nm++];
		memset(m, 0, sizeof(*m));
		m->tid = tid;
		m->live = 1;
		snprintf(m->comm, sizeof(m->comm), "%.15s", st.comm);
	}
}

/* tokio: a member is a worker unless its waits say blocking pool. */
static int is_worker(const struct sched_row *r, const struct sched_member *m)
{
	return r->rt.rt != PROBE_RT_TOKIO || m->evidence >= 0;
}

static void sample_row(struct sampler *s, struct sworker *row, uint64_t now)
{
	struct sched_row *r = row->sched;
	uint32_t run = 0, blk = 0, seen = 0;
	int workers = 0;
	struct probe_verdict blocked = { .cls = PROBE_BLOCKED, .nr = -1, .fd = -1 };
	for (int i = 0; i < r->nm; i++) {
		struct sched_member *m = &r->m[i];
		struct sworker *w = m->live ? sampler_find_worker(s, row->pid, m->tid) : NULL;
		if (!w || w->gone_ns) {
			m->live = 0;
			continue;
		}
		if (w->tick_mode == TICK_SKIP)
			continue;
		const struct probe_sc_sample *smp = &w->last_smp;
		if (r->rt.rt == PROBE_RT_TOKIO) {
			int ev = probe_rt_tokio_evidence(smp);
			/* bounded, so that a worker that once ran blocking work recovers */
			if ((ev > 0 && m->evidence < 1000) || (ev < 0 && m->evidence > -1000))
				m->evidence += ev;
		}
		if (!is_worker(r, m))
			continue;
		workers++;
		enum probe_rt_state st = probe_rt_state_of(r->rt.rt, smp);
		if (st == PROBE_RT_UNSEEN)
			continue;
		seen++;
		m->n++;
		if (st == PROBE_RT_RUNNING) {
			run++;
			m->busy++;
		} else if (st == PROBE_RT_BLOCKED) {
			blk++;
			m->busy++;
			blocked.nr = w->last_v.nr;
			blocked.fd = w->last_v.fd;
		}
	}
	int cap = r->rt.rt == PROBE_RT_GO && r->rt.capacity > 0 ? r->rt.capacity : workers;
	r->capacity = cap;
	if (!seen || cap <= 0)
		return;
	/* more threads out of their park than the capacity (a Go M in its
	 * entersyscall, sysmon): the capacity is all busy, no more */
	if (run > (uint32_t)cap)
		run = (uint32_t)cap;
	if (blk > (uint32_t)cap - run)
		blk = (uint32_t)cap - run;
	series_add_pooled(&row->series, now, (uint32_t)cap, run, blk, &blocked);
	s->total_samples++;
}

void sampler_sample_scheds(struct sampler *s, uint64_t now)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *row = s->w[i];
		if (!row->sched || row->gone_ns)
			continue;
		if (now >= row->sched->next_refresh)
			refresh_row(s, row, now);
		if (!row->gone_ns)
			sample_row(s, row, now);
	}
}

void sampler_sched_cpu(struct sampler *s, uint64_t now)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *row = s->w[i];
		struct sched_row *r = row->sched;
		if (!r || row->gone_ns || r->capacity <= 0)
			continue;
		for (int k = 0; k < r->nm; k++) {
			struct sched_member *m = &r->m[k];
			const struct sworker *w = m->live ? sampler_find_worker(s, row->pid, m->tid) : NULL;
			if (!w || !w->judged_ns)
				continue;
			const struct probe_schedstat *st = &w->judged;
			/* deltas over the capacity, so that a thread that exits takes
			 * nothing back and a new GOMAXPROCS scales what follows */
			if (m->ss_seen && st->run_ns >= m->last_run && st->wait_ns >= m->last_wait) {
				r->run_ns += (st->run_ns - m->last_run) / (uint64_t)r->capacity;
				r->wait_ns += (st->wait_ns - m->last_wait) / (uint64_t)r->capacity;
			}
			m->last_run = st->run_ns;
			m->last_wait = st->wait_ns;
			m->ss_seen = 1;
		}
		series_add_sched(&row->series, now, r->run_ns, r->wait_ns);
	}
}

void sampler_sched_copy(struct snap_worker *d, const struct sworker *w)
{
	const struct sched_row *r = w->sched;
	memcpy(d->thread_name, w->thread_name, sizeof(d->thread_name));
	d->nmembers = 0;
	d->capacity = 1;
	d->cap_from = PROBE_RT_CAP_NONE;
	d->scheduler = r != NULL;
	d->runtime = r ? (int)r->rt.rt : w->runtime;
	if (!r)
		return;
	d->capacity = r->capacity;
	d->cap_from = r->rt.from;
	for (int i = 0; i < r->nm && d->nmembers < SNAP_MEMBERS; i++) {
		const struct sched_member *m = &r->m[i];
		if (!m->live)
			continue;
		struct snap_member *o = &d->members[d->nmembers++];
		o->tid = m->tid;
		memcpy(o->name, m->comm, sizeof(o->name));
		o->worker = is_worker(r, m);
		o->n = m->n;
		o->busy = m->busy;
	}
}

void sampler_free_rts(struct sampler *s)
{
	free(s->rts);
	s->rts = NULL;
	s->nrts = s->rtcap = 0;
	idmap_done(&s->rt_by_pid);
}
