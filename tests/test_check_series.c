/* check_series: threshold names from the metric table (the fleet's roll-ups too), per-second inputs kept past the sampler's 64-s ring, and their estimates (equal to the model's: test_model_eval). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "check/check_series.h"
#include "model/metric.h"
#include "model/model_build.h"
#include "collect/sampler.h"
#include "support/children.h"
#include "support/support.h"

#define NS 1000000000ull

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("checkseries");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(check_series, .init = setup, .fini = teardown, .timeout = 30);

static const struct check_metric *row(const char *name)
{
	size_t n;
	const struct check_metric *m = check_series_metrics(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0)
			return &m[i];
	return NULL;
}

/* 1 when part is a whole "_"-separated part of name. */
static int has_part(const char *name, const char *part)
{
	size_t n = strlen(part);
	for (const char *p = name; (p = strstr(p, part)); p++)
		if ((p == name || p[-1] == '_') && (p[n] == '\0' || p[n] == '_'))
			return 1;
	return 0;
}

/* A row's unit, the unit its name says (idle_pct, stall_ms, ops_per_s: a
 * user writes thresholds by name) and the unit check takes its limit in
 * all agree; a rate's unit is what it counts ("ops/s"), from the row. */
Test(check_series, every_rows_unit_is_its_names_and_checks)
{
	for (size_t i = 0; i < METRIC_NWORKER + METRIC_NFLEET; i++) {
		const struct metric *x = i < METRIC_NWORKER ? &metric_worker[i] : &metric_fleet[i - METRIC_NWORKER];
		const char *per = strstr(x->name, "_per_s");
		/* a "pct" name is a percentage (an interval's bounds, idle_lo, are too) */
		if (has_part(x->name, "pct"))
			cr_expect_eq(x->unit, METRIC_PCT, "%s: unit %s", x->name, metric_unit_name(x->unit));
		cr_expect_eq(x->unit == METRIC_MS, has_part(x->name, "ms"), "%s: unit %s", x->name, metric_unit_name(x->unit));
		cr_expect_eq(x->unit == METRIC_PER_S, per != NULL, "%s: unit %s", x->name, metric_unit_name(x->unit));
		cr_expect_eq(x->unit == METRIC_PER_S, x->counts != NULL, "%s: only a rate says what it counts", x->name);
		char want[64] = "";
		if (x->unit == METRIC_PCT)
			snprintf(want, sizeof(want), "%%");
		else if (x->unit == METRIC_MS)
			snprintf(want, sizeof(want), "ms");
		else if (x->unit == METRIC_PER_S && per && x->counts) {
			const char *w = per;
			while (w > x->name && w[-1] != '_')
				w--;
			cr_expect(strlen(x->counts) == (size_t)(per - w) && !strncmp(w, x->counts, (size_t)(per - w)),
				  "%s counts %s", x->name, x->counts);
			snprintf(want, sizeof(want), "%s/s", x->counts);
		}
		const struct check_metric *c = metric_is_fleet(x) && metric_find(x->name) ? NULL : row(x->name);
		if (c)
			cr_expect_str_eq(c->unit, want, "%s: check's unit", x->name);
	}
}

Test(check_series, names_and_units_come_from_the_metric_table)
{
	size_t n, want = 0;
	const struct check_metric *m = check_series_metrics(&n);
	for (size_t i = 0; i < METRIC_NWORKER; i++) {
		const struct metric *x = &metric_worker[i];
		int offered = row(x->name) != NULL;
		int interval = x->kind == METRIC_INTERVAL || x->kind == METRIC_LOWER || x->kind == METRIC_UPPER;
		cr_expect_eq(offered, x->kind != METRIC_TALLY && !interval, "%s", x->name);
		want += offered;
	}
	/* the fleet's roll-ups, but those named as a worker row (--fleet pools those) */
	for (size_t i = 0; i < METRIC_NFLEET; i++) {
		if (metric_find(metric_fleet[i].name))
			continue;
		cr_expect_not_null(row(metric_fleet[i].name), "%s", metric_fleet[i].name);
		want++;
	}
	cr_expect_eq(n, want);
	cr_expect_str_eq(row("idle_pct")->unit, "%");
	cr_expect_str_eq(row("stall_ms")->unit, "ms");
	cr_expect_str_eq(row("headroom_ops_per_s")->unit, "ops/s");
	cr_expect_str_eq(row("switches_per_s")->unit, "switches/s");
	cr_expect_str_eq(row("runqueue_max")->unit, "");
	cr_expect_str_eq(row("blocked_pct")->filters, "syscall,fd");
	cr_expect_null(row("idle_pct")->filters);
	/* every offered metric has an estimate (none is listed and then refused) */
	struct track tr = { .first_sec = 0 };
	const struct track *trs[] = { &tr };
	for (size_t i = 0; i < n; i++) {
		struct check_threshold t = { .metric = &m[i] };
		struct estimate e;
		cr_expect_eq(check_series_estimate(trs, 1, 0, 3, &t, &e), 0, "%s", m[i].name);
		if (strcmp(m[i].name, "workers") == 0)   /* a count of the workers is known without seconds */
			cr_expect(e.ok && e.est == 1, "workers: %g", e.est);
		else
			cr_expect_eq(e.ok, 0, "%s: no seconds, nothing to measure", m[i].name);
	}
	char why[128];
	cr_expect_eq(check_series_filter_ok(NULL, row("blocked_pct"), "syscall", "fsync", why, sizeof(why)), 0);
	cr_expect_neq(check_series_filter_ok(NULL, row("blocked_pct"), "syscall", "fsnyc", why, sizeof(why)), 0);
	cr_expect_eq(check_series_filter_ok(NULL, row("blocked_pct"), "fd", "7", why, sizeof(why)), 0);
	cr_expect_neq(check_series_filter_ok(NULL, row("blocked_pct"), "fd", "-1", why, sizeof(why)), 0);
}

