/*
 * lag.c — busy spans over a range of periods: the runtime's histogram or
 * the sampled one, their percentiles (lag.h).
 */
#include "model/lag.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "probe_shm.h"

/* The last valid slot reading of t's range, and the one its deltas start
 * from (the baseline, else the range's first); NULL when there are none. */
static const struct series_reading *readings(const struct eval_track *t, const struct series_reading **from)
{
	const struct series_reading *last = NULL, *first = NULL;
	for (size_t i = 0; i < t->n; i++) {
		const struct series_bucket *b = t->p[i].b;
		if (b && b->shm.valid) {
			if (!first)
				first = &b->shm;
			last = &b->shm;
		}
	}
	*from = t->shm_base.valid ? &t->shm_base : first;
	return last;
}

/* Adds t's runtime histogram growth over the range to h->n; 0 when t has
 * none (not instrumented, an older writer, no span ended in the range). */
static int add_exact(const struct eval_track *t, struct lag_hist *h)
{
	const struct series_reading *from, *to = readings(t, &from);
	if (!to || !from)
		return 0;
	double d[LOOPSTAT_SPAN_BUCKETS], sum = 0;
	for (int k = 0; k < LOOPSTAT_SPAN_BUCKETS; k++) {
		uint64_t a = from->v[PROBE_SHM_span_h0 + k], b = to->v[PROBE_SHM_span_h0 + k];
		d[k] = b >= a ? (double)(b - a) : 0;   /* a re-acquired slot: a new count */
		sum += d[k];
	}
	if (sum <= 0)
		return 0;
	for (int k = 0; k < LOOPSTAT_SPAN_BUCKETS; k++)
		h->n[k] += d[k];
	h->total += sum;
	return 1;
}

static void add_sampled(const struct eval_track *t, struct lag_hist *h)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct eval_period *p = &t->p[i];
		if (!p->b)
			continue;
		for (int k = 0; k < SERIES_LAG_BINS; k++) {
			double c = p->lag_total ? p->lag_total[k] : p->b->lag_n[k];
			h->n[k] += c;
			h->total += c;
			h->sum[k] += (p->lag_total ? (double)p->lag_sum_total[k] : p->b->lag_sum_us[k]) * 1e3;
		}
	}
}

/* The longest span and what the resolution rule weighs; 1 when t's spans
 * are the kernel's (an exact reading in the range). */
static int sampled_max(const struct eval_track *t, struct lag_hist *h)
{
	int kernel = t->exact_base.valid;
	for (size_t i = 0; i < t->n; i++) {
		const struct eval_period *p = &t->p[i];
		if (!p->b)
			continue;
		/* whole microseconds, as a second's bucket keeps it */
		double m = (p->lag_total ? (double)(p->lag_max_ns / 1000) : p->b->lag_max_us) * 1e3;
		h->max_ns = fmax(h->max_ns, m);
		for (int c = 0; c < SERIES_NCLASS; c++) {
			h->samples |= p->b->n[c] > 0;
			h->all_w += p->b->n[c];
			h->busy_w += c == SERIES_POLL ? 0 : p->b->n[c];
		}
		h->taken += p->lag_total ? (double)p->taken_total : p->b->taken;
		kernel |= p->b->exact.valid;
	}
	/* how often the thread slept in its poll (and woke) between the
	 * readings of it the range's first and last schedstat readings carry */
	const struct series_sched *first = t->sched_base.valid ? &t->sched_base : NULL, *last = NULL;
	for (size_t i = 0; i < t->n; i++) {
		const struct series_bucket *b = t->p[i].b;
		if (b && b->sched.valid) {
			if (!first)
				first = &b->sched;
			last = &b->sched;
		}
	}
	if (first && last && first->wakes_ns && last->wakes_ns > first->wakes_ns && last->wakes >= first->wakes) {
		h->wakes += (double)(last->wakes - first->wakes);
		h->wakes_ns += (double)(last->wakes_ns - first->wakes_ns);
	}
	return kernel;
}

