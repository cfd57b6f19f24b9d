/* check_run.c — see check_run.h. */
#include "check_run.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "children.h"
#include "support.h"

int ck_check(const char *args, int both, char **out, long long *ms)
{
	long long t0 = ts_now_ms();
	int rc;
	ck_check_all(1, &args, both, out, &rc);
	if (ms)
		*ms = ts_now_ms() - t0;
	return rc;
}

void ck_check_all(int n, const char *const args[], int both, char **outs, int *rcs)
{
	char (*cmd)[4096] = calloc((size_t)n, sizeof(*cmd));
	const char **cmds = calloc((size_t)n, sizeof(*cmds));
	cr_assert(cmd && cmds);
	for (int i = 0; i < n; i++) {
		snprintf(cmd[i], sizeof(cmd[i]), "exec \"%s\" check %s %s", ts_loopstat_bin(), args[i],
			 both ? "2>&1" : "2>/dev/null");
		cmds[i] = cmd[i];
	}
	ts_sh_all(n, cmds, outs, rcs, 35000);
	free(cmds);
	free(cmd);
}

pid_t ck_duty(const char *idle, const char *extra1, const char *extra2)
{
	const char *args[] = { "--idle", idle, "--seconds", "30", extra1, extra2, extra1 ? "--plain" : NULL, NULL };
	return tc_spawn_example("duty_cycle", args, NULL);
}

pid_t ck_stalled(void)
{
	return tc_spawn_hogger("stall", 0.2, 1.2, 30);
}

json_object *ck_get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "no '%s' in %s", key, json_object_to_json_string(o));
	return v;
}

json_object *ck_result(json_object *root, pid_t pid, const char *threshold)
{
	json_object *rs = ck_get(root, "results");
	for (size_t i = 0; i < json_object_array_length(rs); i++) {
		json_object *r = json_object_array_get_idx(rs, i);
		if ((pid == 0 || json_object_get_int(ck_get(r, "pid")) == pid) &&
		    strcmp(json_object_get_string(ck_get(r, "threshold")), threshold) == 0)
			return r;
	}
	cr_assert_fail("no result for pid %d %s in %s", (int)pid, threshold, json_object_to_json_string(root));
	return NULL;
}

void ck_expect_verdict(json_object *root, pid_t pid, const char *threshold, const char *verdict)
{
	json_object *r = ck_result(root, pid, threshold);
	cr_expect_str_eq(json_object_get_string(ck_get(r, "verdict")), verdict, "pid %d %s: %s", (int)pid, threshold,
			 json_object_to_json_string(r));
}

json_object *ck_parse(const char *out)
{
	json_object *o = json_tokener_parse(out);
	cr_assert(o, "not JSON: %s", out);
	return o;
}
