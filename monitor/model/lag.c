/*
 * lag.c — busy spans over a range of periods: the runtime's histogram or
 * the sampled one, their percentiles (lag.h).
 */
#include "model/lag.h"

#include <math.h>
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
		}
	}
}

static void sampled_max(const struct eval_track *t, struct lag_hist *h)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct eval_period *p = &t->p[i];
		if (!p->b)
			continue;
		/* whole microseconds, as a second's bucket keeps it */
		double m = (p->lag_total ? (double)(p->lag_max_ns / 1000) : p->b->lag_max_us) * 1e3;
		h->max_ns = fmax(h->max_ns, m);
		for (int c = 0; c < SERIES_NCLASS; c++)
			h->samples |= p->b->n[c] > 0;
	}
}

void lag_collect(const struct eval_track *const *ts, size_t nt, struct lag_hist *h)
{
	memset(h, 0, sizeof(*h));
	for (size_t w = 0; w < nt; w++)
		sampled_max(ts[w], h);
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
			v = h->lo[k] + (rank - cum) / h->n[k] * (h->hi[k] - h->lo[k]);
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
}
