/* docs/export.md's metric list is the metric table: every row with its Graphite leaf, unit, Prometheus name and type, the Prometheus name it had before, and no other row; its crontab lines run under cron's PATH. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expo/expo_points.h"
#include "expo/expo_prom.h"
#include "model/metric.h"

#define BEGIN_MARK "<!-- METRIC LIST"
#define END_MARK "<!-- END METRIC LIST -->"

static char *read_doc(void)
{
	FILE *f = fopen("docs/export.md", "r");
	cr_assert(f, "docs/export.md (tests run from the source tree)");
	static char buf[128 * 1024];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

/* The Prometheus family name export_prom gives the metric, read back from its # TYPE line. */
static void prom_name(const char *leaf, char *out, size_t len)
{
	struct expo_point p = { .prefix = "loopstat", .host = "h", .pid = -1, .tid = -1, .metric = leaf, .value = 1 };
	char *text = NULL;
	size_t tl = 0;
	FILE *f = open_memstream(&text, &tl);
	expo_prom_format(f, &p, 1, NULL);
	fclose(f);
	const char *t = strstr(text, "# TYPE ");
	cr_assert(t, "%s", text);
	t += 7;
	snprintf(out, len, "%.*s", (int)strcspn(t, " "), t);
	free(text);
}

/* The docs row of a table row, as the metric list spells it: the
 * Prometheus name in base units, its type, and the name it had before
 * (the leaf with "_per_s" and "_ms" spelled out, which export_prom still
 * gives a point that has no table name). */
static void row_of(const struct metric *m, const char *scope, char *row, size_t len)
{
	char old[256];
	const char *leaf = expo_points_metric(m);
	prom_name(leaf, old, sizeof(old));
	snprintf(row, len, "| `%s` | %s | `loopstat_%s` | %s | `%s` | %s | %s |\n", leaf, metric_unit_name(m->unit),
	         metric_prom_name(m), metric_prom_counter(m) ? "counter" : "gauge", old, scope, m->desc);
}

Test(export_docs, metric_list_is_the_metric_table, .timeout = 10)
{
	const char *doc = read_doc();
	const char *begin = strstr(doc, BEGIN_MARK), *end = strstr(doc, END_MARK);
	cr_assert(begin && end && begin < end, "docs/export.md lacks the marked metric list");
	char want[32 * 1024] = "";
	size_t wl = 0;
	int missing = 0, nrows = 0;
	const struct { const struct metric *t; int n; const char *scope; } tables[] = {
		{ metric_worker, METRIC_NWORKER, "worker" }, { metric_fleet, METRIC_NFLEET, "fleet" },
	};
	for (size_t k = 0; k < 2; k++)
		for (int i = 0; i < tables[k].n; i++) {
			char row[1024];
			row_of(&tables[k].t[i], tables[k].scope, row, sizeof(row));
			wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%s", row);
			const char *at = strstr(begin, row);
			missing += !at || at > end;
			nrows++;
		}
	/* the section's table rows: the header, its rule, one per metric */
	int rows = 0;
	for (const char *p = begin; p && p < end; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		rows += p[0] == '|';
	cr_assert(!missing && rows == nrows + 2,
	          "docs/export.md's metric list is not the metric table (%d rows missing, %d table lines for %d "
	          "metrics); its rows should be, after the header:\n%s", missing, rows, nrows, want);
}

Test(export_docs, graphite_leaves_are_unique, .timeout = 10)
{
	for (int i = 0; i < METRIC_NFLEET; i++)
		for (int j = 0; j < METRIC_NWORKER; j++)
			cr_assert_str_neq(expo_points_metric(&metric_fleet[i]), expo_points_metric(&metric_worker[j]));
	cr_assert_str_eq(expo_points_metric(&metric_fleet[METRIC_F_workers]), "fleet.workers");
	cr_assert_str_eq(expo_points_metric(&metric_worker[METRIC_W_idle_pct]), "idle_pct");
}

/* cron runs with PATH=/usr/bin:/bin: every crontab line names loopstat by the
 * path `make install` puts it at (the Makefile's default PREFIX). */
Test(export_docs, crontab_lines_name_the_installed_binary, .timeout = 10)
{
	const char *doc = read_doc();
	FILE *f = fopen("Makefile", "r");
	cr_assert(f);
	char line[512], prefix[256] = "";
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "PREFIX ?= %255s", prefix) == 1)
			break;
	fclose(f);
	cr_assert(prefix[0], "no PREFIX ?= in the Makefile");
	char want[300];
	snprintf(want, sizeof(want), " %s/bin/loopstat export ", prefix);
	int lines = 0;
	for (const char *p = strstr(doc, "\n* * * * *"); p; p = strstr(p + 1, "\n* * * * *")) {
		const char *eol = strchr(p + 1, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		cr_assert(memmem(p, len, want, strlen(want)), "a crontab line without%s: %.*s", want, (int)len, p + 1);
		lines++;
	}
	cr_assert_gt(lines, 0, "docs/export.md shows no crontab line");
}
