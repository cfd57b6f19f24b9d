/*
 * metric.c — the metric tables, and reading a figure out of a view.
 */
#include "model/metric.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define METRIC_ROW(view, name, unit, kind, source, type, dec, desc_sort, line, detail, interval, text) \
	{ #name, METRIC_##unit, METRIC_##kind, METRIC_##source, METRIC_##type, offsetof(view, name), dec, \
	  desc_sort, METRIC_LINE_##line, detail, interval, text },
#define METRIC_X_WORKER(...) METRIC_ROW(struct worker_view, __VA_ARGS__)
#define METRIC_X_FLEET(...) METRIC_ROW(struct fleet_view, __VA_ARGS__)

const struct metric metric_worker[METRIC_NWORKER] = { WORKER_METRICS(METRIC_X_WORKER) };
const struct metric metric_fleet[METRIC_NFLEET] = { FLEET_METRICS(METRIC_X_FLEET) };

const char *metric_unit_name(enum metric_unit u)
{
	static const char *const names[] = {
		[METRIC_PCT] = "%", [METRIC_POINTS] = "points", [METRIC_PER_S] = "1/s",
		[METRIC_MS] = "ms", [METRIC_COUNT] = "count",
	};
	return names[u];
}

const struct metric *metric_find(const char *name)
{
	for (size_t i = 0; i < METRIC_NWORKER; i++)
		if (strcmp(metric_worker[i].name, name) == 0)
			return &metric_worker[i];
	return NULL;
}

int metric_applies(const struct metric *m, const struct worker_view *w)
{
	return m->source != METRIC_COUNTERS || w->instrumented;
}

double metric_value(const struct metric *m, const void *view)
{
	const char *p = (const char *)view + m->offset;
	if (m->source != METRIC_FLEET && !metric_applies(m, view))
		return NAN;
	switch (m->type) {
	case METRIC_U64: return (double)*(const uint64_t *)p;
	case METRIC_UNSIGNED: return (double)*(const unsigned *)p;
	case METRIC_DOUBLE: break;
	}
	return *(const double *)p;
}
