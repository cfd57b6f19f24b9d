/*
 * list_json.c — list --json of real processes (list_json.h).
 */
#include "support/list_json.h"
#include "support/support.h"

#include <criterion/criterion.h>
#include <math.h>
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

json_object *tj_worker(json_object *doc, pid_t pid, pid_t tid)
{
	json_object *ws;
	cr_assert(json_object_object_get_ex(doc, "workers", &ws), "no workers array");
	for (size_t i = 0; i < json_object_array_length(ws); i++) {
		json_object *w = json_object_array_get_idx(ws, i);
		if (tj_num(w, "pid") == pid && (!tid || tj_num(w, "tid") == tid))
			return w;
	}
	cr_assert_fail("no worker %d/%d", (int)pid, (int)tid);
	return NULL;
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
