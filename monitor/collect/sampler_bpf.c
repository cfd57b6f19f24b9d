/*
 * sampler_bpf.c — the bpf source beside the /proc samples: where it loads
 * (--source auto or bpf), the kernel counts each worker's loop poll, its
 * run-queue wait, its poll's returned events and every busy span; once a
 * second those readings go into the worker's series as exact readings
 * (series_add_exact), which the model prefers to the samples' estimates.
 * The samples still say where a busy thread is (blocked on what, stacks).
 * Stalls come from the kernel's ring buffer, with the stack of the moment
 * (sampler_stall.c unwinds it).
 */
#include "collect/sampler_bpf.h"
#include "collect/sampler_int.h"
#include "collect/sampler_stall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_bpf.h"

struct sampler_bpf {
	struct probe_bpf *b;              /* owned */
	struct idmap watched;             /* pid -> 1 */
	struct probe_bpf_thread *rows;    /* one second's reading, owned */
	struct sworker **ws;              /* the worker of each row, NULL: none (owned array) */
	struct series_exact *ex;          /* and its exact reading */
	size_t cap;
	struct idmap row_of;              /* tid -> its row, this second */
	struct probe_bpf_off *off;        /* off-CPU time by (thread, syscall), owned */
};

#define OFF_CAP (4 * 8192)            /* the kernel map's size (loopstat_bpf.h) */

const char *sampler_source_name(enum sampler_source src)
{
	switch (src) {
	case SAMPLER_SOURCE_AUTO: return "auto";
	case SAMPLER_SOURCE_BPF: return "bpf";
	case SAMPLER_SOURCE_PROC: return "proc";
	}
	return "?";
}

int sampler_bpf_open(struct sampler *s, enum sampler_source want)
{
	snprintf(s->source, sizeof(s->source), "proc");
	s->source_why[0] = '\0';
	if (want == SAMPLER_SOURCE_PROC)
		return 0;
	char why[sizeof(s->source_why) - 32];
	struct probe_bpf *b = NULL;
	int err = probe_bpf_open(&b, why, sizeof(why));
	if (err < 0) {
		snprintf(s->source_why, sizeof(s->source_why), "bpf unavailable: %s", why);
		return want == SAMPLER_SOURCE_BPF ? err : 0;
	}
	struct sampler_bpf *x = calloc(1, sizeof(*x));
	if (!x) {
		probe_bpf_close(b);
		return -ENOMEM;
	}
	x->b = b;
	idmap_init(&x->watched);
	idmap_init(&x->row_of);
	if (s->stall_ns)
		probe_bpf_set_stall_ms(b, (double)s->stall_ns / 1e6);
	s->bpf = x;
	snprintf(s->source, sizeof(s->source), "bpf");
	return 0;
}

int sampler_bpf_active(const struct sampler *s)
{
	return s->bpf != NULL;
}

void sampler_bpf_close(struct sampler *s)
{
	struct sampler_bpf *x = s->bpf;
	if (!x)
		return;
	probe_bpf_close(x->b);
	idmap_done(&x->watched);
	idmap_done(&x->row_of);
	free(x->rows);
	free(x->ws);
	free(x->ex);
	free(x->off);
	free(x);
	s->bpf = NULL;
}

/* The kernel's span buckets that grew since the worker's last reading, in
 * the series' lag bins (each bucket at its middle, within 3 % of its
 * spans), those middles summed per bin in sums, and the longest. */
static void span_bins(struct sworker *w, const struct probe_bpf_thread *t, uint32_t *bins, uint64_t *sums,
		      uint64_t *max_ns)
{
	memset(bins, 0, SERIES_LAG_BINS * sizeof(*bins));
	memset(sums, 0, SERIES_LAG_BINS * sizeof(*sums));
	*max_ns = t->span_now_ns;
	if (!w->bpf_hist) {
		/* spans before the first reading belong to no second of ours */
		w->bpf_hist = malloc(sizeof(t->hist));
		if (w->bpf_hist)
			memcpy(w->bpf_hist, t->hist, sizeof(t->hist));
		return;
	}
	for (int k = 0; k < PROBE_BPF_HIST; k++) {
		uint32_t d = t->hist[k] >= w->bpf_hist[k] ? t->hist[k] - w->bpf_hist[k] : 0;
		if (!d)
			continue;
		uint64_t lo = probe_bpf_bucket_lo(k), hi = probe_bpf_bucket_lo(k + 1);
		uint64_t mid = lo + (hi - lo) / 2;
		int bin = series_lag_bin(mid);
		bins[bin] += d;
		sums[bin] += d * mid;
		uint64_t top = hi < t->span_max_ns ? hi : t->span_max_ns;
		if (top > *max_ns)
			*max_ns = top;
	}
	memcpy(w->bpf_hist, t->hist, sizeof(t->hist));
}

static void on_stall(const struct probe_bpf_stall *e, void *arg)
{
	struct sampler *s = arg;
	struct sworker *w = sampler_find_worker(s, e->tgid, e->tid);
	if (w)
		sampler_stall_bpf(s, w, e);
}

