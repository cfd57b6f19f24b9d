/* The limit verdict: each rule at its threshold, their order, unknown figures, and docs/usage.md's rule table held to LIMIT_RULES. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/limit.h"
#include "support/support.h"

static int verdict4(double idle, double wait, double throttled, double acceptq, char *why)
{
	double fig[METRIC_NLIMITS] = { [METRIC_LIMIT_LOOP] = idle, [METRIC_LIMIT_CPU] = wait,
				       [METRIC_LIMIT_QUOTA] = throttled, [METRIC_LIMIT_BACKLOG] = acceptq };
	return model_limit_verdict(fig, why, 128);
}

static int verdict(double idle, double wait, double throttled, char *why)
{
	return verdict4(idle, wait, throttled, NAN, why);
}

Test(limit_rules, each_rule_at_its_threshold)
{
	char why[128];
	cr_expect_eq(verdict(50, 0, 0, why), METRIC_LIMIT_NONE);
	cr_expect_str_empty(why);
	cr_expect_eq(verdict(19.9, 0, 0, why), METRIC_LIMIT_LOOP);
	cr_expect(strstr(why, "idle only 20%"), "%s", why);
	cr_expect_eq(verdict(20, 0, 0, why), METRIC_LIMIT_NONE);
	cr_expect_eq(verdict(50, 20, 0, why), METRIC_LIMIT_CPU);
	cr_expect_eq(verdict(50, 19.9, 0, why), METRIC_LIMIT_NONE);
	cr_expect_eq(verdict(50, 0, 10, why), METRIC_LIMIT_QUOTA);
	cr_expect(strstr(why, "quota held it back 10%"), "%s", why);
	cr_expect_eq(verdict(50, 0, 9.9, why), METRIC_LIMIT_NONE);
}

Test(limit_rules, quota_before_cpu_before_loop)
{
	/* a throttled loop also waits for a CPU and reads busy: the quota is the cause */
	cr_expect_eq(verdict(5, 60, 55, NULL), METRIC_LIMIT_QUOTA);
	cr_expect_eq(verdict(5, 60, 0, NULL), METRIC_LIMIT_CPU);
	cr_expect_eq(verdict(5, 1, 0, NULL), METRIC_LIMIT_LOOP);
}

Test(limit_rules, connections_waiting_on_an_idle_loop_are_the_backlog)
{
	char why[128];
	cr_expect_eq(verdict4(80, 0, 0, 20, why), METRIC_LIMIT_BACKLOG);
	cr_expect(strstr(why, "20 connections waited"), "%s", why);
	cr_expect_eq(verdict4(80, 0, 0, 19, why), METRIC_LIMIT_NONE);
	cr_expect_eq(verdict4(5, 0, 0, 40, why), METRIC_LIMIT_LOOP, "a busy loop is why they wait");
	cr_expect_str_eq(model_limit_name(METRIC_LIMIT_BACKLOG), "backlog");
}

Test(limit_rules, unknown_figures_trip_nothing)
{
	cr_expect_eq(verdict(NAN, 90, 90, NULL), -1, "no idle figure: no verdict");
	cr_expect_eq(verdict(50, NAN, NAN, NULL), METRIC_LIMIT_NONE);
	cr_expect_eq(verdict(5, NAN, NAN, NULL), METRIC_LIMIT_LOOP);
	cr_expect_str_eq(model_limit_name(METRIC_LIMIT_QUOTA), "quota");
}

Test(limit_rules, docs_list_every_rule_in_order)
{
	char *doc = ts_read_file("docs/usage.md");
	const char *at = strstr(doc, "### What limits a worker");
	cr_assert(at, "docs/usage.md has no 'What limits a worker'");
	char row[128];
#define DOC_X(kind, metric, op, threshold, reason)                                              \
	do {                                                                                   \
		char lower[16];                                                                \
		snprintf(lower, sizeof(lower), "%s", model_limit_name(METRIC_LIMIT_##kind));   \
		snprintf(row, sizeof(row), "| `%s` | `%s %s %s` |", lower, #metric, #op, #threshold); \
		const char *p = strstr(at, row);                                               \
		cr_expect(p, "docs/usage.md lacks the rule row %s", row);                      \
		if (p)                                                                         \
			at = p;   /* in the table's order */                                   \
	} while (0);
	LIMIT_RULES(DOC_X)
#undef DOC_X
	free(doc);
}

static int verdict_pool(double idle, double wait, double pool_busy, double acceptq, char *why)
{
	double fig[METRIC_NLIMITS] = { [METRIC_LIMIT_LOOP] = idle, [METRIC_LIMIT_CPU] = wait, [METRIC_LIMIT_QUOTA] = 0,
				       [METRIC_LIMIT_BACKLOG] = acceptq, [METRIC_LIMIT_POOL] = pool_busy };
	return model_limit_verdict(fig, why, 128);
}

Test(limit_rules, a_saturated_pool_limits_a_waiting_loop_after_the_loop_before_the_backlog)
{
	char why[128];
	cr_expect_eq(verdict_pool(90, 0, 80, NAN, why), METRIC_LIMIT_POOL);
	cr_expect(strstr(why, "helper pool was busy 80%"), "%s", why);
	cr_expect_eq(verdict_pool(90, 0, 79.9, NAN, why), METRIC_LIMIT_NONE);
	cr_expect_eq(verdict_pool(90, 0, NAN, NAN, why), METRIC_LIMIT_NONE, "no pool trips nothing");
	cr_expect_eq(verdict_pool(5, 0, 100, NAN, why), METRIC_LIMIT_LOOP, "a busy loop limits whatever its pool does");
	cr_expect_eq(verdict_pool(90, 30, 100, NAN, why), METRIC_LIMIT_CPU);
	cr_expect_eq(verdict_pool(90, 0, 100, 40, why), METRIC_LIMIT_POOL, "a saturated pool is why connections wait");
	cr_expect_str_eq(model_limit_name(METRIC_LIMIT_POOL), "pool");
}
