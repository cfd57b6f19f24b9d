/*
 * check_baseline.c — reading a `check --json` result back with json-c.
 */
#include "check/check_baseline.h"

#include <errno.h>
#include <json-c/json.h>
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

/* A number, or def for null / missing. */
static double num(json_object *o, const char *key, double def)
{
	json_object *v = member(o, key);
	if (!v || json_object_is_type(v, json_type_null))
		return def;
	return json_object_get_double(v);
}

static const char *str(json_object *o, const char *key)
{
	json_object *v = member(o, key);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static int read_row(json_object *r, struct check_baseline_row *row)
{
	const char *metric = str(r, "metric"), *process = str(r, "process"), *tag = str(r, "tag");
	json_object *filter = member(r, "filter");
	if (!metric || !process || !filter || !json_object_is_type(filter, json_type_object))
		return -EINVAL;
	memset(row, 0, sizeof(*row));
	snprintf(row->metric, sizeof(row->metric), "%s", metric);
	snprintf(row->process, sizeof(row->process), "%s", process);
	snprintf(row->tag, sizeof(row->tag), "%s", tag ? tag : "");
	size_t o = 0;
	json_object_object_foreach(filter, k, v) {
		int w = snprintf(row->filter + o, sizeof(row->filter) - o, "%s%s=%s", o ? "," : "", k,
				 json_object_get_string(v));
		if (w > 0 && (size_t)w < sizeof(row->filter) - o)
			o += (size_t)w;
	}
	struct estimate *e = &row->est;
	e->est = num(r, "value", NAN);
	e->ok = !isnan(e->est);
	e->lo = num(r, "lo", -INFINITY);
	e->hi = num(r, "hi", INFINITY);
	e->se = num(r, "se", INFINITY);
	e->df = num(r, "df", 0);
	e->n = num(r, "n", 0);
	e->n_eff = num(r, "n_eff", 0);
	e->batches = (unsigned)num(r, "batches", 0);
	e->batch_s = num(r, "batch_s", 0);
	e->lag1 = num(r, "lag1", NAN);
	json_object *c = member(r, "correlated");
	e->correlated = c && json_object_get_boolean(c);
	if (e->ok && (isnan(e->se) || e->se < 0))
		return -EINVAL;
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
	if (!root || !cmd || strcmp(cmd, "check") != 0 || num(root, "version", 0) != 1 || !results ||
	    !json_object_is_type(results, json_type_array)) {
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
		if (read_row(json_object_array_get_idx(results, i), &b->v[b->n]) < 0) {
			snprintf(err, errlen, "%s: result %zu lacks metric, process, filter or a usable value/se", path,
				 i + 1);
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
