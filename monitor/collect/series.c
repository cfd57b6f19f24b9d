/*
 * series.c — feeding one worker's series: classified samples, shm readings
 * and schedstat readings into per-second buckets, a compact history and
 * run totals. Reading windows out of them is model_window.c's job.
 */
#include "collect/series.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ull
/* A stall shorter than this is ordinary scheduling, not worth a report. */
#define STALL_MIN_NS (250ull * 1000000)

void series_init(struct series *a)
{
	memset(a, 0, sizeof(*a));
	for (int i = 0; i < SERIES_DETAIL_S; i++)
		a->detail[i].sec = -1;
	for (int i = 0; i < SERIES_HISTORY; i++)
		a->hist[i].sec = -1;
	a->first_sec = -1;
}

static struct series_bucket *bucket(struct series *a, int64_t sec)
{
	struct series_bucket *b = &a->detail[sec % SERIES_DETAIL_S];
	if (b->sec != sec) {
		memset(b, 0, sizeof(*b));
		b->sec = sec;
	}
	return b;
}

void series_add_block(struct series_block *blocks, int nkeys, uint32_t *overflow, long nr, int fd, uint32_t n)
{
	for (int i = 0; i < nkeys; i++) {
		if (blocks[i].n && blocks[i].nr == nr && blocks[i].fd == fd) {
			blocks[i].n += n;
			return;
		}
		if (!blocks[i].n) {
			blocks[i] = (struct series_block){ nr, fd, n };
			return;
		}
	}
	*overflow += n;
}

int series_class_of(enum probe_class c)
{
	switch (c) {
	case PROBE_POLL: return SERIES_POLL;
	case PROBE_RUNNING: return SERIES_RUNNING;
	case PROBE_BLOCKED: return SERIES_BLOCKED;
	case PROBE_OTHER: return SERIES_OTHER;
	default: return -1;
	}
}

/* The compact history's slot of second sec, emptied if it held an older one. */
static int hist_at(struct series *a, int64_t sec)
{
	int h = (int)(sec % SERIES_HISTORY);
	if (a->hist[h].sec != sec)
		a->hist[h] = (struct series_hist){ .sec = sec };
	return h;
}

static void add_key(struct series_totals *t, int c, const struct probe_verdict *v, const struct series_ctx *ctx,
		    uint32_t w)
{
	struct series_key k = { .cls = (uint8_t)c, .nr = -1, .fd = -1, .fiber = ctx ? ctx->fiber : 0 };
	if (c == SERIES_POLL || c == SERIES_BLOCKED) {
		k.nr = (int32_t)v->nr;
		k.fd = v->fd;
		k.pc = ctx ? ctx->pc : 0;
	}
	for (int i = 0; i < SERIES_KEYS; i++) {
		struct series_key *e = &t->keys[i];
		if (!e->n) {
			*e = k;
		} else if (e->cls != k.cls || e->nr != k.nr || e->fd != k.fd || e->pc != k.pc || e->fiber != k.fiber) {
			continue;
		}
		e->n += w;
		e->sp = ctx ? ctx->sp : 0;
		return;
	}
	t->keys_overflow += w;
}

int series_lag_bin(uint64_t ns)
{
	if (ns < (1ull << SERIES_LAG_SHIFT))
		return 0;
	int e = 63 - __builtin_clzll(ns);   /* 2^e <= ns < 2^(e+1) */
	int bin = (e - SERIES_LAG_SHIFT) * 4 + (int)((ns >> (e - 2)) & 3);
	return bin < SERIES_LAG_BINS ? bin : SERIES_LAG_BINS - 1;
}

void series_lag_edges(int bin, double *lo, double *hi)
{
	int e = SERIES_LAG_SHIFT + bin / 4;
	double quarter = ldexp(1, e - 2);
	*lo = ldexp(1, e) + (bin % 4) * quarter;
	*hi = *lo + quarter;
	if (bin == 0)
		*lo = 0;
}

