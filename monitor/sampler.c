/*
 * sampler.c — the sampling thread and its worker table.
 *
 * One thread owns all /proc and shm reads. Each tick it samples the
 * syscall file of every live worker thread once; the gap to the next tick
 * is drawn uniformly from [0.5, 1.5] x 1/rate so that sampling does not
 * alias with periodic workloads. Slower duties ride on the same ticks:
 * shm counters at SAMPLER_SHM_HZ, schedstat and discovery every second.
 */
#include "sampler.h"
#include "acc.h"
#include "probe_classify.h"
#include "probe_discover.h"
#include "probe_fd.h"
#include "probe_schedstat.h"
#include "probe_shm.h"
#include "probe_syscall.h"
#include "sample_batch.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ull
#define MAX_PROCS   4096
#define MAX_THREADS 4096
#define MAX_SLOTS   1024

#define TARGETS_MAX 16

struct fd_target {
	int  fd;
	char text[PROBE_TARGET_LEN];
};

struct sworker {
	pid_t    pid, tid;
	int      instrumented;
	uint32_t backend;
	int      wait_fd;
	uint64_t generation;          /* slot generation, instrumented only */
	char     name[PROBE_COMM_LEN];
	char     tag[LOOPSTAT_TAG_LEN];
	struct probe_syscall sc;
	struct probe_schedstat_file ss;
	uint64_t gone_ns;             /* 0 while alive */
	int      no_access;
	int      seen;                /* mark for discovery sweeps */
	struct fd_target targets[TARGETS_MAX]; /* what recently blocking fds are */
	int      ntargets;
	struct acc acc;
};

struct segment {
	pid_t pid;
	struct probe_shm *shm;
	char  name[PROBE_COMM_LEN];
	int   seen;
};

struct sampler {
	pthread_mutex_t lock;
	pthread_t thread;
	int      started;
	int      stop;
	int      realtime;                /* the thread runs SCHED_FIFO now */
	int      paused;
	int      all_threads;
	int      no_realtime;
	double   rate_hz;
	const struct targets *targets;   /* borrowed */
	struct probe_fd_cache *fds;      /* blocker fd targets, forgotten each discovery sweep */
	struct sample_batch *batch;      /* owned: how each tick's syscall files are read */

	struct sworker **w;              /* owned; pointers so accumulators never move */
	size_t   n, cap;
	struct segment *seg;
	size_t   nseg, segcap;

	uint64_t t0;                     /* CLOCK_MONOTONIC at creation */
	uint64_t next_discover, next_shm, next_sched;
	uint64_t total_samples;
	unsigned rng;

	/* scratch for discovery and shm reads, too big for the stack */
	struct probe_proc_info procs[MAX_PROCS];
	pid_t    tids[MAX_THREADS];
	struct probe_shm_worker slots[MAX_SLOTS];
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

/* ns since the sampler started: the accumulators' clock */
static uint64_t elapsed_ns(const struct sampler *s)
{
	return mono_ns() - s->t0;
}

int sampler_new(const struct sampler_opts *o, struct sampler **out)
{
	struct sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->rate_hz = o->rate_hz > 0 ? o->rate_hz : SAMPLER_DEFAULT_HZ;
	s->targets = o->targets;
	s->all_threads = o->all_threads;
	s->no_realtime = o->no_realtime;
	/* t0 one second back: bucket 0 never starts at a partial instant */
	s->t0 = mono_ns() - NS;
	s->rng = (unsigned)s->t0 ^ (unsigned)getpid();
	s->fds = probe_fd_cache_new(1024);
	if (!s->fds || sample_batch_new(&s->batch) < 0) {
		probe_fd_cache_delete(s->fds);
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

static struct sworker *find_worker(struct sampler *s, pid_t pid, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->w[i]->pid == pid && s->w[i]->tid == tid)
			return s->w[i];
	return NULL;
}

static struct sworker *add_worker(struct sampler *s, pid_t pid, pid_t tid, const char *name)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct sworker **nw = realloc(s->w, cap * sizeof(*nw));
		if (!nw)
			return NULL;
		s->w = nw;
		s->cap = cap;
	}
	struct sworker *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->pid = pid;
	w->tid = tid;
	w->wait_fd = -1;
	snprintf(w->name, sizeof(w->name), "%s", name);
	acc_init(&w->acc);
	probe_syscall_open(&w->sc, pid, tid);
	probe_schedstat_open(&w->ss, pid, tid);
	s->w[s->n++] = w;
	return w;
}

