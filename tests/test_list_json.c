/* `loopstat list` (text and --json) against a real writer, plus the CLI's help, version and usage errors. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("list");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	fl_stats_close();
	ts_rmtree_free(dir);
}

TestSuite(list, .init = setup, .fini = teardown, .timeout = 30);

/* list samples for --duration; a short one keeps the suite fast */
static char *run_loopstat(int *rc, const char *a1, const char *a2, const char *a3)
{
	int is_list = a1 && strcmp(a1, "list") == 0;
	char *argv[] = { (char *)ts_loopstat_bin(), (char *)a1, (char *)a2, (char *)a3, NULL, NULL, NULL };
	if (is_list) {
		int n = a3 ? 4 : a2 ? 3 : 2;
		argv[n] = "--duration";
		argv[n + 1] = "0.3";
	}
	char *out = NULL;
	*rc = ts_run(argv, &out, 10000);
	return out;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "missing key '%s' in %s", key,
		  json_object_to_json_string(o));
	return v;
}

Test(list, json_carries_every_published_value)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("web", LOOPSTAT_BACKEND_LIBEV, 9);
	cr_assert(s);
	/* a distinct value per field, so a swapped key cannot pass */
#define SET(name, kind, unit, desc) fl_stat_set(&s->name, 1000 + PROBE_SHM_##name);
	LOOPSTAT_SLOT_VALUES(SET)
#undef SET
	fl_stat_set(&s->current_tag, fl_stats_tag_index(s, "handler"));

	int rc;
	char *out = run_loopstat(&rc, "list", "--json", NULL);
	cr_assert_eq(rc, 0, "exit %d, output: %s", rc, out);
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "not JSON: %s", out);
	cr_assert_eq(json_object_get_int(get(doc, "version")), 1);
	json_object *workers = get(doc, "workers");
	cr_assert_eq(json_object_array_length(workers), 1);
	json_object *w = json_object_array_get_idx(workers, 0);
	cr_assert_eq(json_object_get_int(get(w, "pid")), getpid());
	cr_assert_eq(json_object_get_int(get(w, "tid")), gettid());
	cr_assert_str_eq(json_object_get_string(get(w, "tag")), "web");
	cr_assert_str_eq(json_object_get_string(get(w, "backend")), "libev");
	cr_assert(json_object_get_boolean(get(w, "instrumented")));
	cr_assert_str_eq(json_object_get_string(get(w, "fiber_tag")), "handler");
	json_object *totals = get(w, "totals");
	cr_assert_eq(json_object_object_length(totals), PROBE_SHM_NVALUES);
	for (int i = 0; i < PROBE_SHM_NVALUES; i++) {
		if (i == PROBE_SHM_current_tag)
			continue;
		int64_t v = json_object_get_int64(get(totals, probe_shm_values[i].name));
		cr_assert_eq(v, 1000 + i, "%s = %ld", probe_shm_values[i].name, (long)v);
	}
	cr_assert_eq(json_object_get_int64(get(totals, "current_tag")), 1);
	json_object_put(doc);
	free(out);
}

Test(list, json_follows_moving_counters_and_filters_by_pid)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire(NULL, LOOPSTAT_BACKEND_IO_URING, 3);
	cr_assert(s);
	int rc;
	for (uint64_t round = 1; round <= 3; round++) {
		fl_stat_add(&s->switches, 100);
		char *out = run_loopstat(&rc, "list", "--json", NULL);
		json_object *doc = json_tokener_parse(out);
		cr_assert(doc);
		json_object *w = json_object_array_get_idx(get(doc, "workers"), 0);
		cr_assert_eq(json_object_get_int64(get(get(w, "totals"), "switches")), (int64_t)(100 * round));
		json_object_put(doc);
		free(out);
	}
	char *out = run_loopstat(&rc, "list", "--json", "-p1");
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc);
	cr_assert_eq(json_object_array_length(get(doc, "workers")), 0, "-p 1 excludes us");
	json_object_put(doc);
	free(out);
}

