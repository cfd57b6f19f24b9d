/*
 * sampler_pools.c — the helper pools of the workers' processes: the
 * threads that are not loops, sampled at a lower rate than loops (a
 * runtime may have many), grouped by the futex word they wait on
 * (probe_sc_futex_wait: a condition variable's key).
 *
 * A pool's busy share is the share of its threads' samples not in its
 * wait. A saturated pool never waits, so membership, once seen, is kept
 * for the whole run, and the threads never seen waiting that are not loops
 * and ran >= 90% of the time form one "busy helpers" group that counts as
 * a saturated pool (docs/usage.md says how that can mislead).
 *
 * Once a second each process's threads are listed again, and the busiest
 * pool of the second goes into each of its loops' series (pool_threads,
 * pool_busy_pct); the snapshot names every pool over the view's window.
 */
#include "collect/sampler_pools.h"
#include "collect/sampler_int.h"
#include "probe_proc.h"

#include <stdlib.h>
#include <string.h>

#define POOL_KEYS        4     /* futex keys a thread's waits are counted on */
#define POOL_MAX_THREADS 1024  /* threads followed per process */
#define POOL_MAX_PROCS   1024  /* processes followed: churn must not grow a long run */
/* A process's pool threads share half a loop thread's reads per second
 * (rate_hz / POOL_BUDGET_DIV), each read at most rate_hz / POOL_THREAD_DIV
 * times a second: a read of a pool thread costs about three of an idle
 * loop's samples (those often read schedstat alone), so a pool of any
 * size costs under 2 loops (bench/pool_cost). */
#define POOL_BUDGET_DIV  2
#define POOL_THREAD_DIV  4
#define RESCAN_S         10    /* a thread list whose length stands is listed again this often */
/* A process's thread count is checked every second for its first
 * YOUNG_S seconds followed, or while it has threads besides its loops;
 * else every QUIET_S (a fleet of single-threaded loops pays little). */
#define YOUNG_S          10
#define QUIET_S          5
/* A busy helper is judged on its last HELPER_RECENT_N samples, taken in
 * at most HELPER_MAX_S seconds (a thread of a large pool is read less
 * than once a second), and needs HELPER_MIN_N of them. */
#define HELPER_RECENT_N  20
#define HELPER_MAX_S     30
#define HELPER_MIN_N     5
#define HELPER_BUSY_PCT  90

struct pool_sec {
	int64_t  sec;
	uint16_t n, idle, run;   /* samples; in the wait of its pool; runnable */
};

struct pool_thread {
	pid_t    tid;
	int      seen;               /* listed at the last rescan */
	int      loop;               /* a loop (sampled as a worker): never a pool's */
	struct probe_syscall sc;
	struct probe_schedstat_file ss;
	struct probe_schedstat ref;  /* read just before last, when last_off */
	struct probe_sc_sample last; /* its last sample read */
	int      last_off;           /* that sample found it off the CPU, ref before it */
	uint64_t next_ns;            /* when it is read next */
	uint64_t keys[POOL_KEYS];
	uint32_t key_n[POOL_KEYS];   /* waits seen on each key */
	uint8_t  key_cond[POOL_KEYS]; /* and whether one was a FUTEX_WAIT_BITSET (a glibc condvar) */
	uint64_t member;             /* the key it waits on most, 0: never seen waiting */
	uint32_t sec_n, sec_idle, sec_run;   /* since the last per-second pass */
	struct pool_sec ring[SERIES_DETAIL_S];   /* second s at s % SERIES_DETAIL_S */
	uint64_t tot_n, tot_idle, tot_run;
};

struct pool_proc {
	pid_t    pid;
	int      seen;
	int      nthreads;           /* at the last listing */
	uint64_t listed_ns;          /* when, 0: never */
	uint64_t first_ns;           /* when it was first followed */
	uint64_t checked_ns;         /* its thread count's last check */
	struct pool_thread *t;       /* owned; nt used, cap allocated, in tid order after a listing */
	size_t   nt, cap;
	size_t   nread;              /* of them, not loops: sampled here (counted once a second) */
};

struct sampler_pools {
	struct pool_proc *p;         /* owned */
	size_t   np;
	struct idmap by_pid;         /* pid -> index in p */
};

