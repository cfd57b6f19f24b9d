/* check --fleet's roll-ups: a cgroup's quota counts once however many of the fleet's workers it holds. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "check/check_series.h"
#include "collect/snapshot.h"
#include "model/track.h"

#define NS 1000000000ull

static const struct check_metric *row(const char *name)
{
	size_t n;
	const struct check_metric *m = check_series_metrics(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0)
			return &m[i];
	return NULL;
}

/* Three workers: two in group 1 (quota 0.2 CPU), one in group 2 (0.5). */
Test(check_fleet, a_shared_cgroup_quota_counts_once, .timeout = 10)
{
	struct snapshot snap = { 0 };
	snap.n = snap.cap = 3;
	snap.w = calloc(3, sizeof(*snap.w));
	cr_assert(snap.w);
	static const uint32_t group[] = { 1, 1, 2 };
	static const double quota[] = { 0.2, 0.2, 0.5 };
	struct probe_verdict poll = { PROBE_POLL, SYS_epoll_wait, 3 };
	for (int k = 0; k < 3; k++) {
		struct snap_worker *w = &snap.w[k];
		w->pid = w->tid = 100 + k;
		snprintf(w->name, sizeof(w->name), "w%d", k);
		series_init(&w->series);
		for (uint64_t sec = 0; sec < 5; sec++) {
			series_add_sample(&w->series, sec * NS, &poll, NULL);
			series_add_cgroup(&w->series, sec * NS + NS / 2, group[k], sec * NS / 10, quota[k], 0);
		}
	}
	snap.now_ns = 5 * NS + 1;
	struct tracks ts;
	tracks_init(&ts);
	cr_assert_eq(tracks_update(&ts, &snap), 0);
	cr_assert_eq(ts.n, 3);
	const struct track *trs[] = { &ts.v[0], &ts.v[1], &ts.v[2] };
	struct check_threshold t = { .metric = row("quota_cpus") };
	cr_assert(t.metric);
	struct estimate e;
	cr_assert_eq(check_series_estimate(trs, 3, 1, 4, &t, &e), 0);
	cr_expect(e.ok && fabs(e.est - 0.7) < 1e-9, "fleet quota %g CPUs, want 0.7 (0.2 once, and 0.5)", e.est);
	/* one worker alone keeps its group's quota */
	cr_assert_eq(check_series_estimate(&trs[1], 1, 1, 4, &t, &e), 0);
	cr_expect(e.ok && fabs(e.est - 0.2) < 1e-9, "%g", e.est);
	tracks_done(&ts);
	snapshot_done(&snap);
}
