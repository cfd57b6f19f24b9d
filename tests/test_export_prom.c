/* The Prometheus textfile: HELP/TYPE per family, escaped labels, counters as _total, atomic replace that never replaces what is not a regular file of ours, and promtool check metrics accepts it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "exitcodes.h"
#include "expo/expo_points.h"
#include "expo/expo_prom.h"
#include "export/export_prom.h"
#include "export/export_run.h"
#include "support/support.h"
#include "support/users.h"

Test(export_prom, format_atomic_and_promtool, .timeout = 20)
{
	char *dir = ts_tmpdir("expprom"), path[300], err[512];
	snprintf(path, sizeof(path), "%s/loopstat.prom", dir);
	struct expo_tag extra = { "zone", "eu\"1\\\n" };
	struct expo_point pts[] = {
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
	cr_assert(strstr(text, "loopstat_idle_pct{host=\"web1\",name=\"nginx \\\"x\\\"\\nnext\",pid=\"1\",tid=\"2\"} 42.5\n"),
	          "%s", text);
	cr_assert(strstr(text, "name=\"caf\xc3\xa9 ?\",pid=\"3\",tag=\"acc\"} 1000\n"), "%s", text);
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
	cr_assert(strstr(err, "stat(/nonexistent): No such file or directory"), "names what is missing: %s", err);
	free(text);
	ts_rmtree_free(dir);
}

Test(export_prom, base_units_spelled_out, .timeout = 10)
{
	struct expo_point pts[] = {
		{ .prefix = "loopstat", .pid = -1, .tid = -1, .metric = "stall_ms", .value = 1500 },
		{ .prefix = "loopstat", .pid = -1, .tid = -1, .metric = "headroom_ops_per_s", .value = 7 },
		{ .prefix = "loopstat", .pid = -1, .tid = -1, .metric = "per_sec", .value = 1 },
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	expo_prom_format(f, pts, 3, NULL);
	fclose(f);
	cr_assert(strstr(text, "\nloopstat_stall_seconds 1.5\n"), "ms become seconds, value scaled: %s", text);
	cr_assert(strstr(text, "\nloopstat_headroom_ops_per_second 7\n"), "%s", text);
	cr_assert(strstr(text, "\nloopstat_per_sec 1\n"), "only a whole _s part is a unit: %s", text);
	free(text);
}

/* One naming rule: a point made by hand with a row's name in ms, per
 * second or a count reads as that row's Prometheus name, scaled alike. */
Test(export_prom, hand_names_follow_the_table_rule, .timeout = 10)
{
	int checked = 0;
	for (int i = 0; i < METRIC_NWORKER; i++) {
		const struct metric *m = &metric_worker[i];
		if (metric_prom_counter(m) || m->unit == METRIC_PCT || m->unit == METRIC_POINTS)
			continue;   /* a hand-made name has no unit but its "_ms" */
		char metric[128], want[256];
		snprintf(metric, sizeof(metric), "worker_%s", m->name);
		struct expo_point p = { .prefix = "loopstat", .pid = -1, .tid = -1, .metric = metric, .value = 250 };
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);
		expo_prom_format(f, &p, 1, NULL);
		fclose(f);
		snprintf(want, sizeof(want), "\nloopstat_%s %.15g\n", metric_prom_name(m), 250 * metric_prom_scale(m->unit));
		cr_assert(strstr(text, want), "%s: want%s in %s", m->name, want, text);
		free(text);
		checked++;
	}
	cr_assert_gt(checked, 10);
}

/* PATH is replaced by rename: as root that turned /dev/full into a regular
 * file. A device (made here, in a scratch directory), a FIFO, a link, a
 * directory or another user's file is refused with exit 2 and left as it was. */
static struct ts_user u;
static void del_user(void) { ts_user_del(&u); }