/* ---- following the threads ---- */

static void thread_open(struct pool_thread *t, pid_t pid)
{
	probe_syscall_open(&t->sc, pid, t->tid);
	probe_schedstat_open(&t->ss, pid, t->tid);
	t->last_off = 0;
}

static void thread_close(struct pool_thread *t)
{
	if (t->loop)
		return;
	probe_syscall_close(&t->sc);
	probe_schedstat_close(&t->ss);
}

static int by_tid(const void *a, const void *b)
{
	const struct pool_thread *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int is_loop(const struct sampler *s, pid_t pid, pid_t tid)
{
	const struct sworker *w = sampler_find_worker((struct sampler *)s, pid, tid);
	/* a scheduler's pool is its row's capacity, not a helper pool */
	return tid == s->self_tid || (w && (w->instrumented || sampler_is_loop(w) || w->member));
}

/* p's thread list, as /proc lists it now: new ones opened, gone ones
 * closed. Listed when its length changes (one stat(2) a second), and every
 * RESCAN_S for a thread that took another's place; a loop may have become
 * one since the last pass, so the loops are marked at every pass. */
static void rescan(struct sampler *s, struct pool_proc *p, uint64_t now)
{
	size_t helpers = 0;
	for (size_t i = 0; i < p->nt; i++)
		helpers += !p->t[i].loop;
	if (p->listed_ns && !helpers && now - p->first_ns >= YOUNG_S * NS && now - p->checked_ns < QUIET_S * NS)
		return;
	p->checked_ns = now;
	int n = probe_proc_nthreads(p->pid);
	if (p->listed_ns && n == p->nthreads && now - p->listed_ns < RESCAN_S * NS) {
		for (size_t i = 0; i < p->nt; i++) {
			struct pool_thread *t = &p->t[i];
			if (!t->loop && is_loop(s, p->pid, t->tid)) {
				thread_close(t);
				t->loop = 1;
			}
		}
		return;
	}
	p->nthreads = n;
	p->listed_ns = now ? now : 1;
	n = probe_discover_threads(p->pid, s->tids, SAMPLER_MAX_THREADS);
	if (n < 0)
		return;
	if (n > SAMPLER_MAX_THREADS)
		n = SAMPLER_MAX_THREADS;
	for (size_t i = 0; i < p->nt; i++)
		p->t[i].seen = 0;
	size_t old = p->nt;   /* p->t[0..old) is in tid order, as listings come */
	for (int k = 0; k < n; k++) {
		size_t lo = 0, hi = old;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (p->t[mid].tid < s->tids[k])
				lo = mid + 1;
			else
				hi = mid;
		}
		size_t i = lo < old && p->t[lo].tid == s->tids[k] ? lo : p->nt;
		if (i == p->nt) {
			if (p->nt >= POOL_MAX_THREADS)
				continue;
			if (p->nt == p->cap) {
				size_t cap = p->cap ? p->cap * 2 : 8;
				struct pool_thread *nt = realloc(p->t, cap * sizeof(*nt));
				if (!nt)
					continue;
				p->t = nt;
				p->cap = cap;
			}
			struct pool_thread *t = p->t;
			memset(&t[i], 0, sizeof(t[i]));
			t[i].tid = s->tids[k];
			t[i].loop = 1;   /* opened below unless it is one */
			for (int j = 0; j < SERIES_DETAIL_S; j++)
				t[i].ring[j].sec = -1;
			p->nt++;
		}
		struct pool_thread *t = &p->t[i];
		int loop = is_loop(s, p->pid, t->tid);
		if (t->loop && !loop)
			thread_open(t, p->pid);
		else if (!t->loop && loop)
			thread_close(t);
		t->loop = loop;
		t->seen = 1;
	}
	size_t j = 0;
	for (size_t i = 0; i < p->nt; i++) {
		if (p->t[i].seen)
			p->t[j++] = p->t[i];
		else
			thread_close(&p->t[i]);
	}
	qsort(p->t, j, sizeof(*p->t), by_tid);
	p->nt = j;
}

