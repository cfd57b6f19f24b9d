/*
 * estimate.c — batch-means intervals for autocorrelated streams.
 */
#include "model/estimate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "util/stats.h"

double est_t975(double df) { return stats_t975(df); }

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
	return stats_kish(den, w2);
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
		double centre = stats_wilson_centre(r, out->n) * scale;
		double wh = stats_wilson_half(r, round(out->n)) * scale;   /* whole samples, as model_ci95_pts */
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
	return est_diff_runs(a, b, coef, 0, out);
}

int est_diff_runs(const struct estimate *a, const struct estimate *b, double coef, double run_var,
		  struct estimate *out)
{
	if (!a || !b || !out || !isfinite(coef) || !(run_var >= 0) || !isfinite(run_var))
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
	out->unresolved = a->unresolved || b->unresolved;

	double va = a->se * a->se, vb = coef * coef * b->se * b->se;
	double vr = a->kind == EST_MAX || b->kind == EST_MAX ? 0 : (1 + coef * coef) * run_var;
	out->se = sqrt(va + vb + vr);
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
	/* Welch–Satterthwaite; a term with infinite df (a maximum, the run
	 * term) adds nothing to the denominator */
	double den = (va > 0 ? va * va / a->df : 0) + (vb > 0 ? vb * vb / b->df : 0);
	double var = va + vb + vr;
	out->df = den > 0 ? var * var / den : INFINITY;
	double half = est_t975(out->df) * out->se;
	out->lo = out->est - half;
	out->hi = out->est + half;
	return 0;
}

int est_share_diff(double ka, double na, double kb, double nb, double scale, struct estimate *out)
{
	if (!out || !(ka >= 0 && ka <= na && kb >= 0 && kb <= nb) || !isfinite(na) || !isfinite(nb))
		return -EINVAL;
	unknown(out, EST_PROPORTION);
	if (na <= 0 || nb <= 0)
		return 0;
	double pa = ka / na, pb = kb / nb;
	double ca = stats_wilson_centre(pa, na), ha = stats_wilson_half(pa, na);
	double cb = stats_wilson_centre(pb, nb), hb = stats_wilson_half(pb, nb);
	double la = ca - ha, ua = ca + ha, lb = cb - hb, ub = cb + hb;
	out->ok = 1;
	out->est = (pb - pa) * scale;
	out->lo = (pb - pa - sqrt((pb - lb) * (pb - lb) + (ua - pa) * (ua - pa))) * scale;
	out->hi = (pb - pa + sqrt((ub - pb) * (ub - pb) + (pa - la) * (pa - la))) * scale;
	out->se = (out->hi - out->lo) / (2 * STATS_Z975);
	out->df = INFINITY;
	out->n = out->n_eff = nb;
	return 0;
}
