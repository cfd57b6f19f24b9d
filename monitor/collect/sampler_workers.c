/*
 * sampler_workers.c — the sampler's tables: workers (one per sampled
 * thread, found in O(1) by (pid, tid)) and shm segments (by pid), how they
 * are discovered, and the shm reads that feed instrumented workers.
 * Every function here runs on the sampling thread with s->lock held.
 */
#include "collect/sampler_int.h"
#include "collect/sampler_sched.h"
#include "probe_proc.h"
#include "util/textsafe.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>

struct sworker *sampler_find_worker(struct sampler *s, pid_t pid, pid_t tid)
{
	size_t i;
	return idmap_get(&s->by_tid, idmap_pair(pid, tid), &i) ? s->w[i] : NULL;
}

/* pid's service: its unit or container, else its name; one read of its
 * cgroup file per process (workers of a process are added in a row).
 * Cleaned as every view shows it (textsafe_label, as a recording keeps
 * it): services are rows keyed by name, and "dup\x01" and "dup\x02" would
 * be two rows that every output then prints as "dup?" — two series of
 * one label set, of which Prometheus keeps one. -s matches this name. */
static const char *service_of(struct sampler *s, pid_t pid, const char *name)
{
	if (s->service_pid != pid) {
		s->service_pid = pid;
		char raw[PROBE_SERVICE_LEN];
		if (probe_service_of(pid, raw, sizeof(raw)) <= 0)
			raw[0] = '\0';
		textsafe_label(s->service_of, sizeof(s->service_of), raw);
	}
	if (*s->service_of)
		return s->service_of;
	textsafe_label(s->name_of, sizeof(s->name_of), name);
	return s->name_of;
}

/* The effective uid of pid (the owner of /proc/PID), or (uid_t)-1. */
static uid_t uid_of(pid_t pid)
{
	char path[PATH_MAX];
	struct stat st;
	if (probe_proc_path(path, sizeof(path), "%d", (int)pid) < 0 || stat(path, &st) < 0)
		return (uid_t)-1;
	return st.st_uid;
}

int sampler_narrowed_in(struct sampler *s, pid_t pid, uid_t uid, const char *name)
{
	const struct targets *t = s->targets;
	if (!t || (!t->has_uid && !t->has_service))
		return 1;
	if (t->has_uid && uid == (uid_t)-1)
		uid = uid_of(pid);
	return targets_narrow(t, uid, t->has_service ? service_of(s, pid, name) : NULL);
}

/* w as a new worker of (pid, tid): its probes opened, nothing measured. */
static void init_worker(struct sampler *s, struct sworker *w, pid_t pid, pid_t tid, uint64_t start,
			const char *name)
{
	w->pid = pid;
	w->tid = tid;
	w->start_time = start;
	w->uid = s->adding_uid;
	w->kept = s->adding_kept;
	w->wait_fd = -1;
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->service, sizeof(w->service), "%s", service_of(s, pid, name));
	w->in_unit = s->service_of[0] != '\0';
	sampler_name_thread(w);   /* "nioEventLoopGro", "tokio-runtime-w" */
	s->next_limits = 0;   /* its role (and limits) at the next tick, not a second later */
	series_init(&w->series);
	prec_init(&w->prec);
	probe_syscall_open(&w->sc, pid, tid);
	probe_schedstat_open(&w->ss, pid, tid);
	probe_loop_init(&w->loop, pid, tid);
	w->loop_fd = -1;
}

static void close_worker(struct sworker *w);
static void reindex_workers(struct sampler *s);

/* Whose worker makes room at the cap for a newcomer of uid (kept: an
 * instrumented worker or a named target, which always gets in): a gone
 * one first; else one of the user holding the most workers, users'
 * (uid >= 1000) before the system's, when that is more than the newcomer's
 * user would hold with it. A flood of one user's loops then cannot
 * crowd out another's, nor the services'. NULL: none. */
