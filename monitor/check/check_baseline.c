/*
 * check_baseline.c — reading a `check --json` result back with json-c.
 * A baseline decides verdicts, so every number is checked as strictly as a
 * threshold is: a JSON number (not the string "70"), finite, and in the
 * metric's range (a percentage 0..100, anything else at least 0); an
 * idle_pct of -1e308 would otherwise pass any threshold.
 */
#include "check/check_baseline.h"
#include "check/check_series.h"

#include <errno.h>
#include <float.h>
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void filter_text(const struct check_threshold *t, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < t->nfilter && o < len; i++) {
		int w = snprintf(buf + o, len - o, "%s%s=%s", i ? "," : "", t->filter[i].key, t->filter[i].value);
		if (w > 0)
			o += (size_t)w;
	}
}

static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* The member key: def for null or missing, else a JSON number, finite,
 * in [lo, hi]. 0, or -EINVAL with what was wrong in why. */
static int num(json_object *o, const char *key, double def, double lo, double hi, double *out, char *why,
	       size_t len)
{
	json_object *v = member(o, key);
	if (!v || json_object_is_type(v, json_type_null)) {
		*out = def;
		return 0;
	}
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) {
		snprintf(why, len, "%s is not a number: %s", key, json_object_to_json_string(v));
		return -EINVAL;
	}
	double d = json_object_get_double(v);
	if (!isfinite(d) || d < lo || d > hi) {
		snprintf(why, len, "%s %g is out of range (%g to %g)", key, d, lo, hi);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

/* The member key: absent is false, else it must be true or false. */
static int flag(json_object *r, const char *key, int *out, char *why, size_t len)
{
	json_object *c = member(r, key);
	if (c && !json_object_is_type(c, json_type_boolean)) {
		snprintf(why, len, "%s is not true or false", key);
		return -EINVAL;
	}
	*out = c && json_object_get_boolean(c);
	return 0;
}

/* The values a metric takes, from the unit thresholds use for it. */
static void metric_range(const char *name, double *lo, double *hi)
{
	size_t n;
	const struct check_metric *m = check_series_metrics(&n);
	*lo = 0;
	*hi = DBL_MAX;
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0 && m[i].unit && strcmp(m[i].unit, "%") == 0)
			*hi = 100;
}

