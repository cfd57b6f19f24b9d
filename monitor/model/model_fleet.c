/*
 * model_fleet.c — fleet totals: what the header line, list's closing line
 * and the fleet's JSON object show.
 */
#include "model/model_build.h"

#include <math.h>
#include <string.h>

/* per-second mean idle over the workers that have that second */
static void fleet_history(struct model *m)
{
	struct fleet_view *f = &m->fleet;
	for (int k = 0; k < f->nhistory; k++) {
		double sum = 0;
		int cnt = 0;
		for (size_t i = 0; i < m->n; i++) {
			const struct worker_view *w = &m->workers[i];
			int idx = w->nhistory - f->nhistory + k;
			if (idx >= 0 && !isnan(w->idle_history[idx])) {
				sum += w->idle_history[idx];
				cnt++;
			}
		}
		f->idle_history[k] = cnt ? (float)(sum / cnt) : NAN;
	}
}

void model_fleet(struct model *m)
{
	struct fleet_view *f = &m->fleet;
	double idle_sum = 0;
	unsigned idle_n = 0, ops_n = 0, headroom_n = 0;
	memset(f, 0, sizeof(*f));
	f->workers = (unsigned)m->n;
	for (size_t i = 0; i < m->n; i++) {
		const struct worker_view *w = &m->workers[i];
		if (!isnan(w->idle_pct)) {
			idle_sum += w->idle_pct;
			idle_n++;
		}
		if (!isnan(w->ops_per_s)) {
			f->ops_per_s += w->ops_per_s;
			ops_n++;
		}
		if (!isnan(w->headroom_ops_per_s)) {
			f->headroom_ops_per_s += w->headroom_ops_per_s;
			headroom_n++;
		}
		if (w->nhistory > f->nhistory)
			f->nhistory = w->nhistory;
	}
	/* unknown, not zero, when no worker can tell */
	f->mean_idle_pct = idle_n ? idle_sum / idle_n : NAN;
	if (!ops_n)
		f->ops_per_s = NAN;
	if (!headroom_n)
		f->headroom_ops_per_s = NAN;
	fleet_history(m);
}