static void free_worker(struct sworker *w)
{
	probe_syscall_close(&w->sc);
	probe_schedstat_close(&w->ss);
	free(w);
}

static void drop_gone_workers(struct sampler *s, uint64_t now)
{
	size_t j = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->gone_ns && now - w->gone_ns > (uint64_t)(SAMPLER_GONE_KEEP_S * NS))
			free_worker(w);
		else
			s->w[j++] = w;
	}
	s->n = j;
}

static void mark_gone(struct sworker *w, uint64_t now)
{
	if (!w->gone_ns)
		w->gone_ns = now ? now : 1;
}

/* ---- discovery ---------------------------------------------------------- */

static struct segment *find_segment(struct sampler *s, pid_t pid)
{
	for (size_t i = 0; i < s->nseg; i++)
		if (s->seg[i].pid == pid)
			return &s->seg[i];
	return NULL;
}

static int on_segment(const char *path, pid_t pid, void *arg)
{
	struct sampler *s = arg;
	struct segment *g = find_segment(s, pid);
	if (g) {
		g->seen = 1;
		return 0;
	}
	struct probe_stat st;
	if (probe_stat_read(pid, 0, &st) < 0)
		return 0;
	if (s->targets && !targets_match(s->targets, pid, st.comm))
		return 0;
	struct probe_shm *shm;
	if (probe_shm_open(path, &shm) < 0)
		return 0; /* stale, foreign or not ready yet: looked at again next sweep */
	if (s->nseg == s->segcap) {
		size_t cap = s->segcap ? s->segcap * 2 : 8;
		struct segment *ng = realloc(s->seg, cap * sizeof(*ng));
		if (!ng) {
			probe_shm_close(shm);
			return -ENOMEM;
		}
		s->seg = ng;
		s->segcap = cap;
	}
	g = &s->seg[s->nseg++];
	g->pid = pid;
	g->shm = shm;
	g->seen = 1;
	snprintf(g->name, sizeof(g->name), "%s", st.comm);
	return 0;
}

static void discover_segments(struct sampler *s)
{
	for (size_t i = 0; i < s->nseg; i++)
		s->seg[i].seen = 0;
	probe_shm_scan(NULL, on_segment, s);
	size_t j = 0;
	for (size_t i = 0; i < s->nseg; i++) {
		struct segment *g = &s->seg[i];
		if (!g->seen || probe_shm_check_writer(g->shm) < 0)
			probe_shm_close(g->shm);
		else
			s->seg[j++] = *g;
	}
	s->nseg = j;
}

/* Uninstrumented targets (-p, -n): every thread is sampled. */
static void discover_threads(struct sampler *s)
{
	int nprocs = 0;
	if (!s->targets)
		return;
	if (s->targets->npids) {
		nprocs = probe_discover_pids(s->targets->pids, s->targets->npids, s->procs);
		if (nprocs < 0)
			nprocs = 0;
	}
	if (s->targets->has_re) {
		int m = probe_discover_match(&s->targets->matcher, s->procs + nprocs, MAX_PROCS - (size_t)nprocs);
		if (m > 0)
			nprocs += m > MAX_PROCS - nprocs ? MAX_PROCS - nprocs : m;
	}
	for (int p = 0; p < nprocs; p++) {
		const struct probe_proc_info *pi = &s->procs[p];
		if (find_segment(s, pi->pid))
			continue; /* instrumented: its slots name its workers */
		int nt = probe_discover_threads(pi->pid, s->tids, MAX_THREADS);
		for (int t = 0; t < nt && t < MAX_THREADS; t++)
			if (!find_worker(s, pi->pid, s->tids[t]))
				add_worker(s, pi->pid, s->tids[t], pi->comm);
	}
}

/* ---- shm counters --------------------------------------------------------- */