/* 200 s of a synthetic worker, snapshots every 7 s: every second is kept
 * (the ring holds 64), and the estimates are the known truth. */
Test(check_series, seconds_are_kept_past_the_ring)
{
	struct snapshot snap = { 0 };
	snap.w = calloc(1, sizeof(*snap.w));
	snap.n = snap.cap = 1;
	struct snap_worker *w = &snap.w[0];
	w->pid = w->tid = 4242;
	w->instrumented = 1;
	snprintf(w->name, sizeof(w->name), "synthetic");
	series_init(&w->series);
	struct tracks ts;
	tracks_init(&ts);
	uint64_t v[PROBE_SHM_NVALUES] = { 0 };
	struct probe_verdict poll = { PROBE_POLL, SYS_epoll_wait, 3 }, run = { PROBE_RUNNING, -1, -1 };
	struct probe_verdict rd = { PROBE_BLOCKED, SYS_read, 5 };
	for (int64_t sec = 0; sec < 200; sec++) {
		/* 100 samples a second: 50 in poll, 10 in read(5), 40 running */
		for (int i = 0; i < 100; i++) {
			uint64_t t = (uint64_t)sec * NS + (uint64_t)i * (NS / 100);
			series_add_sample(&w->series, t, i < 50 ? &poll : i < 60 ? &rd : &run, NULL);
		}
		/* runnable 0.4 s of each second, 100 ops a second, read at .95 */
		uint64_t t = (uint64_t)sec * NS + NS * 95 / 100;
		v[PROBE_SHM_ops] = 100 * (uint64_t)sec;
		v[PROBE_SHM_runqueue_len] = (uint64_t)(sec % 7);
		series_add_shm(&w->series, t, t, v, "");
		series_add_sched(&w->series, t, (uint64_t)(sec * 3) * (NS / 10), (uint64_t)sec * (NS / 10));
		if (sec % 7 == 6 || sec == 199) {
			snap.now_ns = (uint64_t)(sec + 1) * NS + 1;
			cr_assert_eq(tracks_update(&ts, &snap), 0);
		}
	}
	cr_assert_eq(ts.n, 1);
	cr_expect_eq(ts.v[0].n, 200, "every second kept: %zu", ts.v[0].n);
	const struct track *trs[] = { &ts.v[0] };
	struct { const char *th; double want; } cases[] = {
		{ "idle_pct", 50 }, { "blocked_pct", 10 }, { "running_pct", 40 }, { "cpu_pct", 30 },
		{ "cpu_wait_pct", 10 }, { "ops_per_s", 100 }, { "runqueue_max", 6 }, { "runqueue_len", 189 % 7 },
		{ "headroom_ops_per_s", 200 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct check_threshold t = { .metric = row(cases[i].th) };
		struct estimate e;
		cr_assert_eq(check_series_estimate(trs, 1, 10, 189, &t, &e), 0);
		cr_expect(e.ok && fabs(e.est - cases[i].want) < 1e-6 * fmax(1, cases[i].want), "%s: %g, want %g",
			  cases[i].th, e.est, cases[i].want);
	}
	/* a level is as last read in the range */
	struct check_threshold t = { .metric = row("runqueue_len") };
	struct estimate e;
	check_series_estimate(trs, 1, 10, 188, &t, &e);
	cr_expect(e.ok && e.est == 188 % 7 && e.lo == e.est && e.hi == e.est, "runqueue_len: %g", e.est);
	t = (struct check_threshold){ .metric = row("idle_pct") };
	check_series_estimate(trs, 1, 10, 189, &t, &e);
	cr_expect_eq(e.n, 180 * 60, "180 s of off-CPU samples: %g", e.n);
	cr_expect(e.lo <= 50 && e.hi >= 50 && e.hi - e.lo < 2, "[%g, %g]", e.lo, e.hi);
	/* a filter counts only its key */
	t = (struct check_threshold){ .metric = row("blocked_pct"), .nfilter = 1 };
	snprintf(t.filter[0].key, sizeof(t.filter[0].key), "syscall");
	snprintf(t.filter[0].value, sizeof(t.filter[0].value), "read");
	check_series_estimate(trs, 1, 10, 189, &t, &e);
	cr_expect(fabs(e.est - 10) < 1e-9, "read: %g", e.est);
	snprintf(t.filter[0].value, sizeof(t.filter[0].value), "fsync");
	check_series_estimate(trs, 1, 10, 189, &t, &e);
	cr_expect(e.ok && e.est == 0, "fsync: %g", e.est);
	/* a worker that leaves the snapshot has exited */
	snap.n = 0;
	snap.now_ns += NS;
	cr_assert_eq(tracks_update(&ts, &snap), 0);
	cr_expect(ts.v[0].gone);
	tracks_done(&ts);
	snapshot_done(&snap);
}
