/*
 * metric_prom.c — each row's Prometheus name in base units, derived from the
 * row itself (metric.h says the rules), so the textfile and serve's
 * /metrics share one spelling and a new row needs no second list.
 */
#include "model/metric.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PROM_NAME_LEN 96

static char worker_names[METRIC_NWORKER][PROM_NAME_LEN];
static char fleet_names[METRIC_NFLEET][PROM_NAME_LEN];
static char counter_help[METRIC_NWORKER][320];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

int metric_prom_counter(const struct metric *m)
{
	return !metric_is_fleet(m) && m->kind == METRIC_RATE && m->source == METRIC_COUNTERS;
}

static double scale_of(const struct metric *m)
{
	if (metric_prom_counter(m))
		return 1;
	switch (m->unit) {
	case METRIC_PCT:
	case METRIC_POINTS: return 0.01;
	case METRIC_MS:     return 0.001;
	default:            return 1;
	}
}

/* Appends "_" and each "_"-separated part of name to out, leaving out the
 * part drop (NULL: none) and spelling "per_s" as "per_second". */
static void put_parts(char *out, size_t len, const char *name, const char *drop)
{
	char parts[PROM_NAME_LEN];
	snprintf(parts, sizeof(parts), "%s", name);
	char *save = NULL, *prev = NULL;
	for (char *p = strtok_r(parts, "_", &save); p; prev = p, p = strtok_r(NULL, "_", &save)) {
		if (drop && !strcmp(p, drop))
			continue;
		int second = !strcmp(p, "s") && prev && !strcmp(prev, "per");
		size_t n = strlen(out);
		snprintf(out + n, len - n, "_%s", second ? "second" : p);
	}
}

static void derive(const struct metric *m, char out[PROM_NAME_LEN])
{
	snprintf(out, PROM_NAME_LEN, "%s", metric_is_fleet(m) ? "fleet" : "worker");
	size_t n = strlen(m->name);
	if (metric_prom_counter(m)) {
		char base[PROM_NAME_LEN];
		int cut = n > 6 && !strcmp(m->name + n - 6, "_per_s");
		snprintf(base, sizeof(base), "%.*s", (int)(cut ? n - 6 : n), m->name);
		put_parts(out, PROM_NAME_LEN, base, NULL);
		strncat(out, "_total", PROM_NAME_LEN - strlen(out) - 1);
		return;
	}
	switch (m->unit) {
	case METRIC_PCT:
	case METRIC_POINTS:
		put_parts(out, PROM_NAME_LEN, m->name, "pct");
		strncat(out, "_ratio", PROM_NAME_LEN - strlen(out) - 1);
		return;
	case METRIC_MS:
		put_parts(out, PROM_NAME_LEN, m->name, "ms");
		strncat(out, "_seconds", PROM_NAME_LEN - strlen(out) - 1);
		return;
	default:
		put_parts(out, PROM_NAME_LEN, m->name, NULL);
	}
}

static void derive_all(void)
{
	for (int i = 0; i < METRIC_NWORKER; i++) {
		derive(&metric_worker[i], worker_names[i]);
		if (metric_prom_counter(&metric_worker[i]))
			snprintf(counter_help[i], sizeof(counter_help[i]), "the worker's counter, never reset, whose rate "
			         "is %s (%s)", metric_worker[i].name, metric_worker[i].desc);
	}
	for (int i = 0; i < METRIC_NFLEET; i++)
		derive(&metric_fleet[i], fleet_names[i]);
}

const char *metric_prom_name(const struct metric *m)
{
	pthread_once(&names_once, derive_all);
	if (metric_is_fleet(m))
		return fleet_names[m - metric_fleet];
	return worker_names[m - metric_worker];
}

double metric_prom_value(const struct metric *m, const void *view)
{
	if (metric_prom_counter(m)) {
		const struct worker_view *w = view;
		if (!metric_applies(m, w) || m->arg < 0 || m->arg >= PROBE_SHM_NVALUES)
			return NAN;
		return (double)w->totals[m->arg];
	}
	return metric_value(m, view) * scale_of(m);
}

const char *metric_prom_help(const struct metric *m)
{
	pthread_once(&names_once, derive_all);
	return metric_prom_counter(m) ? counter_help[m - metric_worker] : m->desc;
}
