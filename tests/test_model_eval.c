/* The one evaluator: over the same seconds, check's estimate is list's value for every row of the metric table (a live worker, and a recording replayed), and export's per-second points are the evaluator over each second. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/check_series.h"
#include "collect/replay.h"
#include "collect/sampler.h"
#include "collect/source.h"
#include "expo/expo_points.h"
#include "model/metric.h"
#include "model/model_build.h"
#include "model/track.h"
#include "support/children.h"
#include "support/support.h"

#define NS 1000000000ull

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("modeleval");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(model_eval, .init = setup, .fini = teardown, .timeout = 60);

/* The same figure: both unknown (or unbounded, which views show as
 * unknown), or equal to the last few bits. */
static int same(const struct estimate *e, double v)
{
	int ek = e->ok && isfinite(e->est);
	if (!ek || isnan(v))
		return !ek && isnan(v);
	return fabs(e->est - v) <= 1e-9 * fmax(1, fabs(v));
}

/*
 * Walks every threshold check offers (the metric table's rows that have a
 * per-second form, and the fleet's roll-ups) and holds check's estimate
 * over seconds [lo, hi] of the tracks to the model's figure; returns how
 * many rows had a known value on both sides.
 */
static int expect_check_is_model(const struct model *m, const struct tracks *ts, int64_t lo, int64_t hi,
				 const char *what)
{
	size_t n, known = 0;
	const struct check_metric *rows = check_series_metrics(&n);
	const struct track **trs = calloc(ts->n, sizeof(*trs));
	cr_assert(trs);
	for (size_t i = 0; i < ts->n; i++)
		trs[i] = &ts->v[i];
	cr_assert_eq(m->n, ts->n, "%s: one track per worker", what);
	for (size_t r = 0; r < n; r++) {
		const struct metric *mt = metric_find_any(rows[r].name);
		struct check_threshold t = { .metric = &rows[r] };
		struct estimate e;
		cr_assert_not_null(mt, "%s", rows[r].name);
		if (metric_is_fleet(mt)) {
			cr_assert_eq(check_series_estimate(trs, ts->n, lo, hi, &t, &e), 0, "%s", rows[r].name);
			double want = metric_value(mt, &m->fleet);
			cr_expect(same(&e, want), "%s: fleet %s: check %.12g (ok %d), list %.12g", what, rows[r].name, e.est,
				  e.ok, want);
			known += e.ok && !isnan(want);
			continue;
		}
		for (size_t w = 0; w < ts->n; w++) {
			cr_assert_eq(check_series_estimate(&trs[w], 1, lo, hi, &t, &e), 0, "%s", rows[r].name);
			double want = metric_value(mt, &m->workers[w]);
			cr_expect(same(&e, want), "%s: %s: check %.12g (ok %d), list %.12g", what, rows[r].name, e.est,
				  e.ok, want);
			known += e.ok && !isnan(want);
		}
	}
	free(trs);
	return (int)known;
}

/* Every complete second of snap: export's points are the evaluator's estimate over that second. */
static void expect_export_is_eval(const struct snapshot *snap, const struct tracks *ts, int64_t lo, int64_t hi)
{
	const struct track **trs = calloc(ts->n, sizeof(*trs));
	for (size_t i = 0; i < ts->n; i++)
		trs[i] = &ts->v[i];
	int compared = 0;
	for (int64_t sec = lo; sec <= hi; sec++) {
		struct expo_points b;
		int sampled;
		expo_points_init(&b);
		cr_assert_eq(expo_points_add_second(&b, snap, sec, 1000 + sec, "t", "h", &sampled), 0);
		for (size_t k = 0; k < b.n; k++) {
			const struct expo_point *p = &b.pts[k];
			const char *leaf = strncmp(p->metric, "fleet.", 6) == 0 ? p->metric + 6 : p->metric;
			/* a service's rows (service.<name>.<row>) over its tracks: here one
			 * service holds them all, so they are the fleet's */
			if (strncmp(p->metric, "service.", 8) == 0) {
				const char *dot = strrchr(p->metric, '.');
				leaf = dot + 1;
				for (size_t t = 0; t < ts->n; t++)   /* a recording names no service: its name stands */
					cr_assert_str_eq(*ts->v[t].service ? ts->v[t].service : ts->v[t].name, p->service,
							 "one service: %s", p->metric);
			}
			const struct metric *m = p->pid < 0 ? NULL : metric_find(leaf);
			for (size_t f = 0; !m && f < METRIC_NFLEET; f++)
				if (strcmp(metric_fleet[f].name, leaf) == 0)
					m = &metric_fleet[f];
			cr_assert_not_null(m, "%s", p->metric);
			size_t w = 0;
			while (p->pid >= 0 && w < ts->n && !(ts->v[w].pid == p->pid && ts->v[w].tid == p->tid))
				w++;
			cr_assert(p->pid < 0 || w < ts->n);
			struct estimate e;
			if (p->pid < 0 && m->reduce == METRIC_R_COUNT)
				continue;   /* workers listed: the snapshot's, not a figure of the second */
			cr_assert_eq(track_eval(m, NULL, p->pid < 0 ? trs : &trs[w], p->pid < 0 ? ts->n : 1, sec, sec,
						EVAL_INTERVAL, &e), 0);
			double v = p->value;
			if (m->kind == METRIC_HEADROOM && !isfinite(e.est))
				e.ok = 0;   /* unbounded: the model keeps it unknown, export skips it */
			cr_expect(same(&e, v), "second %lld: %s: export %.12g, evaluator %.12g", (long long)sec, p->metric, v,
				  e.est);
			compared++;
		}
		expo_points_done(&b);
	}
	cr_expect_gt(compared, 10, "points compared: %d", compared);
	free(trs);
}

