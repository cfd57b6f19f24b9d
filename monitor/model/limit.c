/*
 * limit.c — the limit verdict (limit.h).
 */
#include "model/limit.h"
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

int model_limit_of(const struct worker_view *w, char *why, size_t len)
{
	double fig[METRIC_NLIMITS] = { 0 };
#define LIMIT_X_FIG(kind, metric, op, threshold, reason) fig[METRIC_LIMIT_##kind] = w->metric;
	LIMIT_RULES(LIMIT_X_FIG)
#undef LIMIT_X_FIG
	return model_limit_verdict(fig, why, len);
}