static void read_segment(struct sampler *s, struct segment *g, uint64_t now)
{
	int n = probe_shm_read(g->shm, s->slots, MAX_SLOTS, 0);
	if (n < 0)
		return;
	if (n > MAX_SLOTS)
		n = MAX_SLOTS;
	for (size_t i = 0; i < s->n; i++)
		if (s->w[i]->pid == g->pid && s->w[i]->instrumented)
			s->w[i]->seen = 0;
	for (int i = 0; i < n; i++) {
		const struct probe_shm_worker *sl = &s->slots[i];
		struct sworker *w = find_worker(s, sl->pid, sl->tid);
		if (w && w->instrumented && w->generation != sl->generation) {
			acc_init(&w->acc); /* another thread took the slot: counters restart */
			w->gone_ns = 0;
		}
		if (!w && !(w = add_worker(s, sl->pid, sl->tid, g->name)))
			continue;
		w->instrumented = 1;
		w->backend = sl->backend;
		w->wait_fd = sl->wait_fd;
		w->generation = sl->generation;
		w->seen = 1;
		snprintf(w->tag, sizeof(w->tag), "%s", sl->tag);
		/* now counts from s->t0 on CLOCK_MONOTONIC: the writers' clock */
		acc_add_shm(&w->acc, now, s->t0 + now, sl->values, sl->fiber_tag);
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->w[i]->pid == g->pid && s->w[i]->instrumented && !s->w[i]->seen)
			mark_gone(s->w[i], now); /* its slot was released */
}

/* ---- the tick ------------------------------------------------------------- */

static int has_target(const struct sworker *w, int fd)
{
	for (int i = 0; i < w->ntargets; i++)
		if (w->targets[i].fd == fd)
			return 1;
	return 0;
}

static void add_target(struct sampler *s, struct sworker *w, int fd)
{
	const struct probe_fd_target *t;
	if (w->ntargets == TARGETS_MAX || has_target(w, fd) || probe_fd_cache_get(s->fds, w->pid, fd, &t) < 0)
		return;
	w->targets[w->ntargets].fd = fd;
	snprintf(w->targets[w->ntargets].text, PROBE_TARGET_LEN, "%s", t->text);
	w->ntargets++;
}

/*
 * Resolves, on the sampler thread, what the fds a worker blocked on in the
 * detailed history are, newest seconds first: /proc/PID/fd and net tables
 * are read here once per sweep (through the window cache), never by views.
 */
static void refresh_targets(struct sampler *s, struct sworker *w, uint64_t now)
{
	w->ntargets = 0;
	if (w->gone_ns)
		return;
	int64_t sec = (int64_t)(now / NS);
	for (int64_t k = 0; k < ACC_DETAIL_S && sec - k >= 0 && w->ntargets < TARGETS_MAX; k++) {
		const struct acc_bucket *b = &w->acc.detail[(sec - k) % ACC_DETAIL_S];
		if (b->sec != sec - k)
			continue;
		for (int i = 0; i < ACC_BLOCK_KEYS && b->blocks[i].n; i++)
			if (b->blocks[i].fd >= 0)
				add_target(s, w, b->blocks[i].fd);
	}
}

/* All reads first (one io_uring batch for a large fleet), then the verdicts. */
static void sample_all(struct sampler *s, uint64_t now)
{
	struct probe_syscall **slot = sample_batch_slots(s->batch, s->n);
	if (!slot)
		return; /* out of memory: this tick is lost, not the sampler */
	for (size_t i = 0; i < s->n; i++)
		slot[i] = s->w[i]->gone_ns ? NULL : &s->w[i]->sc;
	sample_batch_run(s->batch);
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (!slot[i])
			continue;
		struct probe_sc_sample smp;
		struct probe_verdict v;
		if (sample_batch_result(s->batch, i, &smp) < 0)
			continue;
		probe_classify(&smp, w->instrumented ? w->wait_fd : -1, &v);
		if (v.cls == PROBE_GONE) {
			mark_gone(w, now);
			continue;
		}
		w->no_access = v.cls == PROBE_NO_ACCESS;
		acc_add_sample(&w->acc, now, &v);
		if (v.cls == PROBE_BLOCKED && v.fd >= 0)
			add_target(s, w, v.fd); /* a new fd is named at once, not a sweep later */
		s->total_samples++;
	}
}

