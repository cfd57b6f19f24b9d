/*
 * limit.c — the limit verdict (limit.h).
 */
#include "model/limit.h"
#include "model/eval.h"
#include "model/model.h"

#include <math.h>
#include <stdio.h>

const char *model_limit_name(enum metric_limit l)
{
	static const char *const names[] = {
		[METRIC_LIMIT_NONE] = "none", [METRIC_LIMIT_LOOP] = "loop",
		[METRIC_LIMIT_QUOTA] = "quota", [METRIC_LIMIT_CPU] = "cpu", [METRIC_LIMIT_BACKLOG] = "backlog",
		[METRIC_LIMIT_POOL] = "pool",
	};
	return (unsigned)l < sizeof(names) / sizeof(names[0]) ? names[l] : "?";
}

int model_limit_verdict(const double fig[METRIC_NLIMITS], char *why, size_t len)
{
	if (why && len)
		why[0] = '\0';
	if (isnan(fig[METRIC_LIMIT_LOOP]))
		return -1;
#define LIMIT_X_TRY(kind, metric, op, threshold, reason)                              \
	if (!isnan(fig[METRIC_LIMIT_##kind]) && fig[METRIC_LIMIT_##kind] op (threshold)) { \
		if (why && len)                                                       \
			snprintf(why, len, reason, fig[METRIC_LIMIT_##kind]);         \
		return METRIC_LIMIT_##kind;                                           \
	}
	LIMIT_RULES(LIMIT_X_TRY)
#undef LIMIT_X_TRY
	return METRIC_LIMIT_NONE;
}

void model_limit_backlog_held(double fig[METRIC_NLIMITS], double held)
{
	if (!isnan(fig[METRIC_LIMIT_BACKLOG]))
		fig[METRIC_LIMIT_BACKLOG] = isnan(held) ? NAN : fmin(fig[METRIC_LIMIT_BACKLOG], held);
}

void model_limit_shared_quota(double fig[METRIC_NLIMITS])
{
	double quota_only[METRIC_NLIMITS];
	for (int k = 0; k < METRIC_NLIMITS; k++)
		quota_only[k] = NAN;
	quota_only[METRIC_LIMIT_LOOP] = 100;   /* known, and never the loop's rule */
	quota_only[METRIC_LIMIT_QUOTA] = fig[METRIC_LIMIT_QUOTA];
	if (model_limit_verdict(quota_only, NULL, 0) == METRIC_LIMIT_QUOTA)
		fig[METRIC_LIMIT_CPU] = NAN;   /* its waits are the group's throttling */
	fig[METRIC_LIMIT_QUOTA] = NAN;
}

/* The quota verdict says whose quota it is and who spends it: "cgroup
 * /x.service quota 0.2 CPU spent by PID 123, 456: it was held back 58% of
 * the time". */
static void quota_why(const struct worker_view *w, char *why, size_t len)
{
	if (!why || !len || !w->cgroup[0])
		return;
	size_t at = (size_t)snprintf(why, len, "cgroup %s quota %.3g CPU", w->cgroup, w->quota_cpus);
	for (int i = 0; i < w->nquota_spenders && at < len; i++)
		at += (size_t)snprintf(why + at, len - at, i ? ", %d" : " spent by PID %d", (int)w->quota_spenders[i]);
	if (at < len)
		snprintf(why + at, len - at, ": it was held back %.0f%% of the time", w->throttled_pct);
}

int model_limit_of(const struct worker_view *w, char *why, size_t len)
{
	double fig[METRIC_NLIMITS] = { 0 };
#define LIMIT_X_FIG(kind, metric, op, threshold, reason) fig[METRIC_LIMIT_##kind] = w->metric;
	LIMIT_RULES(LIMIT_X_FIG)
#undef LIMIT_X_FIG
	if (w->quota_shared)
		model_limit_shared_quota(fig);
	model_limit_backlog_held(fig, w->accept_queue_held);
	int v = model_limit_verdict(fig, why, len);
	if (v == METRIC_LIMIT_QUOTA)
		quota_why(w, why, len);
	return v;
}

double model_limit_reading(const struct worker_view *w, int verdict)
{
	switch (verdict) {
#define LIMIT_X_READING(kind, metric, op, threshold, reason) case METRIC_LIMIT_##kind: return w->metric;
	LIMIT_RULES(LIMIT_X_READING)
#undef LIMIT_X_READING
	default: return w->idle_pct;
	}
}

/* What the verdict reads of a worker's periods besides its rows (limit.h). */

double model_eval_acceptq_held(const struct eval_track *const *ts, size_t nt)
{
	double held = NAN;
	for (size_t w = 0; w < nt; w++) {
		double q[2];
		int n = 0;
		for (size_t i = ts[w]->n; i-- > 0 && n < 2;) {
			const struct series_bucket *b = ts[w]->p[i].b;
			if (b && b->listen.valid)
				q[n++] = (double)b->listen.queue;
		}
		if (n) {
			double v = n == 2 ? fmin(q[0], q[1]) : q[0];
			held = isnan(held) ? v : fmax(held, v);
		}
	}
	return held;
}

int model_eval_quota_shared(const struct eval_track *const *ts, size_t nt)
{
	for (size_t w = 0; w < nt; w++) {
		int shared = 0;
		for (size_t i = ts[w]->n; i-- > 0;) {   /* the last reading that knows */
			const struct series_bucket *b = ts[w]->p[i].b;
			if (b && b->cg.valid && !isnan(b->cg.quota_cpus) && b->cg.shared_only >= 0) {
				shared = b->cg.shared_only;
				break;
			}
		}
		if (!shared)
			return 0;
	}
	return nt > 0;
}