static struct sworker *room_from(struct sampler *s, uid_t uid, int kept)
{
	struct idmap count;
	idmap_init(&count);
	struct sworker *gone = NULL;
	for (size_t i = 0; i < s->n && !gone; i++) {
		struct sworker *w = s->w[i];
		size_t c = 0;
		if (w->kept)
			continue;
		if (w->gone_ns)
			gone = w;
		idmap_get(&count, (uint64_t)w->uid, &c);
		idmap_put(&count, (uint64_t)w->uid, c + 1);
	}
	struct sworker *victim = gone;
	if (!victim) {
		size_t best = 0, mine = 0;
		int best_user = 0;
		idmap_get(&count, (uint64_t)uid, &mine);
		for (size_t i = 0; i < s->n; i++) {
			struct sworker *w = s->w[i];
			size_t c = 0;
			if (w->kept)
				continue;
			idmap_get(&count, (uint64_t)w->uid, &c);
			int user = w->uid >= 1000;
			if (user > best_user || (user == best_user && c > best))
				victim = w, best = c, best_user = user;
		}
		int fair = victim && (kept || victim->uid != uid) &&
			   (kept || (best_user && uid < 1000) || best > mine + 1);
		if (!fair)
			victim = NULL;
	}
	idmap_done(&count);
	return victim;
}

static struct sworker *add_worker(struct sampler *s, pid_t pid, pid_t tid, uint64_t start, const char *name,
				  unsigned *ignored)
{
	if (s->n >= s->max_workers) {
		struct sworker *v = room_from(s, s->adding_uid, s->adding_kept);
		++*ignored;   /* one is left out either way: the newcomer, or v */
		if (!v)
			return NULL;
		if (s->sweep && v->tid)
			probe_sweep_forget(s->sweep, v->tid);   /* counted as left out from the next sweep */
		close_worker(v);
		memset(v, 0, sizeof(*v));
		init_worker(s, v, pid, tid, start, name);
		reindex_workers(s);
		return v;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct sworker **nw = realloc(s->w, cap * sizeof(*nw));
		if (!nw)
			return NULL;
		s->w = nw;
		s->cap = cap;
	}
	struct sworker *w = calloc(1, sizeof(*w));
	if (!w || idmap_put(&s->by_tid, idmap_pair(pid, tid), s->n) < 0) {
		free(w);
		return NULL;
	}
	init_worker(s, w, pid, tid, start, name);
	s->w[s->n++] = w;
	return w;
}

struct sworker *sampler_add_worker(struct sampler *s, pid_t pid, pid_t tid, const char *name, unsigned *ignored)
{
	return add_worker(s, pid, tid, 0, name, ignored);
}

static void close_worker(struct sworker *w)
{
	free(w->sched);
	probe_syscall_close(&w->sc);
	probe_schedstat_close(&w->ss);
	probe_loop_done(&w->loop);
	free(w->bpf_hist);
	w->sched = NULL;
	w->bpf_hist = NULL;
}

static void free_worker(struct sworker *w)
{
	close_worker(w);
	free(w);
}

int sampler_worker_current(const struct sworker *w, uint64_t start)
{
	return w && !w->gone_ns && (!start || !w->start_time || w->start_time == start);
}

/* An entry left by an earlier process with that pid (gone, or of another
 * start time) must not stand in for it — the new one would never be
 * sampled — so it is begun afresh in place, keeping one worker per
 * (pid, tid) for every view. */
struct sworker *sampler_worker_of(struct sampler *s, pid_t pid, pid_t tid, uint64_t start, const char *name,
				  unsigned *ignored)
{
	struct sworker *w = sampler_find_worker(s, pid, tid);
	if (!w)
		return add_worker(s, pid, tid, start, name, ignored);
	if (sampler_worker_current(w, start)) {
		if (!w->start_time)
			w->start_time = start;
		return w;
	}
	close_worker(w);
	memset(w, 0, sizeof(*w));
	init_worker(s, w, pid, tid, start, name);
	return w;
}

