/* What contrib/ ships for serve: the Prometheus rules pass promtool check rules and their unit tests (which fail when a threshold moves), every PromQL expression of the Grafana dashboard passes promtool, every loopstat_ name in them is the metric table's, and the systemd unit runs the installed binary on the default port. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/limit.h"
#include "model/metric.h"
#include "serve/serve.h"
#include "support/support.h"

#define RULES "contrib/prometheus/loopstat.rules.yml"
#define RULES_TEST "contrib/prometheus/loopstat.rules.test.yml"
#define DASHBOARD "contrib/grafana/loopstat.json"
#define UNIT "contrib/systemd/loopstat-serve.service"


static int sh(const char *cmd, char **out)
{
	char *argv[] = { "/bin/sh", "-c", (char *)cmd, NULL };
	return ts_run(argv, out, 30000);
}

Test(serve_contrib, rules_pass_promtool_and_their_unit_tests, .timeout = 60)
{
	char *out;
	int rc = sh("/usr/bin/promtool check rules " RULES " 2>&1", &out);
	cr_assert_eq(rc, 0, "promtool check rules: %s", out);
	cr_assert(strstr(out, "SUCCESS"), "%s", out);
	free(out);
	rc = sh("cd contrib/prometheus && /usr/bin/promtool test rules loopstat.rules.test.yml 2>&1", &out);
	cr_assert_eq(rc, 0, "promtool test rules: %s", out);
	free(out);

	/* the unit tests can fail: a saturation threshold of 0.05 instead of 0.2 misses the worker at 12.5 % */
	char *dir = ts_tmpdir("rules"), cmd[1200];
	snprintf(cmd, sizeof(cmd), "sed 's/loopstat_worker_idle_ratio < 0.2$/loopstat_worker_idle_ratio < 0.05/' %s "
	         "> %s/loopstat.rules.yml && cp %s %s/ && grep -q '< 0.05$' %s/loopstat.rules.yml && cd %s && "
	         "/usr/bin/promtool test rules loopstat.rules.test.yml 2>&1", RULES, dir, RULES_TEST, dir, dir, dir);
	rc = sh(cmd, &out);
	cr_assert_neq(rc, 0, "the unit tests pass a rule whose threshold moved: %s", out);
	cr_assert(strstr(out, "LoopstatWorkerSaturated"), "%s", out);
	free(out);
	ts_rmtree_free(dir);
}

/* Every "expr" string below o, into exprs. */
static void collect_exprs(json_object *o, const char **exprs, int *n, int max)
{
	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val) {
			if (!strcmp(key, "expr") && json_object_is_type(val, json_type_string) && *n < max)
				exprs[(*n)++] = json_object_get_string(val);
			else
				collect_exprs(val, exprs, n, max);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			collect_exprs(json_object_array_get_idx(o, i), exprs, n, max);
	}
}

/* expr with Grafana's variables replaced by what Grafana would put there. */
static void expand(const char *expr, char *out, size_t len)
{
	static const struct { const char *var, *val; } vars[] = {
		{ "$__rate_interval", "1m" }, { "$__interval", "1m" }, { "$__range", "1h" },
		{ "$host", "web1|web2" }, { "$service", ".*" },
	};
	size_t j = 0;
	for (const char *p = expr; *p && j + 16 < len;) {
		size_t v = 0;
		while (v < sizeof(vars) / sizeof(vars[0]) && strncmp(p, vars[v].var, strlen(vars[v].var)))
			v++;
		if (v < sizeof(vars) / sizeof(vars[0])) {
			j += (size_t)snprintf(out + j, len - j, "%s", vars[v].val);
			p += strlen(vars[v].var);
		} else {
			cr_assert(*p != '$', "an unknown Grafana variable in %s", expr);
			out[j++] = *p++;
		}
	}
	out[j] = '\0';
}

