/* Graphite names: sanitising (spaces, dots, newlines, ; = unicode, 200 chars), templates, tags, finite values, line bound; and the config file. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "export/export_config.h"
#include "export/export_name.h"
#include "support/support.h"

static struct expo_point pt(const char *process, const char *tag, const char *metric)
{
	return (struct expo_point){ .prefix = "loopstat", .host = "web1", .process = process, .pid = 42,
	                              .tid = 43, .tag = tag, .metric = metric, .value = 1.5, .ts = 1700000000 };
}

static void no_injection(const char *line)
{
	/* one line, 3 fields, no empty level, no `..` */
	cr_assert_eq(strchr(line, '\n'), line + strlen(line) - 1, "%s", line);
	int spaces = 0;
	for (const char *c = line; *c; c++) {
		spaces += *c == ' ';
		cr_assert((unsigned char)*c >= 0x20 || *c == '\n', "control byte in %s", line);
		cr_assert((unsigned char)*c < 0x80, "non-ASCII in %s", line);
	}
	cr_assert_eq(spaces, 2, "%s", line);
	cr_assert_null(strstr(line, ".."), "%s", line);
	cr_assert_neq(line[0], '.', "%s", line);
}

Test(export_name, default_path, .timeout = 5)
{
	char line[EXPORT_LINE_MAX];
	struct expo_point p = pt("nginx", NULL, "idle_pct");
	cr_assert_eq(export_line(NULL, &p, line), (int)strlen(line));
	cr_assert_str_eq(line, "loopstat.web1.nginx.42.43.idle_pct 1.5 1700000000\n");
	p = pt("nginx", "acceptor", "idle_pct");
	export_line(NULL, &p, line);
	cr_assert_str_eq(line, "loopstat.web1.nginx.42.acceptor.idle_pct 1.5 1700000000\n");
	/* fleet totals: absent pid and tid leave their levels out */
	p.pid = p.tid = -1;
	p.tag = NULL;
	export_line(NULL, &p, line);
	cr_assert_str_eq(line, "loopstat.web1.nginx.idle_pct 1.5 1700000000\n");
}

Test(export_name, hostile_components, .timeout = 5)
{
	static const char *const bad[] = {
		"my server", "a.b.c", "evil\nfake.metric 1 1\n", "x;host=other", "k=v", "caf\xc3\xa9 \xe2\x98\x83",
		"../../etc", "/usr/bin/ruby", "tab\there", "", ".", "\x01\x7f", "~tilde!^",
	};
	char line[EXPORT_LINE_MAX];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		for (int tags = 0; tags < 2; tags++) {
			struct expo_tag extra = { bad[i], bad[i] };
			struct expo_point p = pt(bad[i], bad[i], "idle_pct");
			p.host = bad[i];
			p.tags = &extra;
			p.ntags = 1;
			struct export_name_opts o = { NULL, tags };
			int n = export_line(&o, &p, line);
			cr_assert_gt(n, 0);
			no_injection(line);
			if (tags) {
				/* exactly the built-in tags plus at most the extra: no injected tag */
				int semis = 0, eqs = 0;
				for (char *c = line; *c != ' '; c++)
					semis += *c == ';', eqs += *c == '=';
				cr_assert_eq(semis, eqs, "%s", line);
				cr_assert(semis == 5 || semis == 6, "%s", line);
				cr_assert_null(strchr(line, '~'), "%s", line);
			} else {
				/* exactly 6 levels */
				int dots = 0;
				for (char *c = line; *c != ' '; c++)
					dots += *c == '.';
				cr_assert_eq(dots, 5, "%s", line);
			}
		}
	}
	char out[EXPO_COMPONENT_MAX + 1];
	cr_assert_str_eq((expo_sanitize(out, "caf\xc3\xa9 x", 7), out), "caf__x");
	cr_assert_str_eq((expo_sanitize(out, "", 0), out), "_");
	cr_assert_str_eq((expo_sanitize(out, "a.b;c=d/e", 9), out), "a_b_c_d_e");
}

Test(export_name, long_names_bounded_and_distinct, .timeout = 5)
{
	char a[201], b[201], la[EXPORT_LINE_MAX], lb[EXPORT_LINE_MAX];
	memset(a, 'x', 200);
	a[200] = '\0';
	memcpy(b, a, sizeof(a));
	b[199] = 'y';
	struct expo_point pa = pt(a, a, a), pb = pt(b, b, b);
	cr_assert_gt(export_line(NULL, &pa, la), 0);
	cr_assert_gt(export_line(NULL, &pb, lb), 0);
	cr_assert_str_neq(la, lb, "truncated names must stay distinct");
	cr_assert_lt(strlen(la), 16384 / 4);
	char comp[EXPO_COMPONENT_MAX + 1];
	cr_assert_eq(expo_sanitize(comp, a, 200), EXPO_COMPONENT_MAX);
	/* the longest possible line is still far below carbon's 16 KiB */
	struct expo_tag tags[EXPO_TAGS_MAX];
	for (int i = 0; i < EXPO_TAGS_MAX; i++)
		tags[i] = (struct expo_tag){ a, a };
	pa.tags = tags;
	pa.ntags = EXPO_TAGS_MAX;
	struct export_name_opts o = { NULL, 1 };
	int n = export_line(&o, &pa, la);
	cr_assert(n == -ENAMETOOLONG || (n > 0 && n < EXPORT_LINE_MAX), "%d", n);
}