void sampler_free_workers(struct sampler *s)
{
	for (size_t i = 0; i < s->n; i++)
		free_worker(s->w[i]);
	for (size_t i = 0; i < s->nseg; i++)
		probe_shm_close(s->seg[i].shm);
	s->n = s->nseg = 0;
	idmap_done(&s->by_tid);
	idmap_done(&s->live_by_pid);
	idmap_done(&s->by_pid);
}

/* After compaction the indices moved: the maps are rebuilt (they only grow
 * from a put, which cannot fail for a size they already held). */
static void reindex_workers(struct sampler *s)
{
	idmap_clear(&s->by_tid);
	for (size_t i = 0; i < s->n; i++)
		idmap_put(&s->by_tid, idmap_pair(s->w[i]->pid, s->w[i]->tid), i);
}

/* Workers freed past which the heap is handed back to the system, once
 * their frees stop: a flood's 4,096 workers are ~90 KB each, and glibc
 * keeps what is freed for the next malloc (serve kept 475 MB after a flood
 * ended). Counted across ticks: a flood's exit is seen worker by worker at
 * their thinned samples, a few a tick over a second, and counted tick by
 * tick none reached the bound (serve kept 20.7 MB of a 9.4-MB baseline). */
#define SAMPLER_TRIM_AFTER 8

void sampler_drop_gone(struct sampler *s, uint64_t now)
{
	size_t j = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->gone_ns && now - w->gone_ns > (uint64_t)(SAMPLER_GONE_KEEP_S * NS))
			free_worker(w);
		else
			s->w[j++] = w;
	}
	if (j != s->n) {
		s->freed_untrimmed += s->n - j;
		s->n = j;
		reindex_workers(s);
	} else if (s->freed_untrimmed >= SAMPLER_TRIM_AFTER) {
		s->freed_untrimmed = 0;
		s->trim_due = 3;   /* and at the next snapshots: the views free their large copies after */
	}
}

void sampler_mark_gone(struct sworker *w, uint64_t now)
{
	if (!w->gone_ns)
		w->gone_ns = now ? now : 1;
}

/* ---- segments ------------------------------------------------------------ */

static struct segment *find_segment(struct sampler *s, pid_t pid)
{
	size_t i;
	return idmap_get(&s->by_pid, (uint64_t)pid, &i) ? &s->seg[i] : NULL;
}

static int on_segment(const char *path, pid_t pid, void *arg)
{
	struct sampler *s = arg;
	struct segment *g = find_segment(s, pid);
	if (g) {
		g->seen = 1;
		return PROBE_SHM_SCAN_LIVE; /* its writer is checked after the scan */
	}
	struct probe_stat st;
	if (s->nseg >= s->max_workers) {
		s->ignored_threads++; /* every segment holds a worker at least: past the cap, none is sampled */
		return PROBE_SHM_SCAN_UNWANTED;
	}
	if (s->targets && !s->targets->has_re && !targets_match(s->targets, pid, NULL))
		return PROBE_SHM_SCAN_UNWANTED; /* not a named pid: not even opened */
	/* open before /proc: a refused file is remembered by the scan and
	 * costs no system call at the next sweep */
	struct probe_shm *shm;
	if (probe_shm_open(path, &shm) < 0)
		return 0; /* stale, foreign or not ready yet: looked at again next sweep */
	if (probe_stat_read(pid, 0, &st) < 0) {
		probe_shm_close(shm);
		return 0;
	}
	if ((s->targets && !targets_match(s->targets, pid, st.comm)) || !sampler_narrowed_in(s, pid, (uid_t)-1, st.comm)) {
		probe_shm_close(shm);
		return PROBE_SHM_SCAN_UNWANTED;
	}
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
	if (idmap_put(&s->by_pid, (uint64_t)pid, s->nseg) < 0) {
		probe_shm_close(shm);
		return -ENOMEM;
	}
	g = &s->seg[s->nseg++];
	g->pid = pid;
	g->shm = shm;
	g->seen = 1;
	snprintf(g->name, sizeof(g->name), "%s", st.comm);
	return PROBE_SHM_SCAN_LIVE;
}