void lag_collect(const struct eval_track *const *ts, size_t nt, struct lag_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->spans_exact = nt > 0;
	for (size_t w = 0; w < nt; w++) {
		h->spans_exact &= sampled_max(ts[w], h);
		h->pooled |= ts[w]->pooled;
	}
	/* exact only when every worker has it: the two kinds of bins do not mix */
	h->exact = nt > 0;
	for (size_t w = 0; w < nt && h->exact; w++)
		h->exact = add_exact(ts[w], h);
	if (h->exact) {
		h->nbins = LOOPSTAT_SPAN_BUCKETS;
		for (int k = 0; k < h->nbins; k++) {
			h->lo[k] = k ? ldexp(1, LOOPSTAT_SPAN_SHIFT + k) : 0;
			h->hi[k] = ldexp(1, LOOPSTAT_SPAN_SHIFT + k + 1);
		}
		return;
	}
	memset(h->n, 0, sizeof(h->n));
	memset(h->sum, 0, sizeof(h->sum));
	h->total = 0;
	h->nbins = SERIES_LAG_BINS;
	for (int k = 0; k < h->nbins; k++)
		series_lag_edges(k, &h->lo[k], &h->hi[k]);
	for (size_t w = 0; w < nt; w++)
		add_sampled(ts[w], h);
}

/* The longest span: the samples' longest, but never below the start of
 * the highest bin the runtime counted one in (a span shorter than the
 * sampling period escapes the samples, not the runtime). */
static double longest(const struct lag_hist *h)
{
	double m = h->max_ns;
	if (h->exact)
		for (int k = h->nbins - 1; k >= 0; k--)
			if (h->n[k] > 0) {
				m = fmax(m, h->lo[k]);
				break;
			}
	return m;
}

/*
 * Where bin k's spans lie: evenly on [lo, m] and on [m, hi], in the shares
 * that put their mean at the bin's own (m: their sum over their count), so
 * that spans clustered near one length read as that length, not as the
 * middle of a bin a fifth of it wide; evenly over the bin where the sum is
 * unknown. The share below m, and m.
 */
static double bin_split(const struct lag_hist *h, int k, double *m)
{
	double lo = h->lo[k], hi = h->hi[k];
	*m = h->sum[k] > 0 && h->n[k] > 0 ? fmin(fmax(h->sum[k] / h->n[k], lo), hi) : (lo + hi) / 2;
	return hi > lo ? (hi - *m) / (hi - lo) : 1;
}

/* The share of bin k's spans shorter than ns. */
static double bin_below(const struct lag_hist *h, int k, double ns)
{
	double m, f = bin_split(h, k, &m), lo = h->lo[k], hi = h->hi[k];
	if (ns <= lo)
		return 0;
	if (ns >= hi)
		return 1;
	return ns < m ? f * (ns - lo) / (m - lo) : f + (1 - f) * (ns - m) / (hi - m);
}

/* The length under which share f of bin k's spans lie. */
static double bin_at(const struct lag_hist *h, int k, double f)
{
	double m, below = bin_split(h, k, &m);
	if (f <= below)
		return below > 0 ? h->lo[k] + f / below * (m - h->lo[k]) : h->lo[k];
	return m + (f - below) / (1 - below) * (h->hi[k] - m);
}

double lag_quantile(const struct lag_hist *h, double p)
{
	if (!h->samples && h->total <= 0)
		return NAN;
	if (p >= 100)
		return longest(h);
	if (h->total <= 0)
		return 0;
	double rank = p / 100 * h->total, cum = 0, v = 0;
	for (int k = 0; k < h->nbins; k++) {
		if (h->n[k] <= 0)
			continue;
		if (cum + h->n[k] >= rank) {
			v = bin_at(h, k, (rank - cum) / h->n[k]);
			break;
		}
		cum += h->n[k];
	}
	/* the top bins are open-ended: no percentile beyond the longest seen */
	double m = longest(h);
	return m > 0 && v > m ? m : v;
}

void lag_octaves(const struct lag_hist *h, int shift, double *out, int n)
{
	for (int i = 0; i < n; i++)
		out[i] = 0;
	for (int k = 0; k < h->nbins; k++) {
		int i = h->lo[k] > 0 ? ilogb(h->lo[k]) - shift : 0;
		out[i < 0 ? 0 : i >= n ? n - 1 : i] += h->n[k];
	}
}

/* A thread that slept (in its poll) and woke this many times a sampling
 * period cycles through spans and gaps far shorter than the period:
 * whatever runs its samples show are merges. */
#define LAG_RES_WAKES 3

/* Busy/idle samples this correlated from one to the next (lag 1, a
 * two-state chain: 1 − spans / the spans random samples would make) are
 * runs of real spans and gaps, not chance. */
#define LAG_RES_RHO   0.3
/* A chance this small that random samples made as many long runs. */
#define LAG_RES_ALPHA 0.01

/* P(X >= c) for X Poisson with mean e. */
static double poisson_sf(double c, double e)
{
	if (c <= e)
		return 1;
	if (c > e + 12 * sqrt(e) + 30)
		return 0;
	double term = exp(-e), cdf = 0;
	for (int i = 0; i < c; i++) {
		cdf += term;
		term *= e / (i + 1);
	}
	return fmax(0, 1 - cdf);
}

