/* The metric table: every metric reaches list's JSON, the dashboard (a column or a detail line) and docs/usage.md, with the same name and unit. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "list/list.h"
#include "model/metric.h"
#include "top/tui_int.h"
#include "support/support.h"

Test(metric_docs, every_metric_has_its_docs_row_with_unit_and_description, .timeout = 10)
{
	char *doc = ts_read_file("docs/usage.md");
	const struct { const struct metric *t; int n; const char *scope; } tables[] = {
		{ metric_worker, METRIC_NWORKER, "worker" }, { metric_fleet, METRIC_NFLEET, "fleet" },
	};
	for (size_t k = 0; k < 2; k++)
		for (int i = 0; i < tables[k].n; i++) {
			const struct metric *m = &tables[k].t[i];
			char row[512];
			snprintf(row, sizeof(row), "| `%s` | %s | %s | %s |\n", m->name, tables[k].scope,
				 metric_unit_name(m->unit), m->desc);
			cr_assert(strstr(doc, row), "docs/usage.md lacks the row: %s", row);
		}
	free(doc);
}

Test(metric_docs, every_metric_is_a_json_key, .timeout = 10)
{
	struct worker_view w = { .pid = 1, .tid = 1, .instrumented = 1, .backend = "libev" };
	struct model model = { .workers = &w, .n = 1 };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	list_print_json(f, &model);
	fclose(f);
	json_object *doc = json_tokener_parse(out), *workers, *obj, *counters, *fleet, *v;
	cr_assert(doc, "%s", out);
	cr_assert(json_object_object_get_ex(doc, "workers", &workers));
	obj = json_object_array_get_idx(workers, 0);
	cr_assert(json_object_object_get_ex(obj, "counters", &counters));
	cr_assert(json_object_object_get_ex(doc, "fleet", &fleet));
	for (int i = 0; i < METRIC_NWORKER; i++) {
		const struct metric *m = &metric_worker[i];
		json_object *where = m->source == METRIC_COUNTERS ? counters : obj;
		cr_assert(json_object_object_get_ex(where, m->name, &v), "%s not in the JSON: %s", m->name, out);
	}
	for (int i = 0; i < METRIC_NFLEET; i++)
		cr_assert(json_object_object_get_ex(fleet, metric_fleet[i].name, &v), "fleet %s not in the JSON",
			  metric_fleet[i].name);
	json_object_put(doc);
	free(out);
}

/* Shown by the dashboard: a column's figure, a detail line's, or the interval drawn beside another. */
static int on_dashboard(const struct metric *m)
{
	for (int c = 0; c < TUI_NCOLS; c++)
		if (tui_columns[c].metric >= 0 && &metric_worker[tui_columns[c].metric] == m)
			return 1;
	if (tui_metrics[m - metric_worker].line != TUI_LINE_NONE && tui_metrics[m - metric_worker].detail)
		return 1;
	for (int i = 0; i < METRIC_NWORKER; i++)
		if (metric_worker[i].interval == m)
			return 1;
	/* an interval's bounds: drawn as the ± beside the share of their class */
	for (int i = 0; (m->kind == METRIC_LOWER || m->kind == METRIC_UPPER) && i < METRIC_NWORKER; i++)
		if (metric_worker[i].kind == METRIC_SHARE && metric_worker[i].arg == m->arg && metric_worker[i].interval)
			return 1;
	return 0;
}

Test(metric_docs, every_metric_is_on_the_dashboard, .timeout = 10)
{
	for (int i = 0; i < METRIC_NWORKER; i++)
		cr_assert(on_dashboard(&metric_worker[i]), "%s is neither a column nor a detail line",
			  metric_worker[i].name);
}

/* Each row sits at its own id (a designated initializer keyed by another
 * id would show its figure under the wrong name), and none is missing. */