static void discover_segments(struct sampler *s)
{
	s->ignored_threads = 0;
	for (size_t i = 0; i < s->nseg; i++)
		s->seg[i].seen = 0;
	probe_shm_scan_mapped(NULL, on_segment, sampler_tick_if_due, s);
	size_t j = 0;
	for (size_t i = 0; i < s->nseg; i++) {
		struct segment *g = &s->seg[i];
		if (!g->seen || probe_shm_check_writer(g->shm) < 0)
			probe_shm_close(g->shm);
		else
			s->seg[j++] = *g;
	}
	if (j != s->nseg) {
		s->nseg = j;
		idmap_clear(&s->by_pid);
		for (size_t i = 0; i < s->nseg; i++)
			idmap_put(&s->by_pid, (uint64_t)s->seg[i].pid, i);
	}
}

/* Rounds (seconds) between two looks at a -p process whose threads stand. */
#define DISCOVER_BACKOFF_MAX 8

/* Uninstrumented targets (-p, -n): every thread is sampled. */
static void discover_threads(struct sampler *s)
{
	int nprocs = 0;
	if (!s->targets)
		return;
	s->discover_round++;
	if (s->targets->npids) {
		/* an instrumented pid's segment check reads its stat already; a
		 * process whose threads stood at its last looks is looked at
		 * after 2, 4, up to DISCOVER_BACKOFF_MAX rounds (its main
		 * thread's worker keeps when) */
		size_t n = 0;
		for (size_t i = 0; i < s->targets->npids; i++) {
			pid_t pid = s->targets->pids[i];
			struct sworker *m = sampler_find_worker(s, pid, pid);
			if (!find_segment(s, pid) && (!m || m->gone_ns || s->discover_round >= m->discover_due))
				s->pids[n++] = pid;
		}
		nprocs = probe_discover_pids(s->pids, n, s->procs);
		if (nprocs < 0)
			nprocs = 0;
	}
	if (s->targets->has_re) {
		int m = probe_discover_match(&s->targets->matcher, s->procs + nprocs,
					     SAMPLER_MAX_PROCS - (size_t)nprocs);
		if (m > 0)
			nprocs += m > SAMPLER_MAX_PROCS - nprocs ? SAMPLER_MAX_PROCS - nprocs : m;
	}
	/* A process with as many threads as it has live workers is not listed
	 * again: a thread that exits is found gone at its next sample, so one
	 * that another replaced within the second is found a second later. */
	idmap_clear(&s->live_by_pid);
	for (size_t i = 0; i < s->n && nprocs; i++) {
		size_t c = 0;
		if (s->w[i]->gone_ns)
			continue;
		idmap_get(&s->live_by_pid, (uint64_t)s->w[i]->pid, &c);
		idmap_put(&s->live_by_pid, (uint64_t)s->w[i]->pid, c + 1);
	}
	for (int p = 0; p < nprocs; p++) {
		const struct probe_proc_info *pi = &s->procs[p];
		size_t live = 0;
		if (find_segment(s, pi->pid) || !sampler_narrowed_in(s, pi->pid, (uid_t)-1, pi->comm))
			continue; /* instrumented: its slots name its workers */
		/* the sampling thread is in its own process's count, not a worker;
		 * a process renamed since (an execve) is listed to rename them */
		struct sworker *m = sampler_find_worker(s, pi->pid, pi->pid);
		if (m && !strcmp(m->name, pi->comm) && m->start_time == pi->start_time && idmap_get(&s->live_by_pid, (uint64_t)pi->pid, &live) &&
		    live + (pi->pid == getpid()) == (size_t)pi->threads) {
			m->discover_gap = m->discover_gap ? m->discover_gap * 2 : 2;
			if (m->discover_gap > DISCOVER_BACKOFF_MAX)
				m->discover_gap = DISCOVER_BACKOFF_MAX;
			m->discover_due = s->discover_round + m->discover_gap;
			continue;
		}
		if (m)
			m->discover_gap = 0;   /* changed: every round again */
		int nt = probe_discover_threads(pi->pid, s->tids, SAMPLER_MAX_THREADS);
		const struct probe_rt_proc *rt = sampler_runtime_of(s, pi->pid, pi->start_time, pi->comm);
		/* the table changes under the lock, one process at a time */
		pthread_mutex_lock(&s->lock);
		if (sampler_rt_is_scheduler(rt))
			sampler_sched_row(s, pi->pid, pi->comm, rt); /* it names its pool's threads */
		for (int t = 0; t < nt && t < SAMPLER_MAX_THREADS; t++) {
			/* the sampling thread itself is always running: not a worker */
			if (s->tids[t] == s->self_tid)
				continue;
			s->adding_uid = (uid_t)-1;
			s->adding_kept = 1;   /* named: -p or -n */
			struct sworker *w = sampler_find_worker(s, pi->pid, s->tids[t]);
			int fresh = !sampler_worker_current(w, pi->start_time);
			w = sampler_worker_of(s, pi->pid, s->tids[t], pi->start_time, pi->comm, &s->ignored_threads);
			s->adding_kept = 0;
			if (w && fresh && rt) {
				/* every thread of a -p process: named only where it matters */
				w->runtime = rt->rt;
				if (rt->rt == PROBE_RT_JVM)
					sampler_name_thread(w);   /* its loops are told apart by name */
			} else if (w) /* a process found just before its execve, or renamed since */
				snprintf(w->name, sizeof(w->name), "%s", pi->comm);
		}
		pthread_mutex_unlock(&s->lock);
	}
}