/* A busy span seen, or one in progress, as long as ns so far. */
static void lag_note_max(struct series *a, struct series_bucket *b, uint64_t ns)
{
	uint64_t us = ns / 1000;
	if (us > b->lag_max_us)
		b->lag_max_us = us < UINT32_MAX ? (uint32_t)us : UINT32_MAX;
	if (ns > a->total.lag_max_ns)
		a->total.lag_max_ns = ns;
}

/* n spans of bin k, sum_ns long together, into second b and the totals. */
static void count_spans(struct series *a, struct series_bucket *b, int k, uint32_t n, uint64_t sum_ns)
{
	uint32_t c = b->lag_n[k] + n;
	b->lag_n[k] = c < UINT16_MAX ? (uint16_t)c : UINT16_MAX;
	uint64_t add_us = sum_ns / 1000, us = b->lag_sum_us[k] + add_us;
	b->lag_sum_us[k] = us < UINT32_MAX ? (uint32_t)us : UINT32_MAX;
	a->total.lag_n[k] += n;
	a->total.lag_sum_us[k] += add_us;
}

/* A wait longer than this between two samples is the sampler's (paused,
 * held up), not a rate's: no span is measured across it. */
#define SPAN_GAP_MAX_NS (2 * NS)

/* The busy-span estimate (series.h): a span starts midway between a sample
 * in the poll and the next one out of it, and ends midway between the
 * last one out of it and the next one in it. Where the sampler skipped
 * this worker's ticks in between (gap: the last tick's, precision.h), the
 * change is put half a tick from the nearer sample, as if no tick had been
 * skipped: the span is then at least as long as measured, resolved to a
 * tick like the rest. */
static void track_span(struct series *a, struct series_bucket *b, uint64_t t, int busy, uint64_t gap, uint64_t due)
{
	uint64_t prev = a->span_prev_ns;
	/* a hole: an idle gap in it (a 110-ms tick under an idle compile, 1
	 * run in 15) went unseen, and two spans would read as one */
	uint64_t hole = SERIES_HOLE * due > SERIES_HOLE_MIN_NS ? SERIES_HOLE * due : SERIES_HOLE_MIN_NS;
	if (prev && (t <= prev || t - prev > SPAN_GAP_MAX_NS || (due && t - prev > hole)))
		prev = a->span_start_ns = 0;
	uint64_t half = gap && prev && t - prev > gap ? gap / 2 : 0;   /* 0: the midpoint */
	if (!busy && a->span_start_ns) {
		uint64_t end = half ? prev + half : prev + (t - prev) / 2;
		uint64_t ns = end > a->span_start_ns ? end - a->span_start_ns : 0;
		count_spans(a, b, series_lag_bin(ns), 1, ns);
		lag_note_max(a, b, ns);
		/* a stall captured in this span gets the span's whole length, and
		 * how far the ticks around its ends let it be from that */
		for (int i = 0; i < SERIES_STALLS; i++) {
			struct series_stall *st = &a->stalls[i];
			if (st->t_ns && !st->ended && st->span_start_ns == a->span_start_ns) {
				st->dur_ms = (uint32_t)(ns / 1000000);
				st->lo_ms = (uint32_t)((prev - a->span_busy_ns) / 1000000);
				st->hi_ms = (uint32_t)((t - a->span_idle_ns + 999999) / 1000000);
				st->ended = 1;
			}
		}
		a->span_start_ns = 0;
	} else if (busy) {
		if (!a->span_start_ns && prev && !a->span_prev_busy) {
			a->span_start_ns = half ? t - half : prev + (t - prev) / 2;
			a->span_idle_ns = prev;
			a->span_busy_ns = t;
		}
		if (a->span_start_ns)
			lag_note_max(a, b, t - a->span_start_ns);
	}
	a->span_prev_ns = t;
	a->span_prev_busy = (uint8_t)busy;
}

