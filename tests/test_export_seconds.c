/* export --resolution 1s from a late snapshot: each missed second filled from the series' own buckets and readings (not the latest ones), a second nothing sampled reported as such, never a point invented for it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "expo/expo_points.h"
#include "collect/snapshot.h"

#define NS 1000000000ull

/* ops counted by the worker at t: in second s it does 100 * (s + 1) ops a second */
static uint64_t ops_at(double t)
{
	double ops = 0;
	for (int s = 0; s < (int)t; s++)
		ops += 100.0 * (s + 1);
	return (uint64_t)(ops + 100.0 * ((int)t + 1) * (t - (int)t));
}

static const struct expo_point *find(const struct expo_points *b, const char *metric, int64_t ts)
{
	for (size_t i = 0; i < b->n; i++)
		if (!strcmp(b->pts[i].metric, metric) && b->pts[i].ts == ts)
			return &b->pts[i];
	return NULL;
}

Test(export_seconds, late_snapshot_fills_from_the_ring_and_a_gone_second_adds_nothing, .timeout = 10)
{
	struct snapshot snap = { 0 };
	snap.cap = snap.n = 1;
	snap.w = calloc(1, sizeof(*snap.w));
	snap.rate_hz = 100;
	struct snap_worker *w = &snap.w[0];
	w->pid = w->tid = 42;
	w->instrumented = 1;
	snprintf(w->name, sizeof(w->name), "app");
	series_init(&w->series);
	struct probe_verdict poll = { PROBE_POLL, SYS_epoll_wait, 3 }, rd = { PROBE_BLOCKED, SYS_read, 5 };
	uint64_t v[PROBE_SHM_NVALUES] = { 0 };
	/* seconds 0..5 sampled at 100 Hz, idle 10 * s %, counters read at .45 and .95;
	 * second 2 not at all (the monitor was stopped) */
	for (int s = 0; s < 6; s++) {
		if (s == 2)
			continue;
		for (int i = 0; i < 100; i++)
			series_add_sample(&w->series, (uint64_t)s * NS + (uint64_t)i * (NS / 100), i < 10 * s ? &poll : &rd,
			                  NULL);
		for (int r = 0; r < 2; r++) {
			double t = s + (r ? 0.95 : 0.45);
			uint64_t tn = (uint64_t)(t * 1e9);
			v[PROBE_SHM_ops] = ops_at(t);
			v[PROBE_SHM_runqueue_len] = (uint64_t)(10 * s + r);
			series_add_shm(&w->series, tn, tn, v, "");
		}
	}
	/* the snapshot of second 0 was taken in time; this one comes at 6.1 s */
	snap.now_ns = 6 * NS + NS / 10;
	struct expo_points b;
	expo_points_init(&b);
	int sampled[6] = { 0 };
	for (int64_t sec = 1; sec <= 5; sec++)
		cr_assert_eq(expo_points_add_second(&b, &snap, sec, 1000 + sec, "t", "h", &sampled[sec]), 0);
	cr_assert_eq(snap.now_ns, 6 * NS + NS / 10, "the snapshot's clock is left as it was");
	for (int sec = 1; sec <= 5; sec++) {
		const struct expo_point *p = find(&b, "ops_per_s", 1000 + sec);
		if (sec == 2) {
			cr_assert_eq(sampled[2], 0, "nothing sampled in second 2");
			cr_assert_null(find(&b, "samples", 1002), "no point is made up for it");
			cr_assert_null(p);
			continue;
		}
		cr_assert_eq(sampled[sec], 1);
		cr_assert_not_null(p, "second %d", sec);
		/* that second's readings: the last one in it against the last one before it,
		 * never the snapshot's latest; right after the gap there is none before it
		 * (a bucket keeps only its last reading): unknown, so not sent */
		double lo = sec - 0.05, hi = sec + 0.95;
		double want = sec == 3 ? NAN : (double)(ops_at(hi) - ops_at(lo)) / (hi - lo);
		if (sec == 3)
			cr_assert(isnan(p->value), "ops/s of second 3: %f", p->value);
		else
			cr_assert_float_eq(p->value, want, 1e-6, "ops/s of second %d: %f, want %f", sec, p->value, want);
		cr_assert_float_eq(find(&b, "samples", 1000 + sec)->value, 100, 1e-9);
		cr_assert_float_eq(find(&b, "idle_pct", 1000 + sec)->value, 10.0 * sec, 1e-9, "second %d", sec);
		cr_assert_float_eq(find(&b, "runqueue_len", 1000 + sec)->value, 10 * sec + 1, 1e-9, "as last read in it");
	}
	cr_assert_not_null(find(&b, "fleet.workers", 1005));
	expo_points_done(&b);

	/* a second the ring no longer holds (second 1's bucket now holds a later one) is gone too */
	series_add_sample(&w->series, (uint64_t)(1 + SERIES_DETAIL_S) * NS, &poll, NULL);
	snap.now_ns = (uint64_t)(2 + SERIES_DETAIL_S) * NS;
	expo_points_init(&b);
	int s1;
	cr_assert_eq(expo_points_add_second(&b, &snap, 1, 1, "t", "h", &s1), 0);
	cr_assert_eq(s1, 0);
	cr_assert_eq(b.n, 0);
	expo_points_done(&b);
	snapshot_done(&snap);
}