Test(serve_contrib, every_dashboard_expression_passes_promtool, .timeout = 60)
{
	json_object *dash = json_object_from_file(DASHBOARD), *panels;
	cr_assert(dash, "%s is not JSON", DASHBOARD);
	cr_assert(json_object_object_get_ex(dash, "panels", &panels));
	/* what the issue asks the dashboard to show */
	const char *wanted[] = { "heatmap:Fleet idle", "timeseries:Headroom per service", "timeseries:lag p99",
	                         "timeseries:limits" };
	for (size_t w = 0; w < sizeof(wanted) / sizeof(wanted[0]); w++) {
		int found = 0;
		size_t tl = strcspn(wanted[w], ":");
		for (size_t i = 0; i < json_object_array_length(panels); i++) {
			json_object *p = json_object_array_get_idx(panels, i), *type, *title;
			if (json_object_object_get_ex(p, "type", &type) && json_object_object_get_ex(p, "title", &title) &&
			    !strncmp(json_object_get_string(type), wanted[w], tl) &&
			    strlen(json_object_get_string(type)) == tl &&
			    strcasestr(json_object_get_string(title), wanted[w] + tl + 1))
				found = 1;
		}
		cr_assert(found, "no %s panel", wanted[w]);
	}
	const char *exprs[64];
	int n = 0;
	collect_exprs(panels, exprs, &n, 64);
	cr_assert_geq(n, (int)json_object_array_length(panels), "a panel without a query");

	/* one recording rule per expression: promtool parses each as PromQL */
	char *dir = ts_tmpdir("dash"), path[400], buf[2048];
	snprintf(path, sizeof(path), "%s/dashboard.rules.yml", dir);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "groups:\n  - name: dashboard\n    rules:\n");
	for (int i = 0; i < n; i++) {
		expand(exprs[i], buf, sizeof(buf));
		fprintf(f, "      - record: dashboard:expr_%d\n        expr: |\n          ", i);
		for (const char *c = buf; *c; c++)
			fputs(*c == '\n' ? "\n          " : (char[]){ *c, 0 }, f);
		fputc('\n', f);
	}
	fclose(f);
	char cmd[600], *out;
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check rules '%s' 2>&1", path);
	int rc = sh(cmd, &out);
	cr_assert_eq(rc, 0, "promtool refuses a dashboard expression: %s", out);
	char want[64];
	snprintf(want, sizeof(want), "SUCCESS: %d rules found", n);
	cr_assert(strstr(out, want), "%s", out);
	free(out);
	ts_rmtree_free(dir);
	json_object_put(dash);
}

/* 1 when name is the Prometheus name of a row of the metric table. */
static int table_name(const char *name)
{
	char full[160];
	for (int i = 0; i < METRIC_NWORKER + METRIC_NFLEET; i++) {
		const struct metric *m = i < METRIC_NWORKER ? &metric_worker[i] : &metric_fleet[i - METRIC_NWORKER];
		snprintf(full, sizeof(full), "loopstat_%s", metric_prom_name(m));
		if (!strcmp(full, name))
			return 1;
	}
	return 0;
}

Test(serve_contrib, every_name_is_the_tables, .timeout = 10)
{
	const char *files[] = { RULES, RULES_TEST, DASHBOARD };
	regex_t re;
	cr_assert_eq(regcomp(&re, "loopstat_[a-z0-9_]+", REG_EXTENDED), 0);
	int names = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *text = ts_read_file(files[i]);
		regmatch_t m;
		for (const char *p = text; regexec(&re, p, 1, &m, 0) == 0; p += m.rm_eo) {
			char name[160];
			snprintf(name, sizeof(name), "%.*s", (int)(m.rm_eo - m.rm_so), p + m.rm_so);
			/* a recording rule's name holds the metric's (service:loopstat_worker_idle_ratio:avg),
			 * a counter's without its _total (service:loopstat_worker_ops:rate1m) */
			char counter[180];
			snprintf(counter, sizeof(counter), "%s_total", name);
			int ok = table_name(name) || table_name(counter);
			cr_expect(ok, "%s names %s: not a metric table name (docs/export.md's metric list)", files[i], name);
			names++;
		}
		free(text);
	}
	regfree(&re);
	cr_assert_gt(names, 20);
}

/* The "What limits" panel stacks every limit the model can give. */
Test(serve_contrib, dashboard_shows_every_limit, .timeout = 10)
{
	char *text = ts_read_file(DASHBOARD);
	cr_assert(text);
	for (int l = METRIC_LIMIT_NONE + 1; l < METRIC_NLIMITS; l++) {
		char want[96];
		snprintf(want, sizeof(want), "loopstat_worker_limit_%s{", model_limit_name((enum metric_limit)l));
		cr_expect(strstr(text, want), "the dashboard has no panel target for %s", want);
	}
	free(text);
}

Test(serve_contrib, systemd_unit_runs_the_installed_binary_on_the_default_port, .timeout = 10)
{
	char *unit = ts_read_file(UNIT), *mk = ts_read_file("Makefile"), prefix[256] = "", want[400];
	for (const char *p = mk; p && !prefix[0]; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		sscanf(p, "PREFIX ?= %255s", prefix);
	cr_assert(prefix[0], "no PREFIX ?= in the Makefile");
	snprintf(want, sizeof(want), "\nExecStart=%s/bin/loopstat serve --listen %s\n", prefix, SERVE_DEFAULT_LISTEN);
	cr_assert(strstr(unit, want), "%s lacks %s", UNIT, want + 1);
	char port[16];
	snprintf(port, sizeof(port), ":%d", SERVE_DEFAULT_PORT);
	cr_assert(strstr(SERVE_DEFAULT_LISTEN, port));
	cr_assert(strstr(unit, "\nKillSignal=SIGTERM\n"), "%s", unit);
	free(unit);
	free(mk);
}