/* The spans h counted at least ns long (a bin straddling ns by its share). */
static double spans_over(const struct lag_hist *h, double ns)
{
	double c = 0;
	for (int k = 0; k < h->nbins; k++)
		if (h->n[k] > 0)
			c += h->n[k] * (1 - bin_below(h, k, ns));
	return c;
}

static int unresolved(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int unresolved(char *why, size_t len, const char *fmt, ...)
{
	if (why && len) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return 0;
}

int lag_resolved(const struct lag_hist *h, double v_ns, char *why, size_t len)
{
	if (why && len)
		why[0] = '\0';
	/* a pool's ticks are its threads' shares: its runs are not weighed here */
	if (h->exact || h->spans_exact || h->pooled || h->taken <= 0 || h->all_w <= 0 || isnan(v_ns))
		return 1;
	double b = h->busy_w / h->all_w, q = 1 - b;
	if (b <= 0)
		return 1;   /* never out of its poll: no span longer than about a period, and none seen */
	if (q <= 0)
		return unresolved(why, len, "never seen in its poll: spans shorter than a sampling period read as one");
	if (h->total <= 0)
		return 1;   /* no span ended: the one in progress, as long as it has lasted */
	/* the period the worker's samples reached: a run of k busy samples
	 * reads as a span of about k periods */
	double sum = 0, m;
	for (int k = 0; k < h->nbins; k++)
		if (h->n[k] > 0) {
			bin_split(h, k, &m);
			sum += h->n[k] * m;
		}
	double period = sum / (h->taken * b), gap = h->taken * q / h->total;
	double wakes = h->wakes_ns > 0 ? h->wakes / h->wakes_ns * period : 0;
	if (wakes >= LAG_RES_WAKES)
		return unresolved(why, len, "it woke %.0f times per sampling period of %.1f ms: its spans and gaps are "
				  "shorter than the period", wakes, period / 1e6);
	if (gap < LAG_RES_PERIODS)
		return unresolved(why, len, "idle gaps average %.1f sampling periods of %.1f ms, under %d: spans closer "
				  "together read as one", gap, period / 1e6, LAG_RES_PERIODS);
	if (v_ns < LAG_RES_PERIODS * period)
		return unresolved(why, len, "%.1f ms is under %d sampling periods of %.1f ms", v_ns / 1e6,
				  LAG_RES_PERIODS, period / 1e6);
	double chance = h->taken * b * q;   /* the runs random samples would make */
	if (1 - h->total / chance >= LAG_RES_RHO)
		return 1;
	/* or runs of x periods or more (x from LAG_RES_PERIODS itself, then
	 * the bins' edges up to the figure's length) far more often than
	 * random samples make them: a tail of long spans among short ones.
	 * The first length is LAG_RES_PERIODS itself, not the next edge: a
	 * figure between the two is otherwise never weighed. */
	for (int k = -1; k < h->nbins; k++) {
		double ns = k < 0 ? LAG_RES_PERIODS * period : h->lo[k], x = k < 0 ? LAG_RES_PERIODS : ns / period;
		if (k >= 0 && (x <= LAG_RES_PERIODS || ns > v_ns))
			continue;
		if (poisson_sf(floor(spans_over(h, ns) + 1e-9), chance * pow(b, x - 1)) < LAG_RES_ALPHA)
			return 1;
	}
	return unresolved(why, len, "busy samples (%.0f%%) fall as if at random: spans much shorter than the %.1f-ms "
			  "sampling period read as runs of it", 100 * b, period / 1e6);
}

void lag_eval(const struct eval_track *const *ts, size_t nt, int pct, struct estimate *out)
{
	struct lag_hist h;
	lag_collect(ts, nt, &h);
	double ns = lag_quantile(&h, pct);
	memset(out, 0, sizeof(*out));
	out->kind = EST_MAX;
	out->df = INFINITY;
	out->ok = !isnan(ns);
	out->est = out->lo = out->hi = ns / 1e6;
	out->n = out->n_eff = h.total;
	if (out->ok && !lag_resolved(&h, ns, NULL, 0)) {
		out->unresolved = 1;
		out->est = out->lo = out->hi = NAN;
	}
}

int lag_why(const struct eval_track *const *ts, size_t nt, int pct, char *why, size_t len)
{
	struct lag_hist h;
	lag_collect(ts, nt, &h);
	return lag_resolved(&h, lag_quantile(&h, pct), why, len);
}
