/*
 * list_json.c — list --json of real processes (list_json.h).
 */
#include "support/list_json.h"
#include "support/support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_object *tj_list(const char *pids, const char *duration)
{
	return tj_list_beside(pids, duration, NULL, NULL, NULL);
}

json_object *tj_list_beside(const char *pids, const char *duration, char *const other[], char **other_out,
			    int *other_rc)
{
	char *out[2] = { NULL, NULL };
	int rc[2];
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "-p", (char *)pids, "--duration", (char *)duration, "--json",
			 NULL };
	char *const *argvs[] = { argv, other };
	ts_run_all(other ? 2 : 1, argvs, out, rc, 30000);
	if (other) {
		*other_out = out[1];
		*other_rc = rc[1];
	}
	cr_assert_eq(rc[0], 0, "list: %s", out[0]);
	json_object *doc = json_tokener_parse(out[0]);
	cr_assert(doc, "list's JSON does not parse: %s", out[0]);
	free(out[0]);
	return doc;
}

json_object *tj_list_pid(pid_t pid, const char *duration)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	return tj_list(p, duration);
}

#define TJ_ARGS 24

json_object *tj_list_with(int timeout_ms, const char *duration, ...)
{
	char *argv[TJ_ARGS] = { (char *)ts_loopstat_bin(), "list", "--json", "--duration", (char *)duration };
	int n = 5;
	va_list ap;
	va_start(ap, duration);
	for (const char *a = va_arg(ap, const char *); a && n < TJ_ARGS - 1; a = va_arg(ap, const char *))
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n] = NULL;
	char *out = NULL;
	int rc = ts_run(argv, &out, timeout_ms);
	cr_assert_eq(rc, 0, "list exited %d: %s", rc, out ? out : "");
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "list's JSON does not parse: %s", out);
	free(out);
	return doc;
}

json_object *tj_get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "no \"%s\" in %s", key, json_object_to_json_string(o));
	return v;
}

json_object *tj_find(json_object *doc, pid_t pid, pid_t tid)
{
	json_object *ws = tj_get(doc, "workers");
	for (size_t i = 0; i < json_object_array_length(ws); i++) {
		json_object *w = json_object_array_get_idx(ws, i);
		if (tj_num(w, "pid") == pid && (!tid || tj_num(w, "tid") == tid))
			return w;
	}
	return NULL;
}

json_object *tj_worker(json_object *doc, pid_t pid, pid_t tid)
{
	json_object *w = tj_find(doc, pid, tid);
	cr_assert(w, "no worker %d/%d", (int)pid, (int)tid);
	return w;
}

int tj_rows(json_object *doc, pid_t pid, const char *kind, json_object **rows, int cap)
{
	json_object *ws = tj_get(doc, "workers");
	int n = 0;
	for (size_t i = 0; i < json_object_array_length(ws); i++) {
		json_object *w = json_object_array_get_idx(ws, i);
		if (tj_num(w, "pid") == pid && (!kind || !strcmp(tj_str(w, "kind"), kind)) && n < cap)
			rows[n++] = w;
	}
	return n;
}

json_object *tj_member(json_object *w, pid_t tid)
{
	json_object *ms = tj_get(w, "members");
	for (size_t i = 0; i < json_object_array_length(ms); i++) {
		json_object *m = json_object_array_get_idx(ms, i);
		if (tj_num(m, "tid") == tid)
			return m;
	}
	return NULL;
}

json_object *tj_pools(json_object *w)
{
	return tj_get(w, "pools");
}

double tj_num(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_double(v) : NAN;
}

int tj_null(json_object *o, const char *key)
{
	json_object *v = NULL;
	return json_object_object_get_ex(o, key, &v) && !v;
}

const char *tj_str(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : "(null)";
}

int tj_has_frame(json_object *stall, const char *needle)
{
	json_object *fr = NULL;
	if (!json_object_object_get_ex(stall, "frames", &fr) || !fr)
		return 0;
	for (size_t i = 0; i < json_object_array_length(fr); i++)
		if (strstr(json_object_get_string(json_object_array_get_idx(fr, i)), needle))
			return 1;
	return 0;
}
