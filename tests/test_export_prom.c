/* The Prometheus textfile: HELP/TYPE per family, escaped labels, counters as _total, atomic replace, and promtool check metrics accepts it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_prom.h"
#include "support/support.h"

Test(export_prom, format_atomic_and_promtool, .timeout = 20)
{
	char *dir = ts_tmpdir("expprom"), path[300], err[512];
	snprintf(path, sizeof(path), "%s/loopstat.prom", dir);
	struct export_tag extra = { "zone", "eu\"1\\\n" };
	struct export_point pts[] = {
		{ .prefix = "loopstat", .host = "web1", .process = "nginx \"x\"\nnext", .pid = 1, .tid = 2,
		  .metric = "idle_pct", .value = 42.5, .help = "share of wall time waiting in the poll, %" },
		{ .prefix = "loopstat", .host = "web1", .process = "caf\xc3\xa9 \xff", .pid = 3, .tid = -1, .tag = "acc",
		  .metric = "ops", .value = 1000, .counter = 1, .help = "ops completed\\ever" },
		{ .prefix = "loopstat", .host = "web1", .process = "nginx", .pid = 1, .tid = 5, .metric = "idle_pct",
		  .value = 10, .tags = &extra, .ntags = 1 },
		{ .prefix = "loopstat", .host = "web1", .process = "nginx", .pid = 1, .tid = 6, .metric = "idle_pct",
		  .value = NAN },
	};
	cr_assert_eq(export_prom_write(path, pts, 4, err, sizeof(err)), 0, "%s", err);
	char *text = ts_read_file(path);
	cr_assert(strstr(text, "# HELP loopstat_idle_pct share of wall time waiting in the poll, %\n"
	                       "# TYPE loopstat_idle_pct gauge\n"), "%s", text);
	cr_assert(strstr(text, "# TYPE loopstat_ops_total counter\n"), "%s", text);
	cr_assert(strstr(text, "# HELP loopstat_ops_total ops completed\\\\ever\n"), "%s", text);
	cr_assert(strstr(text, "loopstat_idle_pct{host=\"web1\",process=\"nginx \\\"x\\\"\\nnext\",pid=\"1\",tid=\"2\"} 42.5\n"),
	          "%s", text);
	cr_assert(strstr(text, "process=\"caf\xc3\xa9 ?\",pid=\"3\",tag=\"acc\"} 1000\n"), "%s", text);
	cr_assert(strstr(text, "zone=\"eu\\\"1\\\\\\n\"} 10\n"), "%s", text);
	cr_assert_null(strstr(text, "NaN"), "%s", text);
	/* one HELP per family even though its samples were not adjacent */
	int helps = 0;
	for (char *p = text; (p = strstr(p, "# HELP loopstat_idle_pct ")); p++)
		helps++;
	cr_assert_eq(helps, 1);

	char *argv[] = { "/usr/bin/promtool", "check", "metrics", NULL }, *out = NULL;
	/* promtool reads stdin: run it through sh with the file redirected */
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < '%s' 2>&1", path);
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	(void)argv;
	int rc = ts_run(sh, &out, 15000);
	cr_assert_eq(rc, 0, "promtool: %s\n%s", out, text);
	free(out);

	/* atomic: a rewrite leaves no temp file behind and replaces the whole file */
	cr_assert_eq(export_prom_write(path, pts, 1, err, sizeof(err)), 0, "%s", err);
	free(text);
	text = ts_read_file(path);
	cr_assert_null(strstr(text, "ops_total"), "%s", text);
	DIR *d = opendir(dir);
	struct dirent *e;
	int files = 0;
	while ((e = readdir(d)))
		files += e->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(files, 1);
	cr_assert_neq(export_prom_write("/nonexistent/dir/x.prom", pts, 1, err, sizeof(err)), 0);
	cr_assert(strstr(err, "open(/nonexistent/dir/x.prom.tmp."), "%s", err);
	free(text);
	ts_rmtree_free(dir);
}

Test(export_prom, base_units_spelled_out, .timeout = 10)
{
	struct export_point pts[] = {
		{ .prefix = "loopstat", .pid = -1, .tid = -1, .metric = "stall_ms", .value = 1500 },
		{ .prefix = "loopstat", .pid = -1, .tid = -1, .metric = "headroom_ops_per_s", .value = 7 },
		{ .prefix = "loopstat", .pid = -1, .tid = -1, .metric = "per_sec", .value = 1 },
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	export_prom_format(f, pts, 3, NULL);
	fclose(f);
	cr_assert(strstr(text, "\nloopstat_stall_seconds 1.5\n"), "ms become seconds, value scaled: %s", text);
	cr_assert(strstr(text, "\nloopstat_headroom_ops_per_second 7\n"), "%s", text);
	cr_assert(strstr(text, "\nloopstat_per_sec 1\n"), "only a whole _s part is a unit: %s", text);
	free(text);
}
