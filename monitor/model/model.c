/*
 * model.c — the capacity math shared by every view.
 */
#include "model/model.h"
#include "model/eval.h"
#include "util/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void model_done(struct model *m)
{
	free(m->workers);
	free(m->pools);
	free(m->services);
	memset(m, 0, sizeof(*m));
}

double model_ci95_pts(double p, uint64_t n)
{
	/* Wilson rather than the normal approximation: it stays honest at
	 * p = 0 or 1 and for the small n of a short window. */
	return n ? 100.0 * stats_wilson_half(p, (double)n) : NAN;
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

/* A part's share and Wilson half-width, scaled by the time its basis covers. */
static double part_pct(uint64_t count, double basis, double scale, double *ci95)
{
	if (count == 0 || !(basis > 0)) {
		*ci95 = 0;
		return 0;
	}
	double p = (double)count / basis;
	*ci95 = scale * model_ci95_pts(p, (uint64_t)basis);
	return 100.0 * scale * p;
}

double model_split_share_pct(uint64_t off_count, uint64_t run_count, uint64_t n_off, uint64_t n_run,
			     double runnable, double *ci95)
{
	double running, scale;
	double basis = eval_split(runnable, (double)n_run, (double)n_off, &running, &scale);
	if (!(basis > 0) || off_count + run_count == 0) {
		if (ci95)
			*ci95 = NAN;
		return NAN;
	}
	double c_off, c_run;
	/* the running samples only split the running share among themselves */
	double pct = part_pct(off_count, basis, scale, &c_off) +
		     part_pct(run_count, (double)n_run, n_run ? running : 0, &c_run);
	if (ci95)
		*ci95 = sqrt(c_off * c_off + c_run * c_run);
	return pct;
}

double model_headroom(double ops_per_s, double idle_pct)
{
	return model_headroom_bound(ops_per_s, idle_pct, NAN, NAN, NAN, NULL);
}

double model_headroom_bound(double ops_per_s, double idle_pct, double quota_cpus, double cpu_pct,
			    double pool_busy_pct, enum model_bound *which)
{
	double bound[] = {
		[MODEL_BOUND_NONE] = NAN,
		[MODEL_BOUND_LOOP] = idle_pct < 99.0 ? ops_per_s / (1.0 - idle_pct / 100.0) : NAN,
		[MODEL_BOUND_QUOTA] = cpu_pct > 0.1 ? ops_per_s * quota_cpus / (cpu_pct / 100.0) : NAN,
		[MODEL_BOUND_POOL] = pool_busy_pct > 1.0 ? ops_per_s / (pool_busy_pct / 100.0) : NAN,
	};
	enum model_bound best = MODEL_BOUND_NONE;
	for (int b = MODEL_BOUND_LOOP; b <= MODEL_BOUND_POOL; b++)
		if (isfinite(bound[b]) && bound[b] >= 0 && (best == MODEL_BOUND_NONE || bound[b] < bound[best]))
			best = (enum model_bound)b;
	if (which)
		*which = best;
	return bound[best];
}

const char *model_bound_name(enum model_bound b)
{
	static const char *const names[] = {
		[MODEL_BOUND_LOOP] = "loop", [MODEL_BOUND_QUOTA] = "quota", [MODEL_BOUND_POOL] = "pool",
	};
	return (unsigned)b < sizeof(names) / sizeof(names[0]) ? names[b] : NULL;
}

double model_span_s(const struct model *m)
{
	return m->window_s > 0 ? m->window_s : m->elapsed_s;
}

void model_sampling_text(const struct model *m, char *buf, size_t len)
{
	if (m->precision_pts > 0)
		snprintf(buf, len, "%.0f Hz, +-%g pts", m->rate_hz, m->precision_pts);
	else
		snprintf(buf, len, "%.0f Hz, every tick", m->rate_hz);
}

void model_worker_name(const struct worker_view *w, char *buf, size_t len)
{
	if (w->tag[0] && strcmp(w->tag, w->name) != 0)
		snprintf(buf, len, "%s/%s", w->name, w->tag);
	else if (w->thread_name[0] && strcmp(w->thread_name, w->name) != 0)
		snprintf(buf, len, "%s (%s)", w->name, w->thread_name);   /* a thread named apart: java (nioEventLoopGro) */
	else
		snprintf(buf, len, "%s", w->name);
}
