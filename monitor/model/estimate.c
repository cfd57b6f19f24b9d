/*
 * estimate.c — batch-means intervals for autocorrelated streams.
 */
#include "model/estimate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "model/model.h"

#define Z975 1.959963984540054

double est_t975(double df)
{
	/* exact quantiles for small df, where the expansion below is poor */
	static const double t[31] = {
		NAN, 12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
		2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
		2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
	};
	if (isnan(df))
		return NAN;
	if (df < 1)
		df = 1;
	if (df <= 30) {
		/* Welch's df are fractional: interpolate in 1/df, where t is nearly linear */
		int lo = (int)floor(df), hi = (int)ceil(df);
		if (lo == hi)
			return t[lo];
		double w = (1 / df - 1.0 / hi) / (1.0 / lo - 1.0 / hi);
		return w * t[lo] + (1 - w) * t[hi];
	}
	if (isinf(df))
		return Z975;
	/* Cornish–Fisher expansion: within 1e-4 of the exact quantile from df = 30 */
	double z = Z975, z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
	return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
	       (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df) +
	       (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * df * df * df * df);
}

static void unknown(struct estimate *out, enum est_kind kind)
{
	*out = (struct estimate){
		.kind = kind, .est = NAN, .lo = NAN, .hi = NAN, .se = NAN, .df = NAN,
		.n_eff = 0, .lag1 = NAN,
	};
}

/* Σ over batches of residual² and lag-1 products, for k batches of the m
 * valid seconds v[] (batch b covers seconds [b·m/k, (b+1)·m/k)). */
static void batch_residuals(const struct est_sec *v, size_t m, unsigned k, double r, double *ss,
			    double *lag1)
{
	double prev = 0, sum2 = 0, sum_lag = 0;
	for (unsigned b = 0; b < k; b++) {
		size_t from = (size_t)b * m / k, to = (size_t)(b + 1) * m / k;
		double num = 0, den = 0;
		for (size_t i = from; i < to; i++) {
			num += v[i].num;
			den += v[i].den;
		}
		double e = num - r * den;   /* Σe = 0 by construction of r */
		sum2 += e * e;
		if (b > 0)
			sum_lag += prev * e;
		prev = e;
	}
	*ss = sum2;
	*lag1 = k >= 3 && sum2 > 0 ? sum_lag / sum2 : NAN;
}

static void estimate_max(const struct est_sec *v, size_t m, struct estimate *out)
{
	double mx = -INFINITY;
	for (size_t i = 0; i < m; i++)
		mx = fmax(mx, v[i].num);
	out->est = out->lo = out->hi = mx;
	out->se = 0;
	out->df = INFINITY;
	out->n = out->n_eff = (double)m;
}

/* The samples a proportion's den counts: Kish's effective size of their
 * weights, Σden²/Σw2 (each second's w2 = den when unweighted). */
static double kish_size(const struct est_sec *v, size_t m)
{
	double den = 0, w2 = 0;
	for (size_t i = 0; i < m; i++) {
		if (!(v[i].den > 0))
			continue;
		den += v[i].den;
		w2 += v[i].w2 > 0 ? v[i].w2 : v[i].den;
	}
	return w2 > 0 ? den * den / w2 : 0;
}

static void estimate_ratio(const struct est_sec *v, size_t m, double scale, struct estimate *out)
{
	double num = 0, den = 0;
	for (size_t i = 0; i < m; i++) {
		num += v[i].num;
		den += v[i].den;
	}
	double r = num / den;
	out->est = r * scale;
	out->n = out->kind == EST_PROPORTION ? kish_size(v, m) : (double)m;
	if (m < 2) {   /* one second: no spread to measure */
		out->lo = -INFINITY;
		out->hi = INFINITY;
		out->se = INFINITY;
		out->df = 0;
		out->n_eff = 1;
		out->batches = (unsigned)m;
		out->batch_s = 1;
		return;
	}

	unsigned k = m < EST_BATCHES_MAX ? (unsigned)m : EST_BATCHES_MAX;
	unsigned kmin = m < EST_BATCHES_MIN ? (unsigned)m : EST_BATCHES_MIN;
	double ss, lag1, q;
	for (;;) {
		batch_residuals(v, m, k, r, &ss, &lag1);
		/* the lag-1 estimate of k residuals summing to 0 is biased by about −1/k */
		q = isnan(lag1) ? 0 : lag1 + 1.0 / k;
		if (!(q > EST_LAG1_MAX) || k <= kmin)
			break;
		k--;   /* longer batches, until their means look independent */
	}
	out->batches = k;
	out->batch_s = (double)m / k;
	out->lag1 = lag1;
	out->correlated = q > EST_LAG1_MAX_MIN;

	double dbar = den / k;
	double var = ss / ((double)k * (k - 1) * dbar * dbar);   /* of r */
	/* batches still correlated (a short run, a slow drift): widen as for an
	 * AR(1) series of batch means, var × (1+q)/(1−q), rather than under-cover */
	if (q > 0)
		var *= (1 + fmin(q, 0.9)) / (1 - fmin(q, 0.9));
	/* the variance if every unit were independent: never claim less */
	double var_iid;
	if (out->kind == EST_PROPORTION) {
		var_iid = r * (1 - r) / out->n;
	} else {
		double s2 = 0, d1 = den / (double)m;
		for (size_t i = 0; i < m; i++) {
			double e = v[i].num - r * v[i].den;
			s2 += e * e;
		}
		var_iid = s2 / ((double)(m - 1) * d1 * d1) / (double)m;
	}
	if (var < var_iid)
		var = var_iid;
	out->n_eff = var > 0 ? out->n * var_iid / var : out->n;
	out->se = sqrt(var) * scale;
	out->df = k - 1;
	double half = est_t975(out->df) * out->se;
	out->lo = out->est - half;
	out->hi = out->est + half;

	if (out->kind == EST_PROPORTION) {
		/* and never narrower than the binomial (Wilson) interval of all the
		 * samples, which stays honest when r is 0 or 1 and ss is 0 */
		double z2n = Z975 * Z975 / out->n;
		double centre = (r + z2n / 2) / (1 + z2n) * scale;
		double wh = model_ci95_pts(r, (uint64_t)llround(out->n)) / 100.0 * scale;
		out->lo = fmax(0, fmin(out->lo, centre - wh));
		out->hi = fmin(scale, fmax(out->hi, centre + wh));
	}
}