Test(list, text_table_lists_the_worker)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("textual", LOOPSTAT_BACKEND_IO_URING, 3);
	cr_assert(s);
	int rc;
	char *out = run_loopstat(&rc, "list", NULL, NULL);
	cr_assert_eq(rc, 0);
	char pid[32];
	snprintf(pid, sizeof(pid), " %d ", (int)getpid());
	cr_assert(strstr(out, "PID"), "%s", out);
	cr_assert(strstr(out, pid), "%s", out);
	cr_assert(strstr(out, "/textual"), "%s", out);
	cr_assert(strstr(out, "io_uring"), "%s", out);
	cr_assert(strstr(out, "\n1 worker, mean idle"), "one worker, singular: %s", out);
	free(out);
}

Test(list, empty_directory_is_an_empty_list)
{
	int rc;
	char *out = run_loopstat(&rc, "list", "-j", NULL);
	cr_assert_eq(rc, 4, "nothing to measure, as export and check say it: exit %d", rc);
	json_object *doc = json_tokener_parse(out);
	cr_assert(doc, "not JSON: %s", out);
	cr_assert_eq(json_object_get_int(get(doc, "version")), 1);
	cr_assert_eq(json_object_array_length(get(doc, "workers")), 0);
	cr_assert_eq(json_object_get_int(get(get(doc, "fleet"), "workers")), 0);
	json_object_put(doc);
	free(out);
}

Test(list, help_version_and_usage_errors)
{
	int rc;
	char *out = run_loopstat(&rc, "--help", NULL, NULL);
	cr_assert_eq(rc, 0);
	cr_assert(strstr(out, "usage: loopstat"));
	free(out);
	out = run_loopstat(&rc, "--version", NULL, NULL);
	cr_assert_eq(rc, 0);
	cr_assert(strncmp(out, "loopstat ", 9) == 0, "%s", out);
	free(out);
	free(run_loopstat(&rc, "--frobnicate", NULL, NULL));
	cr_assert_eq(rc, 2);
	free(run_loopstat(&rc, "frobnicate", NULL, NULL));
	cr_assert_eq(rc, 2);
	free(run_loopstat(&rc, "list", "-p", "12,abc"));
	cr_assert_eq(rc, 2);
	free(run_loopstat(&rc, "list", "-n", "(unclosed"));
	cr_assert_eq(rc, 2);
	free(run_loopstat(&rc, "-p", NULL, NULL)); /* missing argument */
	cr_assert_eq(rc, 2);
}

Test(list, gc_removes_only_stale_segments)
{
	cr_assert_eq(fl_stats_open(NULL), 0);
	pid_t dead = fork();
	cr_assert_geq(dead, 0);
	if (dead == 0)
		_exit(0);
	cr_assert_eq(waitpid(dead, NULL, 0), dead);
	char stale[600];
	snprintf(stale, sizeof(stale), "%s/loopstat.%d", dir, (int)dead);
	/* a copy of our live segment, claimed by a process that is gone */
	FILE *in = fopen(fl_stats_path(), "rb");
	cr_assert(in);
	static char buf[1 << 20] __attribute__((aligned(64))); /* read as a header */
	size_t n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	((struct loopstat_shm_header *)buf)->pid = dead;
	cr_assert_eq(ts_write_file(stale, buf, n), 0);
	/* and a file a writer left before its header was written */
	pid_t dead2 = fork();
	cr_assert_geq(dead2, 0);
	if (dead2 == 0)
		_exit(0);
	cr_assert_eq(waitpid(dead2, NULL, 0), dead2);
	char empty[600];
	snprintf(empty, sizeof(empty), "%s/loopstat.%d", dir, (int)dead2);
	cr_assert_eq(ts_write_file(empty, "", 0), 0);
	int rc;
	char *out = run_loopstat(&rc, "gc", NULL, NULL);
	cr_assert_eq(rc, 0);
	cr_assert(strstr(out, "2 stale segments removed"), "%s", out);
	free(out);
	cr_assert_neq(access(stale, F_OK), 0, "stale segment removed");
	cr_assert_neq(access(empty, F_OK), 0, "half-made segment removed");
	cr_assert_eq(access(fl_stats_path(), F_OK), 0, "live segment kept");
}