/* ---- fd targets ------------------------------------------------------------ */

static int has_target(const struct sworker *w, int fd)
{
	for (int i = 0; i < w->ntargets; i++)
		if (w->targets[i].fd == fd)
			return 1;
	return 0;
}

/* ino: the fd's inode as the sample saw it (0: unknown), so that a reused
 * fd number is named anew */
void sampler_add_target(struct sampler *s, struct sworker *w, int fd, uint64_t ino)
{
	const struct probe_fd_target *t;
	if (w->ntargets == SNAP_TARGETS || has_target(w, fd) || probe_fd_cache_get_ino(s->fds, w->pid, fd, ino, &t) < 0)
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
	/* but the loop's own fd (its poll is classified by that fd being the
	 * loop's epoll or ring fd, so its text cannot go stale while it is)
	 * and the last sample's (the fd a thread still in that call waits on:
	 * the shortcuts reuse that sample without naming its fd again) */
	struct snap_target keep[2]; /* targets name distinct fds: two at most */
	int nkeep = 0;
	for (int i = 0; i < w->ntargets && nkeep < 2; i++)
		if (w->targets[i].fd == w->loop_fd || w->targets[i].fd == w->last_v.fd)
			keep[nkeep++] = w->targets[i];
	w->ntargets = 0;
	if (w->gone_ns)
		return;
	memcpy(w->targets, keep, (size_t)nkeep * sizeof(keep[0]));
	w->ntargets = nkeep;
	int64_t sec = (int64_t)(now / NS);
	for (int64_t k = 0; k < SERIES_DETAIL_S && sec - k >= 0 && w->ntargets < SNAP_TARGETS; k++) {
		const struct series_bucket *b = &w->series.detail[(sec - k) % SERIES_DETAIL_S];
		if (b->sec != sec - k)
			continue;
		for (int i = 0; i < SERIES_BLOCK_KEYS && b->blocks[i].n; i++)
			if (b->blocks[i].fd >= 0)
				sampler_add_target(s, w, b->blocks[i].fd, 0);
	}
}

/*
 * Without the lock but for the moments the worker table changes: how long
 * a sweep takes depends on what others put in the segment directory and on
 * how many processes a pattern matches, and views must not wait for it.
 * Only the sampling thread touches the segment table, so it needs none.
 */