Test(export_name, nonfinite_never_sent, .timeout = 5)
{
	char line[EXPORT_LINE_MAX];
	struct expo_point p = pt("p", NULL, "m");
	p.value = NAN;
	cr_assert_eq(export_line(NULL, &p, line), -EDOM);
	p.value = INFINITY;
	cr_assert_eq(export_line(NULL, &p, line), -EDOM);
	p.value = -INFINITY;
	cr_assert_eq(export_line(NULL, &p, line), -EDOM);
	p.value = 0.1;
	cr_assert_gt(export_line(NULL, &p, line), 0);
	cr_assert(strstr(line, " 0.1 1700000000\n"), "%s", line);
}

Test(export_name, templates, .timeout = 5)
{
	struct export_template t;
	char err[256], line[EXPORT_LINE_MAX];
	cr_assert_eq(export_template_parse(&t, "{prefix}.{host}.loops.{process}.{metric}", err, sizeof(err)), 0, "%s", err);
	struct export_name_opts o = { &t, 0 };
	struct expo_point p = pt("redis server", NULL, "ops_per_s");
	export_line(&o, &p, line);
	cr_assert_str_eq(line, "loopstat.web1.loops.redis_server.ops_per_s 1.5 1700000000\n");
	static const char *const bad[] = {
		"{host}.{process}", "{prefix}..{metric}", ".{metric}", "{metric}.", "{nope}.{metric}",
		"{metric}.{metric}", "a{host}.{metric}", "sp ace.{metric}", "{metric", "",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(export_template_parse(&t, bad[i], err, sizeof(err)), -EINVAL, "%s", bad[i]);
		cr_assert(err[0], "no reason for %s", bad[i]);
	}
}

Test(export_name, tags_mode, .timeout = 5)
{
	char line[EXPORT_LINE_MAX];
	struct export_name_opts o = { NULL, 1 };
	struct expo_point p = pt("nginx", "acc;ept=or", "idle_pct");
	export_line(&o, &p, line);
	cr_assert_str_eq(line, "loopstat.idle_pct;host=web1;process=nginx;pid=42;tid=43;tag=acc_ept_or 1.5 1700000000\n");
}

Test(export_config, file_and_errors, .timeout = 5)
{
	char *dir = ts_tmpdir("expcfg");
	char path[512], err[600];
	snprintf(path, sizeof(path), "%s/export.conf", dir);
	const char *good = "# loopstat export\n\ngraphite = 127.0.0.1:2003,relay:2013\nprefix = \"prod.loop\"\n"
	                   "max-age = 2h\nmax_spool = 8M\ntags = yes\nduration = 30s\ntimeout = 1m\n"
	                   "template = {prefix}.{host}.{metric}\n";
	cr_assert_eq(ts_write_file(path, good, strlen(good)), 0);
	struct export_opts o;
	export_opts_init(&o);
	cr_assert_eq(export_config_load(&o, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(o.graphite, "127.0.0.1:2003,relay:2013");
	cr_assert_str_eq(o.prefix, "prod.loop");
	cr_assert_eq(o.max_age_s, 7200);
	cr_assert_eq(o.max_spool_bytes, 8 << 20);
	cr_assert_eq(o.tags, 1);
	cr_assert_eq(o.duration_s, 30);
	cr_assert_eq(o.timeout_s, 60);
	cr_assert_str_eq(o.tmpl, "{prefix}.{host}.{metric}");

	const char *unknown = "prefix = a\n\ngrafite = x:1\n";
	ts_write_file(path, unknown, strlen(unknown));
	cr_assert_eq(export_config_load(&o, path, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, ":3: unknown option 'grafite'"), "%s", err);
	unlink(path);
	const char *badval = "max-age = soon\n";
	ts_write_file(path, badval, strlen(badval));
	cr_assert_eq(export_config_load(&o, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":1: invalid max-age 'soon'"), "%s", err);
	unlink(path);
	const char *noeq = "graphite\n";
	ts_write_file(path, noeq, strlen(noeq));
	cr_assert_eq(export_config_load(&o, path, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, ":1: expected 'key = value'"), "%s", err);
	cr_assert_eq(export_config_load(&o, "/nonexistent/x.conf", err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "open(/nonexistent/x.conf)"), "%s", err);
	/* the command line sets the same struct */
	cr_assert_eq(export_opts_set(&o, "dry-run", NULL, err, sizeof(err)), 0);
	cr_assert_eq(o.dry_run, 1);
	cr_assert_eq(export_opts_set(&o, "resolution", "2s", err, sizeof(err)), -EINVAL);
	ts_rmtree_free(dir);
}