Test(export_prom, never_replaces_what_is_not_a_regular_file_of_ours, .timeout = 30, .fini = del_user)
{
	ts_user_add(&u);   /* skips unless root: mknod needs it too */
	char *dir = ts_tmpdir("exppromnode"), path[400], target[400];
	snprintf(target, sizeof(target), "%s/target", dir);
	cr_assert_eq(ts_write_file(target, "x", 1), 0);
	struct { const char *name, *says; mode_t type; } cases[] = {
		{ "full", "character device", S_IFCHR }, { "fifo", "FIFO", S_IFIFO }, { "link", "symbolic link", S_IFLNK },
		{ "dir", "directory", S_IFDIR }, { "theirs", "belongs to uid", S_IFREG },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].name);
		switch (cases[i].type) {
		case S_IFCHR: cr_assert_eq(mknod(path, S_IFCHR | 0666, makedev(1, 7)), 0); break;
		case S_IFIFO: cr_assert_eq(mkfifo(path, 0644), 0); break;
		case S_IFLNK: cr_assert_eq(symlink(target, path), 0); break;
		case S_IFDIR: cr_assert_eq(mkdir(path, 0755), 0); break;
		default:
			cr_assert_eq(ts_write_file(path, "theirs\n", 7), 0);
			cr_assert_eq(chown(path, u.uid, u.gid), 0);
		}
		struct export_opts o;
		export_opts_init(&o);
		snprintf(o.prometheus_textfile, sizeof(o.prometheus_textfile), "%s", path);
		struct expo_point p = { .prefix = "t", .host = "h", .process = "p", .pid = 1, .tid = 2, .metric = "m",
		                          .value = 3, .ts = 4 };
		struct export_input in = { &p, 1, 5, "h", 0 };
		struct export_result r;
		char *log = NULL;
		size_t ll = 0;
		FILE *f = open_memstream(&log, &ll);
		int code = export_run(&o, &in, stdout, f, &r);
		fclose(f);
		struct stat st;
		cr_assert_eq(lstat(path, &st), 0);
		cr_assert_eq(st.st_mode & S_IFMT, cases[i].type, "%s was replaced (mode %o)", cases[i].name, st.st_mode);
		cr_assert_eq(code, EXIT_USAGE, "%s: %d: %s", cases[i].name, code, log);
		cr_assert(strstr(log, path) && strstr(log, cases[i].says), "%s: %s", cases[i].name, log);
		if (cases[i].type == S_IFREG) {
			char *text = ts_read_file(path);
			cr_assert_str_eq(text, "theirs\n");
			free(text);
		}
		free(log);
	}
	ts_rmtree_free(dir);
}

/* The metric table's rows in base units: a percentage as a 0..1 _ratio, a
 * rate of a slot counter as that counter (_total, the raw value, not a
 * rate), ms as _seconds; names unique; OpenMetrics names a counter family
 * without _total and ends in # EOF. */
