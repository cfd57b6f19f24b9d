/*
 * model.c — the capacity math shared by every view.
 */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void model_done(struct model *m)
{
	free(m->workers);
	free(m->services);
	memset(m, 0, sizeof(*m));
}

double model_ci95_pts(double p, uint64_t n)
{
	if (n == 0)
		return NAN;
	/* Wilson rather than the normal approximation: it stays honest at
	 * p = 0 or 1 and for the small n of a short window. */
	const double z = 1.959964;
	double nn = (double)n;
	double half = z / (1 + z * z / nn) * sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
	return 100.0 * half;
}

double model_share_pct(uint64_t count, uint64_t basis, double *ci95)
{
	if (basis == 0) {
		if (ci95)
			*ci95 = NAN;
		return NAN;
	}
	double p = (double)count / (double)basis;
	if (ci95)
		*ci95 = model_ci95_pts(p, basis);
	return 100.0 * p;
}

double model_headroom(double ops_per_s, double idle_pct)
{
	if (isnan(ops_per_s) || isnan(idle_pct) || idle_pct >= 99.0)
		return NAN;
	double u = 1.0 - idle_pct / 100.0;
	return ops_per_s / u;
}

double model_span_s(const struct model *m)
{
	return m->window_s > 0 ? m->window_s : m->elapsed_s;
}

void model_worker_name(const struct worker_view *w, const char *sep, char *buf, size_t len)
{
	if (w->tag[0] && strcmp(w->tag, w->name) != 0)
		snprintf(buf, len, "%s%s%s", w->name, sep, w->tag);
	else
		snprintf(buf, len, "%s", w->name);
}
