/*
 * diff_json.c — a run from a --json document: `check --json` through
 * check's own baseline reader (each result's estimate, its interval
 * intact), `list --json` by the metric table's keys (a figure with an
 * interval row, idle_pct's idle_ci95, keeps it; the others have none and
 * are shown, never judged). Either holds no service, runtime or role
 * check does not write: those fields match anything.
 */
#include "diff/diff.h"
#include "check/check_baseline.h"
#include "util/textsafe.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_JSON_MAX_UNITS (1u << 16)

static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;
	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static void word(char *dst, size_t len, json_object *o, const char *key)
{
	json_object *v = member(o, key);
	snprintf(dst, len, "%s", v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "");
	textsafe(dst);
}

static void no_interval(struct estimate *e, double v)
{
	*e = (struct estimate){ .ok = 1, .est = v, .lo = -INFINITY, .hi = INFINITY, .se = INFINITY, .df = 0,
				.lag1 = NAN };
}

/* A check --json result's rows, a unit per (process, tag) per worker:
 * a row whose metric the current unit already has starts the next one. */
static int from_check(struct diff_run *r, const char *path, char *why, size_t len)
{
	struct check_baseline b;
	int err = check_baseline_read(&b, path, why, len);
	if (err < 0)
		return -EINVAL;
	r->u = calloc(b.n + 1, sizeof(*r->u));
	if (!r->u) {
		check_baseline_done(&b);
		snprintf(why, len, "out of memory");
		return -EINVAL;
	}
	for (size_t i = 0; i < b.n; i++) {
		const struct check_baseline_row *row = &b.v[i];
		const struct metric *m = metric_find(row->metric);
		if (!m || row->filter[0] || strcmp(row->process, "fleet") == 0)
			continue;   /* a filtered share or a roll-up: no unit's figure */
		size_t k = (size_t)(m - metric_worker);
		struct diff_unit *u = NULL;
		for (size_t j = r->n; j-- > 0;)
			if (strcmp(r->u[j].name, row->process) == 0 && strcmp(r->u[j].tag, row->tag) == 0) {
				u = r->u[j].est[k].ok ? NULL : &r->u[j];
				break;
			}
		if (!u) {
			u = &r->u[r->n++];
			snprintf(u->name, sizeof(u->name), "%s", row->process);
			snprintf(u->tag, sizeof(u->tag), "%s", row->tag);
			textsafe(u->name);
			textsafe(u->tag);
		}
		u->est[k] = row->est;
	}
	check_baseline_done(&b);
	return 0;
}

/* list --json's value of m in worker w (counters nest), or NaN. */
static double list_value(json_object *w, const struct metric *m)
{
	json_object *v = member(w, m->name);
	if (!v)
		v = member(member(w, "counters"), m->name);
	if (!v || !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return NAN;
	double d = json_object_get_double(v);
	return isfinite(d) ? d : NAN;
}

static int from_list(struct diff_run *r, json_object *workers, char *why, size_t len)
{
	size_t n = json_object_array_length(workers);
	if (n > DIFF_JSON_MAX_UNITS) {
		snprintf(why, len, "%zu workers: more than a diff reads (%u)", n, DIFF_JSON_MAX_UNITS);
		return -EINVAL;
	}
	r->u = calloc(n + 1, sizeof(*r->u));
	if (!r->u) {
		snprintf(why, len, "out of memory");
		return -EINVAL;
	}
	size_t nm;
	const struct check_metric *cm = diff_metrics(&nm);
	for (size_t i = 0; i < n; i++) {
		json_object *w = json_object_array_get_idx(workers, i);
		if (!json_object_is_type(w, json_type_object)) {
			snprintf(why, len, "worker %zu is not an object", i + 1);
			return -EINVAL;
		}
		struct diff_unit *u = &r->u[r->n++];
		word(u->name, sizeof(u->name), w, "name");
		word(u->service, sizeof(u->service), w, "service");
		word(u->runtime, sizeof(u->runtime), w, "runtime");
		word(u->role, sizeof(u->role), w, "role");
		word(u->tag, sizeof(u->tag), w, "tag");
		json_object *pid = member(w, "pid"), *tid = member(w, "tid");
		u->pid = pid && json_object_is_type(pid, json_type_int) ? (pid_t)json_object_get_int(pid) : 0;
		u->tid = tid && json_object_is_type(tid, json_type_int) ? (pid_t)json_object_get_int(tid) : 0;
		for (size_t j = 0; j < nm; j++) {
			const struct metric *m = metric_find(cm[j].name);
			double v = m ? list_value(w, m) : NAN;
			if (isnan(v))
				continue;
			struct estimate *e = &u->est[m - metric_worker];
			no_interval(e, v);
			double ci = m->interval ? list_value(w, m->interval) : NAN;
			if (ci >= 0) {   /* the model's 95% half-width: normal, as it was made */
				e->se = ci / est_t975(INFINITY);
				e->df = INFINITY;
				e->lo = v - ci;
				e->hi = v + ci;
			}
		}
	}
	return 0;
}

int diff_json_load(struct diff_run *r, const char *path, char *why, size_t len)
{
	json_object *root = json_object_from_file(path);
	if (!root) {
		snprintf(why, len, "not JSON: %s", json_util_get_last_err());
		return -EINVAL;
	}
	json_object *cmd = member(root, "command"), *workers = member(root, "workers");
	int rc;
	if (cmd && json_object_is_type(cmd, json_type_string) && strcmp(json_object_get_string(cmd), "check") == 0)
		rc = from_check(r, path, why, len);
	else if (workers && json_object_is_type(workers, json_type_array))
		rc = from_list(r, workers, why, len);
	else {
		snprintf(why, len, "not a 'loopstat list --json' or 'check --json' document");
		rc = -EINVAL;
	}
	json_object_put(root);
	return rc;
}