int est_batch_means(const struct est_sec *secs, size_t nsec, enum est_kind kind, double scale,
		   struct estimate *out)
{
	if (!out || (!secs && nsec) || !isfinite(scale) || scale <= 0 || kind > EST_MAX)
		return -EINVAL;
	unknown(out, kind);

	/* keep only seconds that carry data; they stay in time order */
	struct est_sec *v = malloc((nsec ? nsec : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t m = 0;
	for (size_t i = 0; i < nsec; i++) {
		const struct est_sec *s = &secs[i];
		if (!isfinite(s->num) || !isfinite(s->den) || s->den < 0 || !isfinite(s->w2) || s->w2 < 0 ||
		    (kind != EST_MAX && s->num < 0) || (kind == EST_PROPORTION && s->num > s->den)) {
			free(v);
			return -EINVAL;
		}
		if (s->den > 0)
			v[m++] = *s;
	}
	if (m == 0) {
		free(v);
		return 0;
	}
	out->ok = 1;
	out->n_eff = NAN;
	if (kind == EST_MAX)
		estimate_max(v, m, out);
	else
		estimate_ratio(v, m, scale, out);
	free(v);
	return 0;
}

int est_point(const struct est_sec *secs, size_t nsec, enum est_kind kind, double scale, struct estimate *out)
{
	if (!out || (!secs && nsec) || !isfinite(scale) || scale <= 0 || kind > EST_MAX)
		return -EINVAL;
	unknown(out, kind);
	double num = 0, den = 0, mx = -INFINITY;
	size_t m = 0;
	for (size_t i = 0; i < nsec; i++) {
		if (!(secs[i].den > 0))
			continue;
		num += secs[i].num;
		den += secs[i].den;
		mx = fmax(mx, secs[i].num);
		m++;
	}
	if (m == 0)
		return 0;
	out->ok = 1;
	out->est = kind == EST_MAX ? mx : num / den * scale;
	out->lo = out->hi = out->est;
	out->se = 0;
	out->df = INFINITY;
	out->n = out->n_eff = kind == EST_PROPORTION ? kish_size(secs, nsec) : (double)m;
	return 0;
}

int est_diff(const struct estimate *a, const struct estimate *b, double coef,
	       struct estimate *out)
{
	if (!a || !b || !out || !isfinite(coef))
		return -EINVAL;
	unknown(out, a->kind);
	if (!a->ok || !b->ok)
		return 0;
	out->ok = 1;
	out->est = a->est - coef * b->est;
	out->n = a->n;
	out->n_eff = a->n_eff;
	out->batches = a->batches;
	out->batch_s = a->batch_s;
	out->lag1 = a->lag1;
	out->correlated = a->correlated || b->correlated;

	double va = a->se * a->se, vb = coef * coef * b->se * b->se;
	out->se = sqrt(va + vb);
	if (!isfinite(out->se)) {
		out->lo = -INFINITY;
		out->hi = INFINITY;
		out->df = 0;
		return 0;
	}
	if (out->se == 0) {   /* two observed facts (maxima): no sampling spread */
		out->lo = out->hi = out->est;
		out->df = INFINITY;
		return 0;
	}
	/* Welch–Satterthwaite; a term with infinite df (a maximum) adds nothing */
	double den = (va > 0 ? va * va / a->df : 0) + (vb > 0 ? vb * vb / b->df : 0);
	out->df = den > 0 ? (va + vb) * (va + vb) / den : INFINITY;
	double half = est_t975(out->df) * out->se;
	out->lo = out->est - half;
	out->hi = out->est + half;
	return 0;
}