static const char *str(json_object *o, const char *key)
{
	json_object *v = member(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static int read_row(json_object *r, struct check_baseline_row *row, char *why, size_t len)
{
	const char *metric = str(r, "metric"), *process = str(r, "process"), *tag = str(r, "tag");
	json_object *filter = member(r, "filter");
	if (!metric || !process || !filter || !json_object_is_type(filter, json_type_object)) {
		snprintf(why, len, "it lacks metric, process or filter");
		return -EINVAL;
	}
	memset(row, 0, sizeof(*row));
	snprintf(row->metric, sizeof(row->metric), "%s", metric);
	snprintf(row->process, sizeof(row->process), "%s", process);
	snprintf(row->tag, sizeof(row->tag), "%s", tag ? tag : "");
	size_t o = 0;
	json_object_object_foreach(filter, k, v) {
		if (!json_object_is_type(v, json_type_string)) {
			snprintf(why, len, "filter %s is not a string", k);
			return -EINVAL;
		}
		int w = snprintf(row->filter + o, sizeof(row->filter) - o, "%s%s=%s", o ? "," : "", k,
				 json_object_get_string(v));
		if (w > 0 && (size_t)w < sizeof(row->filter) - o)
			o += (size_t)w;
	}
	struct estimate *e = &row->est;
	double lo, hi, batches;
	metric_range(metric, &lo, &hi);
	if (num(r, "value", NAN, lo, hi, &e->est, why, len) < 0 || num(r, "lo", -INFINITY, -DBL_MAX, DBL_MAX, &e->lo, why, len) < 0 ||
	    num(r, "hi", INFINITY, -DBL_MAX, DBL_MAX, &e->hi, why, len) < 0 ||
	    num(r, "se", INFINITY, 0, DBL_MAX, &e->se, why, len) < 0 || num(r, "df", 0, 0, DBL_MAX, &e->df, why, len) < 0 ||
	    num(r, "n", 0, 0, DBL_MAX, &e->n, why, len) < 0 || num(r, "n_eff", 0, 0, DBL_MAX, &e->n_eff, why, len) < 0 ||
	    num(r, "batches", 0, 0, UINT_MAX, &batches, why, len) < 0 ||
	    num(r, "batch_s", 0, 0, DBL_MAX, &e->batch_s, why, len) < 0 || num(r, "lag1", NAN, -1, 1, &e->lag1, why, len) < 0)
		return -EINVAL;
	e->batches = (unsigned)batches;
	e->ok = !isnan(e->est);
	if (e->ok && !isfinite(e->se)) {
		snprintf(why, len, "value without se");
		return -EINVAL;
	}
	if (e->ok && !(e->lo <= e->est && e->est <= e->hi)) {
		snprintf(why, len, "value %g outside its interval [%g, %g]", e->est, e->lo, e->hi);
		return -EINVAL;
	}
	if (flag(r, "correlated", &e->correlated, why, len) < 0 || flag(r, "unresolved", &e->unresolved, why, len) < 0)
		return -EINVAL;
	/* a figure the samples could not resolve (a sampled lag): known to be
	 * unknown, so a threshold relative to it is inconclusive, not nothing */
	if (e->unresolved && isnan(e->est))
		e->ok = 1;
	return 0;
}

int check_baseline_read(struct check_baseline *b, const char *path, char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "open(%s): %s", path, strerror(e));
		return -e;
	}
	fclose(f);
	json_object *root = json_object_from_file(path);
	json_object *results = root ? member(root, "results") : NULL;
	const char *cmd = root ? str(root, "command") : NULL;
	json_object *version = root ? member(root, "version") : NULL;
	if (!root || !cmd || strcmp(cmd, "check") != 0 || !version || !json_object_is_type(version, json_type_int) ||
	    json_object_get_int64(version) != 1 || !results || !json_object_is_type(results, json_type_array)) {
		snprintf(err, errlen, "%s: not a 'loopstat check --json' result (version 1)%s%s", path,
			 root ? "" : ": ", root ? "" : json_util_get_last_err());
		json_object_put(root);
		return -EINVAL;
	}
	size_t n = json_object_array_length(results);
	b->v = calloc(n ? n : 1, sizeof(*b->v));
	if (!b->v) {
		json_object_put(root);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		char why[256];
		json_object *r = json_object_array_get_idx(results, i);
		if (!json_object_is_type(r, json_type_object) || read_row(r, &b->v[b->n], why, sizeof(why)) < 0) {
			if (!json_object_is_type(r, json_type_object))
				snprintf(why, sizeof(why), "it is not an object");
			snprintf(err, errlen, "%s: result %zu: %s", path, i + 1, why);
			json_object_put(root);
			check_baseline_done(b);
			return -EINVAL;
		}
		b->n++;
	}
	json_object_put(root);
	return 0;
}

void check_baseline_done(struct check_baseline *b)
{
	free(b->v);
	memset(b, 0, sizeof(*b));
}

const struct estimate *check_baseline_find(const struct check_baseline *b, const struct check_threshold *t,
						  const char *process, const char *tag)
{
	char filter[sizeof(b->v[0].filter)];
	filter_text(t, filter, sizeof(filter));
	for (size_t i = 0; i < b->n; i++) {
		const struct check_baseline_row *r = &b->v[i];
		if (strcmp(r->metric, t->metric->name) == 0 && strcmp(r->filter, filter) == 0 &&
		    strcmp(r->process, process) == 0 && strcmp(r->tag, tag) == 0)
			return &r->est;
	}
	return NULL;
}
