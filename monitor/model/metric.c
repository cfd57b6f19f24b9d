/*
 * metric.c — finding a row of the metric table, reading a figure out of a
 * view, and a figure as a table cell.
 */
#include "model/metric.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *metric_unit_name(enum metric_unit u)
{
	static const char *const names[] = {
		[METRIC_PCT] = "%", [METRIC_POINTS] = "points", [METRIC_PER_S] = "1/s",
		[METRIC_MS] = "ms", [METRIC_COUNT] = "count", [METRIC_CPUS] = "cpus",
	};
	return names[u];
}

int metric_is_fleet(const struct metric *m)
{
	return m >= metric_fleet && m < metric_fleet + METRIC_NFLEET;
}

const struct metric *metric_find_any(const char *name)
{
	const struct metric *m = metric_find(name);
	for (size_t i = 0; !m && i < METRIC_NFLEET; i++)
		if (strcmp(metric_fleet[i].name, name) == 0)
			m = &metric_fleet[i];
	return m;
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

double metric_field(const struct metric *m, const void *view)
{
	const char *p = (const char *)view + m->offset;
	switch (m->type) {
	case METRIC_U64: return (double)*(const uint64_t *)p;
	case METRIC_UNSIGNED: return (double)*(const unsigned *)p;
	case METRIC_DOUBLE: break;
	}
	return *(const double *)p;
}

double metric_value(const struct metric *m, const void *view)
{
	if (m->source != METRIC_FLEET && !metric_applies(m, view))
		return NAN;
	return metric_field(m, view);
}

static void format_pct(char *buf, size_t n, double pct)
{
	if (isnan(pct))
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "%.1f", pct);
}

/* three significant digits, so OPS/s fits in 7 cells */
static void format_rate(char *buf, size_t n, double v)
{
	if (isnan(v) || v < 0)
		snprintf(buf, n, "-");
	else if (isinf(v))
		snprintf(buf, n, "inf");
	else if (v < 10)
		snprintf(buf, n, "%.1f", v);
	else if (v < 10000)
		snprintf(buf, n, "%.0f", v);
	else if (v < 1e6)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, n, "%.1fM", v / 1e6);
	else
		snprintf(buf, n, "%.1fG", v / 1e9);
}

static void format_ms(char *buf, size_t n, double ms)
{
	if (isnan(ms) || ms <= 0)
		snprintf(buf, n, "-");
	else if (ms < 1000)
		snprintf(buf, n, "%.0fms", ms);
	else if (ms < 100000)
		snprintf(buf, n, "%.1fs", ms / 1000);
	else
		snprintf(buf, n, "%.0fs", ms / 1000);
}

void metric_format(char *buf, size_t n, enum metric_unit unit, double v, int compact)
{
	switch (unit) {
	case METRIC_PCT:
	case METRIC_POINTS: format_pct(buf, n, v); return;
	case METRIC_PER_S:  format_rate(buf, n, v); return;
	case METRIC_MS:     format_ms(buf, n, v); return;
	case METRIC_CPUS:
		if (isnan(v))
			snprintf(buf, n, "-");
		else
			snprintf(buf, n, "%.2f", v);
		return;
	case METRIC_COUNT:
		if (isnan(v))
			snprintf(buf, n, "-");
		else if (compact && v >= 10000)
			format_rate(buf, n, v);
		else
			snprintf(buf, n, "%llu", (unsigned long long)v);
		return;
	}
}