static void read_sched_all(struct sampler *s, uint64_t now)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		struct probe_schedstat st;
		if (!w->gone_ns && probe_schedstat_sample(&w->ss, &st) == 0)
			acc_add_sched(&w->acc, now, st.run_ns, st.wait_ns);
	}
}

void sampler_step(struct sampler *s)
{
	pthread_mutex_lock(&s->lock);
	uint64_t now = elapsed_ns(s);
	if (now >= s->next_discover) {
		discover_segments(s);
		discover_threads(s);
		probe_fd_cache_begin_window(s->fds);
		for (size_t i = 0; i < s->n; i++)
			refresh_targets(s, s->w[i], now);
		s->next_discover = now + (uint64_t)(SAMPLER_DISCOVER_S * NS);
	}
	if (now >= s->next_shm) {
		for (size_t i = 0; i < s->nseg; i++)
			read_segment(s, &s->seg[i], now);
		s->next_shm = now + (uint64_t)(NS / SAMPLER_SHM_HZ);
	}
	sample_all(s, now);
	if (now >= s->next_sched) {
		read_sched_all(s, now);
		s->next_sched = now + NS / 4;
	}
	drop_gone_workers(s, now);
	pthread_mutex_unlock(&s->lock);
}

/* ---- the thread ------------------------------------------------------------- */

/*
 * A sampler that must queue for a CPU wakes late exactly when the CPUs are
 * busy, i.e. more often while its targets are running than while they
 * wait: its samples would over-count idle on a saturated machine. So it
 * asks for a real-time priority (granted to root or CAP_SYS_NICE), but only
 * while its own cost stays small: a real-time thread that took a large
 * share of a CPU would starve the very workers it measures.
 */
#define RT_MAX_SHARE  0.20  /* drop real-time above this share of a CPU */
#define RT_BACK_SHARE 0.10  /* and take it back below this one */

/* The share and the policy include the io-wq threads that do a large
 * fleet's reads (see sample_batch.c). */
static uint64_t own_cpu_ns(struct sampler *s)
{
	return sample_batch_cpu_ns(s->batch);
}