/* The processes with a live loop, each listed once; the others' dropped. */
static void follow_processes(struct sampler *s, struct sampler_pools *P, uint64_t now)
{
	for (size_t i = 0; i < P->np; i++)
		P->p[i].seen = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct sworker *w = s->w[i];
		size_t k;
		if (w->gone_ns || w->sched || w->member || !(w->instrumented || sampler_is_loop(w)))
			continue;
		if (!idmap_get(&P->by_pid, (uint64_t)w->pid, &k)) {
			if (P->np >= POOL_MAX_PROCS)
				continue;
			struct pool_proc *np = realloc(P->p, (P->np + 1) * sizeof(*np));
			if (!np || idmap_put(&P->by_pid, (uint64_t)w->pid, P->np) < 0) {
				if (np)
					P->p = np;
				continue;
			}
			P->p = np;
			k = P->np;
			P->p[P->np++] = (struct pool_proc){ .pid = w->pid, .first_ns = now };
		}
		P->p[k].seen = 1;
	}
	size_t j = 0;
	for (size_t i = 0; i < P->np; i++) {
		if (P->p[i].seen) {
			P->p[j++] = P->p[i];
			continue;
		}
		for (size_t k = 0; k < P->p[i].nt; k++)
			thread_close(&P->p[i].t[k]);
		free(P->p[i].t);
	}
	if (j != P->np) {
		P->np = j;
		idmap_clear(&P->by_pid);
		for (size_t i = 0; i < P->np; i++)
			idmap_put(&P->by_pid, (uint64_t)P->p[i].pid, i);
	}
}

/* ---- sampling ---- */

/*
 * A wait on key: counted, and the thread's pool is the key it waits on
 * most, a condvar's first: glibc's condvar waits are FUTEX_WAIT_BITSET, its
 * mutexes' FUTEX_WAIT, and a pool woken by a broadcast queues on its mutex
 * (300 threads on one condvar read as two pools without this).
 */
static void note_wait(struct pool_thread *t, uint64_t key, int kind)
{
	int i = 0, least = 0;
	while (i < POOL_KEYS && t->key_n[i] && t->keys[i] != key) {
		if (t->key_n[i] < t->key_n[least])
			least = i;
		i++;
	}
	if (i == POOL_KEYS)
		i = least;   /* a rare key takes the rarest one's place */
	if (t->keys[i] != key || !t->key_n[i]) {
		t->keys[i] = key;
		t->key_n[i] = 0;
		t->key_cond[i] = 0;
	}
	t->key_n[i]++;
	t->key_cond[i] |= kind == PROBE_FUTEX_WAIT_BITSET;
	int best = -1;
	for (int k = 0; k < POOL_KEYS; k++)
		if (t->key_n[k] && (best < 0 || t->key_cond[k] > t->key_cond[best] ||
				    (t->key_cond[k] == t->key_cond[best] && t->key_n[k] > t->key_n[best])))
			best = k;
	t->member = t->keys[best];
}

/*
 * t's sample now. Most pool threads wait most of the time, and a thread
 * that was off the CPU at its last read and has not been put on one since
 * (schedstat, read before that read) is still in that wait: the schedstat
 * file costs a third of the syscall file (probe_schedstat_unchanged says
 * why, and what it misses: a thread woken but not yet run). A thread found
 * running is read directly, without a reference.
 */
static int thread_read(struct pool_thread *t, struct probe_sc_sample *smp)
{
	struct probe_schedstat now = { 0 };
	int have_now = t->last_off && probe_schedstat_sample(&t->ss, &now) == 0;
	if (have_now && probe_schedstat_unchanged(&t->ref, &now)) {
		*smp = t->last;
		return 0;
	}
	/* a reference for the next read, unless the thread was running: it likely still is */
	if (!t->last_off && t->last.state != PROBE_SC_RUNNING)
		have_now = probe_schedstat_sample(&t->ss, &now) == 0;
	if (probe_syscall_sample(&t->sc, smp) < 0)
		return -1;
	t->last = *smp;
	t->last_off = have_now && smp->state != PROBE_SC_RUNNING;
	t->ref = now;
	return 0;
}

