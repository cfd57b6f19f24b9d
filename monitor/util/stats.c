/*
 * stats.c — quantiles, Wilson's interval, sample sizes (stats.h).
 */
#include "util/stats.h"

#include <math.h>

double stats_t975(double df)
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
		return STATS_Z975;
	/* Cornish–Fisher expansion: within 1e-4 of the exact quantile from df = 30 */
	double z = STATS_Z975, z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
	return z + (z3 + z) / (4 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96 * df * df) +
	       (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * df * df * df) +
	       (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * df * df * df * df);
}

double stats_wilson_centre(double p, double n)
{
	if (!(n > 0))
		return NAN;
	double z2n = STATS_Z975 * STATS_Z975 / n;
	return (p + z2n / 2) / (1 + z2n);
}

double stats_wilson_half(double p, double n)
{
	if (!(n > 0))
		return NAN;
	const double z = STATS_Z975;
	return z / (1 + z * z / n) * sqrt(p * (1 - p) / n + z * z / (4 * n * n));
}

double stats_wilson_need(double q, double h)
{
	return STATS_Z975 * STATS_Z975 * (q * (1 - q) / (h * h) + 1 / (2 * h));
}

double stats_kish(double sum_w, double sum_w2)
{
	return sum_w2 > 0 ? sum_w * sum_w / sum_w2 : 0;
}
