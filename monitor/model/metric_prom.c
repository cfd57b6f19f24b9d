/*
 * metric_prom.c — each row's Prometheus name in base units, derived from the
 * row itself (metric.h says the rules), so the textfile and serve's
 * /metrics share one spelling and a new row needs no second list; and the
 * one rule that spells any name in base units, export's own points too.
 */
#include "model/metric.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static char worker_names[METRIC_NWORKER][METRIC_PROM_NAME_MAX];
static char fleet_names[METRIC_NFLEET][METRIC_PROM_NAME_MAX];
static char counter_help[METRIC_NWORKER][320];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

int metric_prom_counter(const struct metric *m)
{
	return !metric_is_fleet(m) && m->kind == METRIC_RATE && m->source == METRIC_COUNTERS;
}

static double scale_of(const struct metric *m)
{
	return metric_prom_counter(m) ? 1 : metric_prom_scale(m->unit);
}

double metric_prom_scale(enum metric_unit unit)
{
	switch (unit) {
	case METRIC_PCT:
	case METRIC_POINTS: return 0.01;
	case METRIC_MS:     return 0.001;
	default:            return 1;
	}
}

/* The last whole part `part` of s (preceded by '_', followed by '_' or the
 * end), NULL if none. */
static char *last_part(char *s, const char *part)
{
	size_t n = strlen(part);
	char *found = NULL;
	for (char *at = strchr(s, '_'); at; at = strchr(at + 1, '_'))
		if (!strncmp(at + 1, part, n) && (at[n + 1] == '\0' || at[n + 1] == '_'))
			found = at;
	return found;
}

void metric_prom_spell(char *out, size_t cap, const char *name, enum metric_unit unit)
{
	static const char *const words[] = { [METRIC_PCT] = "pct", [METRIC_POINTS] = "pct", [METRIC_MS] = "ms" };
	static const char *const bases[] = { [METRIC_PCT] = "_ratio", [METRIC_POINTS] = "_ratio", [METRIC_MS] = "_seconds" };
	const char *word = (size_t)unit < sizeof(words) / sizeof(words[0]) ? words[unit] : NULL;
	char buf[METRIC_PROM_NAME_MAX], *at;
	snprintf(buf, sizeof(buf), "%s", name);
	if (word && (at = last_part(buf, word)))
		memmove(at, at + 1 + strlen(word), strlen(at + 1 + strlen(word)) + 1);
	size_t len = 0;
	out[0] = '\0';
	for (const char *p = buf; *p && len + 1 < cap;) {
		/* "_per_s" as whole parts: promtool's lint refuses "_s" */
		int per_s = !strncmp(p, "_per_s", 6) && (p[6] == '\0' || p[6] == '_');
		const char *piece = per_s ? "_per_second" : p;
		size_t n = per_s ? 11 : 1;
		if (len + n >= cap)
			break;
		memcpy(out + len, piece, n);
		len += n;
		p += per_s ? 6 : 1;
	}
	out[len] = '\0';
	if (word && len + strlen(bases[unit]) < cap)
		strcat(out, bases[unit]);
}

static void derive(const struct metric *m, char out[METRIC_PROM_NAME_MAX])
{
	char full[METRIC_PROM_NAME_MAX];
	/* a counter is the slot's own: named for what it counts, not its rate */
	int counter = metric_prom_counter(m) && m->counts;
	snprintf(full, sizeof(full), "%s_%s", metric_is_fleet(m) ? "fleet" : "worker", counter ? m->counts : m->name);
	metric_prom_spell(out, METRIC_PROM_NAME_MAX, full, counter ? METRIC_COUNT : m->unit);
	if (counter)
		strncat(out, "_total", METRIC_PROM_NAME_MAX - strlen(out) - 1);
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