static void sample_thread(struct pool_thread *t, uint64_t now)
{
	struct probe_sc_sample smp;
	uint64_t key;
	if (thread_read(t, &smp) < 0 || smp.state == PROBE_SC_GONE || smp.state == PROBE_SC_NO_ACCESS)
		return;
	int waits = probe_sc_futex_wait(&smp, &key);
	if (waits)
		note_wait(t, key, waits);
	int idle = waits && key == t->member, run = smp.state == PROBE_SC_RUNNING;
	struct pool_sec *r = &t->ring[(now / NS) % SERIES_DETAIL_S];
	if (r->sec != (int64_t)(now / NS))
		*r = (struct pool_sec){ .sec = (int64_t)(now / NS) };
	r->n++;
	r->idle += idle;
	r->run += run;
	t->sec_n++;
	t->sec_idle += idle;
	t->sec_run += run;
	t->tot_n++;
	t->tot_idle += idle;
	t->tot_run += run;
}

void sampler_sample_pools(struct sampler *s, uint64_t now)
{
	struct sampler_pools *P = s->pools;
	if (!P)
		return;
	for (size_t i = 0; i < P->np; i++) {
		struct pool_proc *p = &P->p[i];
		size_t nread = p->nread;   /* a loop's process alone has none: one load a tick */
		if (!nread)
			continue;
		double hz = s->rate_hz / POOL_BUDGET_DIV / (double)nread;
		if (hz > s->rate_hz / POOL_THREAD_DIV)
			hz = s->rate_hz / POOL_THREAD_DIV;
		for (size_t k = 0; k < p->nt; k++) {
			struct pool_thread *t = &p->t[k];
			if (t->loop || now < t->next_ns)
				continue;
			sample_thread(t, now);
			/* random gaps, as the loops' ticks: no aliasing with a period */
			double jitter = 0.5 + (double)rand_r(&s->rng) / ((double)RAND_MAX + 1.0);
			t->next_ns = now + (uint64_t)(jitter * 1e9 / hz);
		}
	}
}

/* ---- grouping ---- */

/* The figures one pass gives a pool: its threads, samples and busy ones. */
struct pool_fig {
	uint64_t key;
	enum snap_pool_kind kind;
	unsigned threads;
	uint64_t n, busy;
};

/* Runnable, or out of its pool's wait, in >= 90% of its recent samples. */
static int saturated(const struct pool_thread *t, int64_t now_sec, int by_wait)
{
	uint64_t n = 0, busy = 0;
	for (int64_t sec = now_sec; sec >= 0 && sec > now_sec - HELPER_MAX_S && n < HELPER_RECENT_N; sec--) {
		const struct pool_sec *r = &t->ring[sec % SERIES_DETAIL_S];
		if (r->sec == sec) {
			n += r->n;
			busy += by_wait ? (uint64_t)(r->n - r->idle) : r->run;
		}
	}
	return n >= HELPER_MIN_N && busy * 100 >= n * HELPER_BUSY_PCT;
}

/* The key t is a pool's member by: the key it waits on most, but for a
 * saturated thread only a condition variable's (FUTEX_WAIT_BITSET): a
 * thread that never waits for work and is caught now and then on a mutex
 * is contending for its pool's lock, not in another pool. 0: none. */
static uint64_t member_of(const struct pool_thread *t, int64_t now_sec)
{
	if (!t->member)
		return 0;
	for (int k = 0; k < POOL_KEYS; k++)
		if (t->keys[k] == t->member && t->key_n[k] && !t->key_cond[k] && saturated(t, now_sec, 1))
			return 0;
	return t->member;
}

/* The condvar pool of p that busy helpers belong to: the key with the most
 * saturated members (0: none). A saturated pool's threads rarely wait, so
 * one caught waiting names the pool and the others, never caught, are its
 * too: node's threadpool of 2 under pbkdf2 reads as one pool of 2 whether
 * one, both or neither of its threads was seen in the condvar's wait. */