static int set_realtime(struct sampler *s, int on)
{
	return sample_batch_set_realtime(s->batch, on);
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	struct timespec next;
	int rt_allowed = !s->no_realtime && set_realtime(s, 1), rt = rt_allowed;
	/* the sampler's own CPU share, measured over whole seconds: per-step
	 * costs swing (a discovery sweep costs 100 samples), a second's do not */
	uint64_t share_wall0 = mono_ns(), share_cpu0 = own_cpu_ns(s);
	__atomic_store_n(&s->realtime, rt, __ATOMIC_RELAXED);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		pthread_mutex_lock(&s->lock);
		int stop = s->stop, paused = s->paused;
		double hz = s->rate_hz;
		pthread_mutex_unlock(&s->lock);
		if (stop)
			break;
		if (!paused)
			sampler_step(s);
		uint64_t wall = mono_ns();
		if (wall - share_wall0 >= NS) {
			uint64_t cpu = own_cpu_ns(s);
			double share = (double)(cpu - share_cpu0) / (double)(wall - share_wall0);
			if (rt && share > RT_MAX_SHARE)
				rt = !set_realtime(s, 0);
			else if (!rt && rt_allowed && share < RT_BACK_SHARE)
				rt = set_realtime(s, 1);
			__atomic_store_n(&s->realtime, rt, __ATOMIC_RELAXED);
			share_wall0 = wall;
			share_cpu0 = cpu;
		}
		double jitter = 0.5 + (double)rand_r(&s->rng) / ((double)RAND_MAX + 1.0);
		uint64_t gap = paused ? NS / 20 : (uint64_t)(jitter * 1e9 / hz);
		uint64_t t = (uint64_t)next.tv_sec * NS + (uint64_t)next.tv_nsec + gap;
		uint64_t now = mono_ns();
		if (t < now) /* fell behind: skip, don't burst */
			t = now + gap;
		next.tv_sec = (time_t)(t / NS);
		next.tv_nsec = (long)(t % NS);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
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
	for (size_t i = 0; i < s->n; i++)
		free_worker(s->w[i]);
	for (size_t i = 0; i < s->nseg; i++)
		probe_shm_close(s->seg[i].shm);
	probe_fd_cache_delete(s->fds);
	sample_batch_delete(s->batch);
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

/* ---- the model ---------------------------------------------------------------- */

static int shown(const struct sampler *s, const struct sworker *w)
{
	return w->instrumented || w->acc.polls_seen > 0 || s->all_threads;
}

static int by_pid_tid(const void *a, const void *b)
{
	const struct worker_view *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void fleet_totals(struct model *m)
{
	struct fleet_view *f = &m->fleet;
	double idle_sum = 0;
	unsigned idle_n = 0, ops_n = 0, headroom_n = 0;
	memset(f, 0, sizeof(*f));
	f->workers = (unsigned)m->n;
	for (size_t i = 0; i < m->n; i++) {
		const struct worker_view *w = &m->workers[i];
		if (!isnan(w->idle_pct)) {
			idle_sum += w->idle_pct;
			idle_n++;
		}
		if (!isnan(w->ops_per_s)) {
			f->ops_per_s += w->ops_per_s;
			ops_n++;
		}
		if (!isnan(w->headroom_ops_per_s)) {
			f->headroom_ops_per_s += w->headroom_ops_per_s;
			headroom_n++;
		}
		if (w->nhistory > f->nhistory)
			f->nhistory = w->nhistory;
	}
	/* unknown, not zero, when no worker can tell */
	f->mean_idle_pct = idle_n ? idle_sum / idle_n : NAN;
	if (!ops_n)
		f->ops_per_s = NAN;
	if (!headroom_n)
		f->headroom_ops_per_s = NAN;
	/* per-second mean over the workers that have that second */
	for (int k = 0; k < f->nhistory; k++) {
		double sum = 0;
		int cnt = 0;
		for (size_t i = 0; i < m->n; i++) {
			const struct worker_view *w = &m->workers[i];
			int idx = w->nhistory - f->nhistory + k;
			if (idx >= 0 && !isnan(w->idle_history[idx])) {
				sum += w->idle_history[idx];
				cnt++;
			}
		}
		f->idle_history[k] = cnt ? (float)(sum / cnt) : NAN;
	}
}

/* What each top blocker's fd is, as the sampler thread last resolved it. */
static void copy_targets(const struct sworker *w, struct worker_view *v)
{
	for (int i = 0; i < v->nblocked_top; i++) {
		struct blocker_view *b = &v->blocked_top[i];
		for (int k = 0; k < w->ntargets; k++)
			if (w->targets[k].fd == b->fd)
				snprintf(b->target, sizeof(b->target), "%s", w->targets[k].text);
	}
}

int sampler_model(struct sampler *s, double window_s, struct model *m)
{
	memset(m, 0, sizeof(*m));
	pthread_mutex_lock(&s->lock);
	uint64_t now = elapsed_ns(s);
	m->workers = calloc(s->n ? s->n : 1, sizeof(*m->workers));
	if (!m->workers) {
		pthread_mutex_unlock(&s->lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct sworker *w = s->w[i];
		if (!shown(s, w))
			continue;
		struct worker_view *v = &m->workers[m->n++];
		v->pid = w->pid;
		v->tid = w->tid;
		snprintf(v->name, sizeof(v->name), "%s", w->name);
		snprintf(v->tag, sizeof(v->tag), "%s", w->tag);
		v->instrumented = w->instrumented;
		v->backend = w->instrumented ? probe_shm_backend_name(w->backend) : "none";
		v->gone = w->gone_ns != 0;
		v->no_access = w->no_access;
		acc_view(&w->acc, now, window_s, w->instrumented, v);
		copy_targets(w, v);
		if (v->gone)
			v->stall_ms = 0; /* an exited thread is not stalled */
	}
	m->rate_hz = s->rate_hz;
	m->window_s = window_s;
	m->elapsed_s = (double)(now - NS) / 1e9;
	m->total_samples = s->total_samples;
	pthread_mutex_unlock(&s->lock);

	qsort(m->workers, m->n, sizeof(*m->workers), by_pid_tid);
	fleet_totals(m);
	return 0;
}