void series_add_exact(struct series *a, const struct series_exact *e, const uint32_t *spans, const uint64_t *sums_ns,
		       uint64_t max_ns)
{
	int64_t sec = (int64_t)(e->t_ns / NS);
	struct series_bucket *b = bucket(a, sec);
	/* the kernel saw its loop's poll return: a worker, even one so busy
	 * (saturated from the start) that no sample ever finds it waiting */
	if (a->exact_last.valid && e->returns > a->exact_last.returns)
		a->polls_seen++;
	b->exact = *e;
	b->exact.valid = 1;
	if (!a->total.exact_first.valid)
		a->total.exact_first = b->exact;
	a->exact_last = b->exact;
	a->exact_spans = 1;
	a->span_start_ns = a->span_prev_ns = 0;
	for (int k = 0; k < SERIES_LAG_BINS; k++)
		if (spans[k])
			count_spans(a, b, k, spans[k], sums_ns[k]);
	if (max_ns)
		lag_note_max(a, b, max_ns);
}

/* One sample of class c (of verdict v) counted w times into bucket b of
 * second sec: all but the span, which a tick tracks once. */
static void add_counts(struct series *a, struct series_bucket *b, int64_t sec, int c, const struct probe_verdict *v,
		       const struct series_ctx *ctx, uint32_t w)
{
	add_key(&a->total, c, v, ctx, w);
	b->n[c] += w;
	b->n2[c] += w * w;
	b->taken++;
	a->total.n[c] += w;
	a->total.n2[c] += (uint64_t)w * w;
	if (c == SERIES_BLOCKED) {
		series_add_block(b->blocks, SERIES_BLOCK_KEYS, &b->blocks_overflow, v->nr, v->fd, w);
		series_add_block(a->total.blocks, SERIES_BLOCK_KEYS * 2, &a->total.blocks_overflow, v->nr, v->fd, w);
	}
	int h = hist_at(a, sec);
	struct series_hist *hs = &a->hist[h];
	if (hs->n <= UINT16_MAX - w) {
		hs->n += w;
		hs->poll += c == SERIES_POLL ? w : 0;
		hs->run += c == SERIES_RUNNING ? w : 0;
	}
	if (a->first_sec < 0)
		a->first_sec = sec;
	a->samples++;
	if (c == SERIES_POLL) {
		a->polls_seen++;
		a->polled_since_change = 1;
	} else if (c == SERIES_RUNNING || c == SERIES_BLOCKED) {
		a->busy_since_change = 1;
	}
}

void series_add_sample(struct series *a, uint64_t t_ns, const struct probe_verdict *v, const struct series_ctx *ctx)
{
	int c = series_class_of(v->cls);
	if (c < 0) {
		/* GONE / NO_ACCESS are not time the worker spent anywhere, and
		 * no span is measured across them */
		a->span_prev_ns = a->span_start_ns = 0;
		return;
	}
	int64_t sec = (int64_t)(t_ns / NS);
	struct series_bucket *b = bucket(a, sec);
	add_counts(a, b, sec, c, v, ctx, ctx && ctx->weight ? ctx->weight : 1);
	if (!a->exact_spans)   /* the kernel's spans (series_add_exact) stand instead */
		track_span(a, b, t_ns, c != SERIES_POLL, ctx ? ctx->tick_gap_ns : 0, ctx ? ctx->due_ns : 0);
}

void series_add_pooled(struct series *a, uint64_t t_ns, uint32_t capacity, uint32_t running, uint32_t blocked,
		       const struct probe_verdict *blocked_v)
{
	static const struct probe_verdict idle = { .cls = PROBE_POLL, .nr = -1, .fd = -1 };
	static const struct probe_verdict run = { .cls = PROBE_RUNNING, .nr = -1, .fd = -1 };
	int64_t sec = (int64_t)(t_ns / NS);
	struct series_bucket *b = bucket(a, sec);
	for (uint32_t i = 0; i < capacity; i++) {
		const struct probe_verdict *v = i < running ? &run : i < running + blocked ? blocked_v : &idle;
		add_counts(a, b, sec, series_class_of(v->cls), v, NULL, 1);
	}
	/* a pool's busy span: every thread of its capacity out of its park */
	a->pooled = 1;
	track_span(a, b, t_ns, running + blocked >= capacity, 0, 0);
}