static uint64_t saturated_pool(const struct pool_proc *p, int64_t now_sec)
{
	uint64_t best = 0;
	unsigned best_n = 0;
	for (size_t k = 0; k < p->nt; k++) {
		uint64_t key = p->t[k].loop ? 0 : member_of(&p->t[k], now_sec);
		if (!key || !saturated(&p->t[k], now_sec, 1))
			continue;
		unsigned n = 0;
		for (size_t j = 0; j < p->nt; j++)
			n += !p->t[j].loop && member_of(&p->t[j], now_sec) == key && saturated(&p->t[j], now_sec, 1);
		if (n > best_n || (n == best_n && key < best)) {
			best = key;
			best_n = n;
		}
	}
	return best;
}

/* t's group in p: its pool's key and kind; 0 when it is in none. A busy
 * helper is a thread not a loop, never seen waiting for work (or only on a
 * mutex), busy >= 90% of its recent samples: sat_key's member, or of the
 * helpers. */
static int group_of(const struct pool_thread *t, int64_t now_sec, uint64_t sat_key, uint64_t *key,
		    enum snap_pool_kind *kind)
{
	if (t->loop)
		return 0;
	if ((*key = member_of(t, now_sec))) {
		*kind = SNAP_POOL_CONDVAR;
		return 1;
	}
	/* seen only on a mutex: busy out of that wait (its jobs may sleep or
	 * block); never seen waiting: runnable, or a thread blocked for good
	 * elsewhere would count */
	if (!saturated(t, now_sec, t->member != 0))
		return 0;
	*key = sat_key;
	*kind = sat_key ? SNAP_POOL_CONDVAR : SNAP_POOL_HELPERS;
	return 1;
}

/* Adds a thread's (n, busy) to key's entry of figs (at most cap). */
static struct pool_fig *fig_of(struct pool_fig *figs, size_t *nf, size_t cap, uint64_t key, enum snap_pool_kind kind)
{
	for (size_t i = 0; i < *nf; i++)
		if (figs[i].key == key && figs[i].kind == kind)
			return &figs[i];
	if (*nf == cap)
		return NULL;
	figs[*nf] = (struct pool_fig){ .key = key, .kind = kind };
	return &figs[(*nf)++];
}

/* The busier of two pools: the larger busy share, then more threads. */
static int busier(const struct pool_fig *a, const struct pool_fig *b)
{
	if (!b)
		return 1;
	double x = (double)a->busy * (double)b->n, y = (double)b->busy * (double)a->n;
	return x > y || (x == y && a->threads > b->threads);
}

/* The last second's busiest pool of p into each of its loops' series. */
static void flush_second(struct sampler *s, struct pool_proc *p, uint64_t now)
{
	struct pool_fig figs[POOL_KEYS * 4];
	size_t nf = 0;
	int64_t now_sec = (int64_t)(now / NS);
	uint64_t sat_key = saturated_pool(p, now_sec), key;
	enum snap_pool_kind kind;
	for (size_t k = 0; k < p->nt; k++) {
		struct pool_thread *t = &p->t[k];
		if (t->loop)
			continue;
		struct pool_fig *f = NULL;
		if (group_of(t, now_sec, sat_key, &key, &kind))
			f = fig_of(figs, &nf, sizeof(figs) / sizeof(figs[0]), key, kind);
		if (f) {
			f->threads++;
			f->n += t->sec_n;
			/* a thread's busy samples are those out of its wait; a helper's never seen waiting, those runnable */
			f->busy += t->member ? t->sec_n - t->sec_idle : t->sec_run;
		}
		t->sec_n = t->sec_idle = t->sec_run = 0;
	}
	const struct pool_fig *best = NULL;
	for (size_t i = 0; i < nf; i++)
		if (figs[i].n && busier(&figs[i], best))
			best = &figs[i];
	if (!best)
		return;
	/* not a helper loop's: it hands the pool no work (node's second loop) */
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->pid == p->pid && !w->gone_ns && !w->sched && !w->member && (w->instrumented || sampler_is_loop(w)) &&
		    w->role != SNAP_ROLE_HELPER)
			series_add_pool(&w->series, now, best->threads, (uint32_t)best->n, (uint32_t)best->busy);
	}
}

void sampler_read_pools(struct sampler *s, uint64_t now)
{
	if (!s->pools) {
		if (!(s->pools = calloc(1, sizeof(*s->pools))))
			return;
		idmap_init(&s->pools->by_pid);
	}
	struct sampler_pools *P = s->pools;
	follow_processes(s, P, now);
	for (size_t i = 0; i < P->np; i++) {
		struct pool_proc *p = &P->p[i];
		flush_second(s, p, now);
		rescan(s, p, now);
		p->nread = 0;
		for (size_t k = 0; k < p->nt; k++)
			p->nread += !p->t[k].loop;
	}
}