Test(export_prom, table_names_in_base_units, .timeout = 10)
{
	struct worker_view w;
	memset(&w, 0, sizeof(w));
	w.pid = 10, w.tid = 11, w.instrumented = 1;
	snprintf(w.name, sizeof(w.name), "web");
	for (int i = 0; i < METRIC_NWORKER; i++)
		if (metric_worker[i].type == METRIC_DOUBLE)
			*(double *)((char *)&w + metric_worker[i].offset) = 1;
	w.samples = 100;
	w.idle_pct = 42;
	w.ops_per_s = 5;
	w.stall_ms = 1500;
	w.totals[PROBE_SHM_ops] = 123456789012ull;
	struct model m;
	memset(&m, 0, sizeof(m));
	m.workers = &w, m.n = 1;
	m.fleet.mean_idle_pct = 42;
	struct expo_points b;
	expo_points_init(&b);
	cr_assert_eq(expo_points_add_model(&b, &m, "loopstat", "h", 1), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	expo_prom_format(f, b.pts, b.n, NULL);
	fclose(f);
	const char *labels = "{host=\"h\",name=\"web\",service=\"web\",pid=\"10\",tid=\"11\"}";
	char want[256];
	snprintf(want, sizeof(want), "\nloopstat_worker_idle_ratio%s 0.42\n", labels);
	cr_assert(strstr(text, want), "%s", text);
	snprintf(want, sizeof(want), "# TYPE loopstat_worker_ops_total counter\nloopstat_worker_ops_total%s 123456789012\n",
	         labels);
	cr_assert(strstr(text, want), "the counter itself, not its rate: %s", text);
	snprintf(want, sizeof(want), "\nloopstat_worker_stall_seconds%s 1.5\n", labels);
	cr_assert(strstr(text, want), "%s", text);
	cr_assert(strstr(text, "\nloopstat_fleet_mean_idle_ratio{host=\"h\"} 0.42\n"), "%s", text);
	for (char *line = text, *eol; *line; line = eol + 1) {   /* the samples' names, not the HELP text */
		eol = strchr(line, '\n');
		*eol = '\0';
		if (line[0] != '#') {
			cr_assert_null(strstr(line, "_pct"), "%s", line);
			cr_assert_null(strstr(line, "_per_s{"), "%s", line);
			cr_assert_null(strstr(line, "worker_ops_per_second{"), "a counter row is not also a rate: %s", line);
		}
	}
	free(text);

	/* every row has its own name */
	const struct metric *all[METRIC_NWORKER + METRIC_NFLEET];
	for (int i = 0; i < METRIC_NWORKER; i++)
		all[i] = &metric_worker[i];
	for (int i = 0; i < METRIC_NFLEET; i++)
		all[METRIC_NWORKER + i] = &metric_fleet[i];
	for (int i = 0; i < METRIC_NWORKER + METRIC_NFLEET; i++)
		for (int j = 0; j < i; j++)
			cr_assert_str_neq(metric_prom_name(all[i]), metric_prom_name(all[j]));

	text = NULL;
	f = open_memstream(&text, &len);
	expo_prom_render(f, b.pts, b.n, EXPO_PROM_OPENMETRICS, NULL);
	fclose(f);
	cr_assert(strstr(text, "# TYPE loopstat_worker_ops counter\nloopstat_worker_ops_total{"), "%s", text);
	cr_assert(len > 6 && !strcmp(text + len - 6, "# EOF\n"), "%s", text);
	free(text);
	expo_points_done(&b);
}

/* --resolution 1s makes points for every second; the textfile holds one
 * value per series (node_exporter refuses a series twice): the last second's. */
Test(export_prom, textfile_keeps_the_last_second, .timeout = 10)
{
	char *dir = ts_tmpdir("expprom1s"), path[300];
	snprintf(path, sizeof(path), "%s/loopstat.prom", dir);
	struct expo_point pts[4];
	for (int i = 0; i < 4; i++)
		pts[i] = (struct expo_point){ .prefix = "loopstat", .host = "h", .process = "p", .pid = 1, .tid = 1 + i % 2,
		                                .metric = "idle_pct", .prom = "worker_idle_ratio", .value = 10 * (i + 1),
		                                .prom_value = 0.1 * (i + 1), .ts = 100 + i / 2 };
	struct export_opts o;
	export_opts_init(&o);
	snprintf(o.prometheus_textfile, sizeof(o.prometheus_textfile), "%s", path);
	struct export_input in = { pts, 4, 102, "h", 0 };
	struct export_result r;
	cr_assert_eq(export_run(&o, &in, stdout, stderr, &r), EXIT_OK);
	char *text = ts_read_file(path);
	cr_assert(strstr(text, "tid=\"1\"} 0.3\n") && strstr(text, "tid=\"2\"} 0.4\n"), "%s", text);
	cr_assert_null(strstr(text, "} 0.1\n"), "%s", text);
	cr_assert_null(strstr(text, "} 0.2\n"), "%s", text);
	free(text);
	ts_rmtree_free(dir);
}
