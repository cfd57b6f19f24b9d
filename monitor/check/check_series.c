/*
 * check_series.c — the metrics a threshold may name (the metric table's
 * rows, and the fleet's roll-ups that no worker row shares a name with),
 * their filters, and a threshold's estimate: the evaluator (model/eval.h)
 * over the seconds check kept (model/track.h), so that over the same
 * seconds the estimate is the figure `list` shows.
 */
#include "check/check_series.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/limit.h"
#include "probe_classify.h"

/* ---- the metrics thresholds may name ---- */

/* Metrics a threshold may name: worker rows but tallies and interval
 * widths; fleet rows whose name no worker row has (the others are the
 * pooled worker rows of --fleet). The interval rows are what a verdict
 * judges with, never judged themselves. */
static int has_form(const struct metric *m)
{
	if (metric_is_fleet(m))
		return !metric_find(m->name);
	return m->kind != METRIC_TALLY && m->kind != METRIC_INTERVAL && m->kind != METRIC_LOWER &&
	       m->kind != METRIC_UPPER;
}

/* The unit a threshold's limit is written in, from the row's unit: "%",
 * "ms", what a rate counts per second ("ops/s"), else "" (a count). */
static void unit_of(const struct metric *m, char *u, size_t len)
{
	switch (m->unit) {
	case METRIC_PCT:   snprintf(u, len, "%%"); return;
	case METRIC_MS:    snprintf(u, len, "ms"); return;
	case METRIC_PER_S: snprintf(u, len, "%s/s", m->counts ? m->counts : "1"); return;
	default:           u[0] = '\0'; return;
	}
}

const struct check_metric *check_series_metrics(size_t *n)
{
	static struct check_metric rows[METRIC_NWORKER + METRIC_NFLEET];
	static char units[METRIC_NWORKER + METRIC_NFLEET][CHECK_UNIT_LEN];
	static size_t nrows;
	if (!nrows) {
		for (size_t i = 0; i < METRIC_NWORKER + METRIC_NFLEET; i++) {
			const struct metric *m = i < METRIC_NWORKER ? &metric_worker[i] : &metric_fleet[i - METRIC_NWORKER];
			if (!has_form(m))
				continue;
			unit_of(m, units[nrows], CHECK_UNIT_LEN);
			rows[nrows] = (struct check_metric){
				.name = m->name, .unit = units[nrows],
				.filters = m == &metric_worker[METRIC_W_blocked_pct] ? "syscall,fd" : NULL,
			};
			/* limit_quota is 1 when the limit verdict is quota: limit==quota */
			if (m->kind == METRIC_LIMIT && !metric_is_fleet(m)) {
				rows[nrows].verdict = "limit";
				rows[nrows].word = model_limit_name((enum metric_limit)m->arg);
			}
			nrows++;
		}
	}
	*n = nrows;
	return rows;
}

int check_series_filter_ok(void *arg, const struct check_metric *m, const char *key, const char *value, char *why,
			   size_t whylen)
{
	(void)arg, (void)m;
	if (strcmp(key, "syscall") == 0) {
		if (probe_syscall_nr(value) >= 0)
			return 0;
		snprintf(why, whylen, "no syscall '%s' on this architecture", value);
		return -1;
	}
	if (strcmp(key, "fd") == 0) {
		char *end;
		long fd = strtol(value, &end, 10);
		if (*value >= '0' && *value <= '9' && !*end && fd <= 1 << 30)
			return 0;
		snprintf(why, whylen, "fd '%s' is not a descriptor number", value);
		return -1;
	}
	snprintf(why, whylen, "unknown filter '%s'", key);
	return -1;
}

int check_series_estimate(const struct track *const *trs, size_t ntr, int64_t lo, int64_t hi,
			  const struct check_threshold *t, struct estimate *out)
{
	if (!t || !t->metric)
		return -EINVAL;
	const struct metric *m = metric_find_any(t->metric->name);
	struct eval_filter f = { -1, -1 };
	for (int i = 0; i < t->nfilter; i++) {
		if (strcmp(t->filter[i].key, "syscall") == 0)
			f.nr = probe_syscall_nr(t->filter[i].value);
		else if (strcmp(t->filter[i].key, "fd") == 0)
			f.fd = atoi(t->filter[i].value);
	}
	return m ? track_eval(m, t->nfilter ? &f : NULL, trs, ntr, lo, hi, EVAL_INTERVAL, out) : -EINVAL;
}