/* A live instrumented worker: the window (list's --duration, top's) and the whole run. */
Test(model_eval, live_worker_check_equals_list_for_every_row)
{
	const char *args[] = { "--idle", "0.5", "--seconds", "20", NULL };
	pid_t child = tc_spawn_example("duty_cycle", args, NULL);
	struct targets tg;
	targets_init(&tg);
	tg.pids[tg.npids++] = child;
	struct sampler_opts o = { .rate_hz = 200, .targets = &tg };
	struct sampler *s;
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	usleep(4500000);
	struct snapshot snap = { 0 };
	cr_assert_eq(sampler_snapshot(s, 6, 0, &snap), 0);
	sampler_delete(s);
	cr_assert_eq(snap.n, 1, "the worker was found");
	cr_assert(snap.w[0].instrumented);
	/* "now" in the next second: the model's window then ends with the
	 * seconds the check has complete, and both read the same buckets */
	snap.now_ns = (snap.now_ns / NS + 1) * NS + 1;
	int64_t now_sec = (int64_t)(snap.now_ns / NS);
	struct tracks ts;
	tracks_init(&ts);
	cr_assert_eq(tracks_update(&ts, &snap), 0);
	struct model m;
	cr_assert_eq(model_build(&snap, 3, &m), 0);
	int known = expect_check_is_model(&m, &ts, now_sec - 2, now_sec, "3-s window");
	cr_expect_geq(known, 12, "rows known on both sides: %d (counters, schedstat and samples)", known);
	model_done(&m);
	expect_export_is_eval(&snap, &ts, now_sec - 3, now_sec - 1);
	tracks_done(&ts);
	snapshot_done(&snap);
	targets_done(&tg);
	tc_kill(child);
}

/* A recording of a real worker, replayed: list's whole-run figures and a
 * window's are check's over the same seconds, and so are export's seconds. */
Test(model_eval, replayed_recording_check_equals_list_for_every_row)
{
	const char *args[] = { "--idle", "0.5", "--seconds", "20", NULL };
	pid_t child = tc_spawn_example("duty_cycle", args, NULL);
	char pid[16], rec[256];
	snprintf(pid, sizeof(pid), "%d", (int)child);
	snprintf(rec, sizeof(rec), "%s/run.rec", dir);
	const char *bin = getenv("LOOPSTAT_BIN") ? getenv("LOOPSTAT_BIN") : "build/loopstat";
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "timeout 20 %s record -o %s -p %s --duration 3.5 2>/dev/null", bin, rec, pid);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	tc_kill(child);

	FILE *f = fopen(rec, "r");
	cr_assert(f);
	struct replay *r;
	long line;
	cr_assert_eq(replay_open(f, &r, &line), 0);
	fclose(f);
	struct source src;
	replay_source(r, &src);
	/* the replay as check takes it: a snapshot every 100 ms to its end */
	uint64_t end = replay_end_ns(r);
	struct tracks ts;
	tracks_init(&ts);
	struct snapshot snap = { 0 };
	for (uint64_t t = 100000000ull;; t += 100000000ull) {
		replay_advance_to(r, t < end ? t : end);
		cr_assert_eq(src.ops->snapshot(src.impl, 4, 0, &snap), 0);
		if (t >= end)   /* the replay is over: its last second is complete */
			snap.now_ns = (end / NS + 1) * NS;
		cr_assert_eq(tracks_update(&ts, &snap), 0);
		if (t >= end)
			break;
	}
	int64_t now_sec = (int64_t)(end / NS);
	cr_assert_geq(ts.n, 1);
	cr_assert_eq(src.ops->snapshot(src.impl, 0, 0, &snap), 0);

	struct model m;
	cr_assert_eq(model_build(&snap, 0, &m), 0);   /* list: the whole run */
	int known = expect_check_is_model(&m, &ts, 0, now_sec, "whole run");
	cr_expect_geq(known, 6, "rows known on both sides: %d (samples and schedstat)", known);
	model_done(&m);

	struct snapshot win = { 0 };
	cr_assert_eq(src.ops->snapshot(src.impl, 3, 0, &win), 0);
	cr_assert_eq(model_build(&win, 3, &m), 0);    /* top's 3-s window */
	expect_check_is_model(&m, &ts, now_sec - 2, now_sec, "3-s window");
	model_done(&m);
	expect_export_is_eval(&win, &ts, now_sec - 3, now_sec - 1);
	snapshot_done(&win);
	snapshot_done(&snap);
	tracks_done(&ts);
	replay_delete(r);
}