void series_add_shm(struct series *a, uint64_t t_ns, uint64_t mono_ns, const uint64_t values[PROBE_SHM_NVALUES],
		 const char *fiber_tag)
{
	struct series_bucket *b = bucket(a, (int64_t)(t_ns / NS));
	struct series_reading r = { .valid = 1, .t_ns = t_ns, .mono_ns = mono_ns };
	memcpy(r.v, values, sizeof(r.v));
	uint64_t sw = values[PROBE_SHM_switches];
	if (!a->shm_last.valid || sw != a->last_switches) {
		a->last_switches = sw;
		a->last_change_ns = t_ns;
		a->polled_since_change = 0;
		a->busy_since_change = 0;
	}
	b->shm = r;
	a->shm_last = r;
	if (!a->total.shm_first.valid)
		a->total.shm_first = r;
	uint64_t rq = values[PROBE_SHM_runqueue_len];
	if (rq > b->runq_max)
		b->runq_max = rq;
	if (rq > a->total.runq_max)
		a->total.runq_max = rq;
	/* a stall is a peak figure: its longest length at a reading, kept
	 * per second so that any window (or check's range) has its own */
	uint64_t stall = series_stall_ns(a, t_ns);
	if (stall > b->stall_max_ns)
		b->stall_max_ns = stall;
	if (stall > a->total.stall_max_ns)
		a->total.stall_max_ns = stall;
	snprintf(a->fiber_tag, sizeof(a->fiber_tag), "%s", fiber_tag ? fiber_tag : "");
	uint64_t tag = values[PROBE_SHM_current_tag];
	a->fiber_now = tag <= LOOPSTAT_TAG_MAX ? (uint8_t)tag : 0;
	if (a->fiber_now)
		snprintf(a->fiber_names[a->fiber_now], sizeof(a->fiber_names[0]), "%s", a->fiber_tag);
}

void series_set_fiber(struct series *a, uint32_t tag_index, const char *tag)
{
	a->fiber_now = tag_index <= LOOPSTAT_TAG_MAX ? (uint8_t)tag_index : 0;
	if (!a->fiber_now) {
		a->fiber_tag[0] = '\0'; /* most ticks, for a loop in its poll: no snprintf per sample */
		return;
	}
	snprintf(a->fiber_tag, sizeof(a->fiber_tag), "%s", tag ? tag : "");
	snprintf(a->fiber_names[a->fiber_now], sizeof(a->fiber_names[0]), "%s", a->fiber_tag);
}

/* Spreads the runnable time between two schedstat readings over the
 * seconds of history they span, in proportion to each second's part. */
static void hist_add_runnable(struct series *a, uint64_t t0, uint64_t t1, double busy_ns)
{
	/* a runnable share above 1 (or NaN) is no thread's: a crafted
	 * recording's; clamped, so the cast below stays in range */
	double per_ns = busy_ns / (double)(t1 - t0);
	per_ns = per_ns > 0 ? (per_ns < 1 ? per_ns : 1) : 0;
	int64_t first = (int64_t)(t0 / NS), last = (int64_t)(t1 / NS);
	if (last - first >= SERIES_HISTORY)
		first = last - SERIES_HISTORY + 1;
	for (int64_t sec = first; sec <= last; sec++) {
		uint64_t lo = (uint64_t)sec * NS, hi = lo + NS;
		if (lo < t0)
			lo = t0;
		if (hi > t1)
			hi = t1;
		if (hi <= lo)
			continue;
		int h = hist_at(a, sec);
		a->hist[h].span_us += (uint32_t)((hi - lo) / 1000);
		a->hist[h].busy_us += (uint32_t)(per_ns * (double)(hi - lo) / 1000);
	}
}

void series_add_sched(struct series *a, uint64_t t_ns, uint64_t run_ns, uint64_t wait_ns)
{
	series_add_sched_wakes(a, t_ns, run_ns, wait_ns, 0);
}