void sampler_discover(struct sampler *s, uint64_t now)
{
	discover_segments(s);
	discover_threads(s);
	sampler_sweep_host(s, now);
	pthread_mutex_lock(&s->lock);
	probe_fd_cache_begin_window(s->fds);
	for (size_t i = 0; i < s->n; i++)
		refresh_targets(s, s->w[i], now);
	pthread_mutex_unlock(&s->lock);
}

/* ---- shm counters --------------------------------------------------------- */

static void read_segment(struct sampler *s, struct segment *g, uint64_t now)
{
	int n = probe_shm_read(g->shm, s->slots, SAMPLER_MAX_SLOTS, 0);
	g->read_ok = n >= 0;
	if (n < 0)
		return;
	if (n > SAMPLER_MAX_SLOTS)
		n = SAMPLER_MAX_SLOTS;
	for (int i = 0; i < n; i++) {
		const struct probe_shm_worker *sl = &s->slots[i];
		struct sworker *w = sampler_find_worker(s, sl->pid, sl->tid);
		if (w && w->instrumented && w->generation != sl->generation) {
			series_init(&w->series); /* another thread took the slot: counters restart */
			prec_init(&w->prec);
			probe_loop_done(&w->loop);
			probe_loop_init(&w->loop, w->pid, w->tid);
			w->gone_ns = 0;
		}
		s->adding_kept = 1;   /* instrumented: always in */
		if (!w)
			w = add_worker(s, sl->pid, sl->tid, 0, g->name, &s->ignored_slots);
		s->adding_kept = 0;
		if (!w)
			continue;
		w->kept = 1;
		w->instrumented = 1;
		w->role = SNAP_ROLE_SERVER;
		w->backend = sl->backend;
		w->wait_fd = sl->wait_fd;
		w->generation = sl->generation;
		w->slot = sl->slot;
		w->seen = 1;
		snprintf(w->tag, sizeof(w->tag), "%s", sl->tag);
		/* now counts from s->t0 on CLOCK_MONOTONIC: the writers' clock */
		series_add_shm(&w->series, now, s->t0 + now, sl->values, sl->fiber_tag);
	}
}

/* w's segment: the index it was found at last, while it still holds w's
 * pid (compaction moves segments), else looked up: this runs per sample */
static struct segment *worker_segment(struct sampler *s, struct sworker *w)
{
	if (w->seg_i < s->nseg && s->seg[w->seg_i].pid == w->pid)
		return &s->seg[w->seg_i];
	size_t i;
	if (!idmap_get(&s->by_pid, (uint64_t)w->pid, &i))
		return NULL;
	w->seg_i = i;
	return &s->seg[i];
}

uint64_t sampler_read_hot(struct sampler *s, struct sworker *w)
{
	struct segment *g = worker_segment(s, w);
	struct probe_shm_worker ref = { .pid = w->pid, .tid = w->tid, .generation = w->generation, .slot = w->slot };
	struct probe_shm_hot hot;
	if (!g || !g->read_ok || probe_shm_read_hot(g->shm, &ref, &hot) < 0)
		return 0;
	series_set_fiber(&w->series, hot.tag_index, hot.fiber_tag);
	return hot.poll_since_ns;
}

/* One pass over the workers before and one after, whatever the number of
 * segments: an instrumented worker whose segment was read and no longer
 * lists it has released its slot. */
void sampler_read_segments(struct sampler *s, uint64_t now)
{
	for (size_t i = 0; i < s->n; i++)
		s->w[i]->seen = 0;
	s->ignored_slots = 0;
	for (size_t i = 0; i < s->nseg; i++)
		read_segment(s, &s->seg[i], now);
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (!w->instrumented || w->seen)
			continue;
		struct segment *g = find_segment(s, w->pid);
		if (!g || g->read_ok)
			sampler_mark_gone(w, now); /* its slot was released, or its segment went */
	}
}