/* ---- the snapshot ---- */

/* t's samples over seconds [lo, now_sec] (lo > now_sec: the whole run). */
static void window_counts(const struct pool_thread *t, int64_t lo, int64_t now_sec, uint64_t c[3])
{
	if (lo > now_sec) {
		c[0] = t->tot_n, c[1] = t->tot_idle, c[2] = t->tot_run;
		return;
	}
	c[0] = c[1] = c[2] = 0;
	for (int64_t sec = lo < 0 ? 0 : lo; sec <= now_sec; sec++) {
		const struct pool_sec *r = &t->ring[sec % SERIES_DETAIL_S];
		if (r->sec == sec) {
			c[0] += r->n;
			c[1] += r->idle;
			c[2] += r->run;
		}
	}
}

/* The pool (pid, key, kind) of the snapshot, made if need be: NULL without
 * memory, or when the process has SNAP_POOLS_PER_PROC already (a process
 * of 1,000 threads each on a condition variable of its own is 1,000
 * "pools", none of them a pool; the first ones found are kept, and the
 * threads of the rest counted as dropped). */
static struct snap_pool *snap_pool_of(struct snapshot *snap, pid_t pid, uint64_t key, enum snap_pool_kind kind,
				      size_t first)
{
	for (size_t i = first; i < snap->npools; i++)
		if (snap->pools[i].key == key && snap->pools[i].kind == kind)
			return &snap->pools[i];
	if (snap->npools - first >= SNAP_POOLS_PER_PROC) {
		snap->pool_threads_dropped++;
		return NULL;
	}
	if (snap->npools == snap->poolcap) {
		size_t cap = snap->poolcap ? snap->poolcap * 2 : 8;
		struct snap_pool *np = realloc(snap->pools, cap * sizeof(*np));
		if (!np)
			return NULL;
		snap->pools = np;
		snap->poolcap = cap;
	}
	struct snap_pool *sp = &snap->pools[snap->npools++];
	memset(sp, 0, sizeof(*sp));
	sp->pid = pid;
	sp->key = key;
	sp->kind = kind;
	return sp;
}

void sampler_snapshot_pools(struct sampler *s, struct snapshot *snap, double window_s)
{
	snap->npools = 0;
	snap->pool_threads_dropped = 0;
	const struct sampler_pools *P = s->pools;
	if (!P)
		return;
	int64_t now_sec = (int64_t)(snap->now_ns / NS);
	int64_t lo = window_s > 0 ? now_sec - series_window_span(window_s) + 1 : now_sec + 1;
	for (size_t i = 0; i < P->np; i++) {
		const struct pool_proc *p = &P->p[i];
		size_t first = snap->npools;
		uint64_t sat_key = saturated_pool(p, now_sec), key;
		enum snap_pool_kind kind;
		for (size_t k = 0; k < p->nt; k++) {
			const struct pool_thread *t = &p->t[k];
			uint64_t c[3];
			if (!group_of(t, now_sec, sat_key, &key, &kind))
				continue;
			window_counts(t, lo, now_sec, c);
			struct snap_pool *sp = snap_pool_of(snap, p->pid, key, kind, first);
			if (!sp)
				continue;
			if (sp->nthreads < SNAP_POOL_TIDS)
				sp->tids[sp->nthreads] = t->tid;
			sp->nthreads++;
			sp->n += c[0];
			sp->busy += t->member ? c[0] - c[1] : c[2];
		}
	}
}

void sampler_free_pools(struct sampler *s)
{
	struct sampler_pools *P = s->pools;
	if (!P)
		return;
	for (size_t i = 0; i < P->np; i++) {
		for (size_t k = 0; k < P->p[i].nt; k++)
			thread_close(&P->p[i].t[k]);
		free(P->p[i].t);
	}
	free(P->p);
	idmap_done(&P->by_pid);
	free(P);
	s->pools = NULL;
}