void series_add_sched_wakes(struct series *a, uint64_t t_ns, uint64_t run_ns, uint64_t wait_ns, uint64_t wakes)
{
	const struct series_sched *p = &a->sched_last;
	/* read less often than schedstat: a reading carries the latest */
	struct series_sched s = { 1, t_ns, run_ns, wait_ns, wakes, wakes ? t_ns : 0 };
	if (!wakes && p->valid) {
		s.wakes = p->wakes;
		s.wakes_ns = p->wakes_ns;
	}
	if (p->valid && t_ns > p->t_ns && run_ns >= p->run_ns && wait_ns >= p->wait_ns)
		hist_add_runnable(a, p->t_ns, t_ns, (double)(run_ns - p->run_ns + wait_ns - p->wait_ns));
	bucket(a, (int64_t)(t_ns / NS))->sched = s;
	a->sched_last = s;
	if (!a->total.sched_first.valid)
		a->total.sched_first = s;
}

void series_add_cgroup(struct series *a, uint64_t t_ns, uint32_t group, uint64_t throttled_ns, double quota_cpus,
		       int shared_only)
{
	struct series_cgroup c = { 1, group, t_ns, throttled_ns, quota_cpus, shared_only };
	bucket(a, (int64_t)(t_ns / NS))->cg = c;
	a->cg_last = c;
	if (!a->total.cg_first.valid)
		a->total.cg_first = c;
}

void series_add_listen(struct series *a, uint64_t t_ns, uint32_t queue, uint32_t limit)
{
	struct series_listen *l = &bucket(a, (int64_t)(t_ns / NS))->listen;
	l->queue_max = l->valid && l->queue_max > queue ? l->queue_max : queue;
	l->valid = 1;
	l->queue = queue;
	l->limit = limit;
	a->listen_last = *l;
	if (queue > a->total.accept_max)
		a->total.accept_max = queue;
}

void series_add_stall(struct series *a, const struct series_stall *st)
{
	a->stalls[a->total.stalls % SERIES_STALLS] = *st;
	a->total.stalls++;
	bucket(a, (int64_t)(st->t_ns / NS))->stalls++;
}

uint64_t series_span_open_ns(const struct series *a, uint64_t now_ns, uint64_t *start_ns)
{
	*start_ns = a->span_start_ns;
	return a->span_start_ns && now_ns > a->span_start_ns ? now_ns - a->span_start_ns : 0;
}

void series_add_pool(struct series *a, uint64_t t_ns, uint32_t threads, uint32_t n, uint32_t busy)
{
	struct series_pool *p = &bucket(a, (int64_t)(t_ns / NS))->pool;
	p->n = p->valid ? p->n + n : n;
	p->busy = p->valid ? p->busy + busy : busy;
	p->threads = threads;
	p->valid = 1;
	struct series_pool *t = &a->total.pool;
	t->n += n;
	t->busy += busy;
	t->threads = threads;
	t->valid = 1;
}

uint64_t series_stall_ns(const struct series *a, uint64_t now_ns)
{
	if (!a->shm_last.valid || a->polled_since_change || !a->busy_since_change || now_ns < a->last_change_ns)
		return 0;
	uint64_t d = now_ns - a->last_change_ns;
	return d >= STALL_MIN_NS ? d : 0;
}

int64_t series_window_span(double window_s)
{
	int64_t span = (int64_t)ceil(window_s);
	return span > SERIES_DETAIL_S - 1 ? SERIES_DETAIL_S - 1 : span;
}

void series_copy_window(struct series *dst, const struct series *src, int64_t now_sec, double window_s,
			int with_history)
{
	size_t tail = offsetof(struct series, samples); /* the first field of the tail */
	memcpy((char *)dst + tail, (const char *)src + tail, sizeof(*dst) - tail);
	for (int i = 0; i < SERIES_DETAIL_S; i++)
		dst->detail[i].sec = -1;
	if (window_s > 0) {
		/* the window's seconds and the one before it (the rates' baseline) */
		int64_t span = series_window_span(window_s);
		for (int64_t sec = now_sec - span; sec <= now_sec; sec++) {
			if (sec < 0)
				continue;
			const struct series_bucket *b = &src->detail[sec % SERIES_DETAIL_S];
			if (b->sec == sec)
				dst->detail[sec % SERIES_DETAIL_S] = *b;
		}
	}
	if (with_history) {
		memcpy(dst->hist, src->hist, sizeof(src->hist));
	} else {
		for (int i = 0; i < SERIES_HISTORY; i++)
			dst->hist[i].sec = -1;
	}
}