uint64_t sampler_bpf_hot(const struct sampler *s, const struct sworker *w)
{
	/* only a thread whose readings came: its process is watched, and its
	 * loop's poll is the one the kernel counts */
	if (!s->bpf || !w->series.exact_spans)
		return 0;
	return probe_bpf_in_poll(s->bpf->b, w->tid);
}

/* ns off a CPU in syscall nr into w's exact reading e: blocked, and by
 * syscall in the place nr has (given one now if there is room). */
static void add_off(struct sworker *w, struct series_exact *e, long nr, uint64_t ns)
{
	if (nr < 0)
		return;   /* outside a syscall, or asleep in the loop's own poll */
	e->blocked_ns += ns;
	int j = 0;
	while (j < w->bpf_noff && w->bpf_off_nr[j] != nr)
		j++;
	if (j == w->bpf_noff) {
		if (j == SERIES_EXACT_OFF)
			return;
		w->bpf_off_nr[w->bpf_noff++] = (int32_t)nr;
	}
	e->off_ns[j] += ns;
}

static int grow(struct sampler_bpf *x, size_t want)
{
	if (x->cap >= want)
		return 0;
	struct probe_bpf_thread *r = realloc(x->rows, want * sizeof(*r));
	if (r)
		x->rows = r;
	struct sworker **ws = realloc(x->ws, want * sizeof(*ws));
	if (ws)
		x->ws = ws;
	struct series_exact *ex = realloc(x->ex, want * sizeof(*ex));
	if (ex)
		x->ex = ex;
	if (!r || !ws || !ex)
		return -ENOMEM;
	x->cap = want;
	return 0;
}

/* Off-CPU time by syscall into each row's reading: the kernel's completed
 * stints, and the one in progress. */
static void read_offcpu(struct sampler_bpf *x, int n)
{
	if (!x->off && !(x->off = calloc(OFF_CAP, sizeof(*x->off))))
		return;
	idmap_clear(&x->row_of);
	for (int i = 0; i < n; i++)
		if (x->ws[i])
			idmap_put(&x->row_of, (uint64_t)x->rows[i].tid, (size_t)i);
	int m = probe_bpf_offcpu(x->b, x->off, OFF_CAP);
	size_t i;
	for (int k = 0; k < m; k++)
		if (idmap_get(&x->row_of, (uint64_t)x->off[k].tid, &i))
			add_off(x->ws[i], &x->ex[i], x->off[k].nr, x->off[k].ns);
	for (int r = 0; r < n; r++) {
		if (!x->ws[r])
			continue;
		if (x->rows[r].off_now_ns)
			add_off(x->ws[r], &x->ex[r], x->rows[r].off_nr, x->rows[r].off_now_ns);
		for (int j = 0; j < SERIES_EXACT_OFF; j++)
			x->ex[r].off_nr[j] = j < x->ws[r]->bpf_noff ? x->ws[r]->bpf_off_nr[j] : -1;
	}
}

void sampler_bpf_read(struct sampler *s, uint64_t now)
{
	struct sampler_bpf *x = s->bpf;
	if (!x)
		return;
	size_t v;
	for (size_t i = 0; i < s->n; i++) {
		pid_t pid = s->w[i]->pid;
		if (!s->w[i]->gone_ns && !idmap_get(&x->watched, (uint64_t)pid, &v) &&
		    probe_bpf_watch(x->b, pid) == 0)
			idmap_put(&x->watched, (uint64_t)pid, 1);
	}
	if (grow(x, s->n + 64) < 0)
		return;
	int n = probe_bpf_read(x->b, 0, x->rows, x->cap);
	for (int i = 0; i < n; i++) {
		const struct probe_bpf_thread *t = &x->rows[i];
		struct sworker *w = sampler_find_worker(s, t->tgid, t->tid);
		x->ws[i] = w && !w->gone_ns ? w : NULL;
		/* the reading's instant on the series' clock (CLOCK_MONOTONIC less t0) */
		uint64_t at = t->now_ns > s->t0 ? t->now_ns - s->t0 : now;
		x->ex[i] = (struct series_exact){
			.valid = 1, .t_ns = at, .poll_ns = t->poll_ns, .rq_ns = t->rq_ns, .oncpu_ns = t->oncpu_ns,
			.events = t->poll_events, .returns = t->poll_returns,
		};
	}
	read_offcpu(x, n);
	for (int i = 0; i < n; i++) {
		if (!x->ws[i])
			continue;
		uint32_t bins[SERIES_LAG_BINS];
		uint64_t sums[SERIES_LAG_BINS], max_ns;
		span_bins(x->ws[i], &x->rows[i], bins, sums, &max_ns);
		series_add_exact(&x->ws[i]->series, &x->ex[i], bins, sums, max_ns);
	}
	if (s->stall)
		probe_bpf_drain(x->b, on_stall, s);
}