Test(metric_docs, rows_sit_at_their_ids, .timeout = 10)
{
	static const char *const worker[] = {
#define NAME_X(name, type) #name,
		METRIC_WORKER_IDS(NAME_X)
	}, *const fleet[] = {
		METRIC_FLEET_IDS(NAME_X)
#undef NAME_X
	};
	for (int i = 0; i < METRIC_NWORKER; i++) {
		cr_assert(metric_worker[i].name && metric_worker[i].desc, "no row for %s", worker[i]);
		cr_expect_str_eq(metric_worker[i].name, worker[i]);
		cr_expect_neq(metric_worker[i].source, METRIC_FLEET, "%s", worker[i]);
	}
	for (int i = 0; i < METRIC_NFLEET; i++) {
		cr_assert(metric_fleet[i].name && metric_fleet[i].desc, "no row for fleet %s", fleet[i]);
		cr_expect_str_eq(metric_fleet[i].name, fleet[i]);
		cr_expect_eq(metric_fleet[i].source, METRIC_FLEET, "%s", fleet[i]);
		cr_expect_not_null(tui_fleet_detail[i], "fleet %s has no part of the fleet line", fleet[i]);
	}
}

/* list's text table and the dashboard title a figure alike. */
Test(metric_docs, list_and_dashboard_titles_agree, .timeout = 10)
{
	int both = 0;
	for (int i = 0; i < METRIC_NWORKER; i++) {
		const char *l = list_column_title(i), *t = tui_metrics[i].title;
		if (l && t) {
			cr_expect_str_eq(l, t, "%s", metric_worker[i].name);
			both++;
		}
	}
	for (int c = 0; c < TUI_NCOLS; c++)
		if (tui_columns[c].metric >= 0)
			cr_expect_not_null(list_column_title(tui_columns[c].metric), "list lacks the column %s", tui_columns[c].title);
	cr_expect_gt(both, 5);
}

/* Every column of list's tables (workers, and --by service) is documented
 * in usage.md, in a row of its own: the titles a user reads, not raw
 * metric names. */
Test(metric_docs, every_list_column_is_documented, .timeout = 10)
{
	char *doc = ts_read_file("docs/usage.md");
	cr_assert(doc);
	struct model empty = { 0 };
	for (int k = 0; k < 2; k++) {
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);
		(k ? list_print_services : list_print_text)(f, &empty);
		fclose(f);
		out[strcspn(out, "\n")] = '\0';
		int n = 0;
		for (char *t = strtok(out, " "); t; t = strtok(NULL, " "), n++) {
			char row[96];
			snprintf(row, sizeof(row), "| `%s` |", t);
			cr_expect(strstr(doc, row), "usage.md has no row for list's column %s", t);
			cr_expect_null(metric_find_any(t), "list's header names the metric %s, not a title", t);
		}
		cr_expect_gt(n, 4);
		free(out);
	}
	free(doc);
}

Test(metric_docs, names_are_unique_and_intervals_are_their_shares, .timeout = 10)
{
	for (int i = 0; i < METRIC_NWORKER; i++) {
		cr_assert_eq(metric_find(metric_worker[i].name), &metric_worker[i], "%s twice", metric_worker[i].name);
		const struct metric *ci = metric_worker[i].interval;
		if (ci)
			cr_assert(ci->kind == METRIC_INTERVAL && ci->arg == metric_worker[i].arg && ci->source == metric_worker[i].source,
				  "%s's interval %s is not its share's", metric_worker[i].name, ci->name);
	}
	cr_assert_null(metric_find("no_such_metric"));
}

Test(metric_docs, values_read_through_the_table, .timeout = 10)
{
	struct worker_view w = { .idle_pct = 12.5, .runqueue_len = 7, .ops_per_s = 3, .instrumented = 0 };
	cr_assert_float_eq(metric_value(metric_find("idle_pct"), &w), 12.5, 1e-12);
	cr_assert(isnan(metric_value(metric_find("runqueue_len"), &w)), "a counter of an uninstrumented worker is unknown");
	w.instrumented = 1;
	cr_assert_float_eq(metric_value(metric_find("runqueue_len"), &w), 7, 1e-12);
	cr_assert_float_eq(metric_value(metric_find("ops_per_s"), &w), 3, 1e-12);
	struct fleet_view f = { .workers = 4, .mean_idle_pct = 50 };
	cr_assert_float_eq(metric_value(&metric_fleet[METRIC_F_workers], &f), 4, 1e-12);
	cr_assert_float_eq(metric_value(&metric_fleet[METRIC_F_mean_idle_pct], &f), 50, 1e-12);
}
