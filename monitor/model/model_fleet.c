/*
 * model_fleet.c — fleet totals: what the header line, list's closing line
 * and the fleet's JSON object show.
 */
#include "model/model_build.h"
#include "model/eval.h"
#include "model/metric.h"

#include <math.h>
#include <stdlib.h>
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
	struct estimate *ests = calloc(m->n ? m->n : 1, sizeof(*ests));
	memset(f, 0, sizeof(*f));
	for (int r = 0; r < METRIC_NFLEET; r++) {
		const struct metric *fm = &metric_fleet[r], *of = &metric_worker[fm->of];
		struct estimate e = { .ok = 0, .est = NAN };
		if (ests || !m->n) {
			for (size_t i = 0; i < m->n; i++) {
				double v = metric_field(of, &m->workers[i]);
				ests[i] = (struct estimate){ .ok = !isnan(v), .est = v, .lo = v, .hi = v, .df = INFINITY };
			}
			model_eval_fleet(fm, ests, m->n, &e);
		}
		char *field = (char *)f + fm->offset;
		if (fm->type == METRIC_UNSIGNED)
			*(unsigned *)field = e.ok ? (unsigned)e.est : 0;
		else
			*(double *)field = e.ok ? e.est : NAN;   /* unknown, not zero, when no worker can tell */
	}
	free(ests);
	for (size_t i = 0; i < m->n; i++)
		if (m->workers[i].nhistory > f->nhistory)
			f->nhistory = m->workers[i].nhistory;
	fleet_history(m);
}
