/*
 * list_json.c — list --json of real processes (list_json.h).
 */
#include "support/list_json.h"
#include "support/support.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

json_object *tj_list(const char *pids, const char *duration)
{
	char *out = NULL;
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "-p", (char *)pids, "--duration", (char *)duration, "--json",
			 NULL };
	cr_assert_eq(ts_run(argv, &out, 30000), 0, "list: %s", out ? out : "");
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "list's JSON does not parse: %s", out);
	free(out);
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

const char *tj_str(json_object *o, const char *key)
{
	json_object *v;
	return json_object_object_get_ex(o, key, &v) && v ? json_object_get_string(v) : "(null)";
}
