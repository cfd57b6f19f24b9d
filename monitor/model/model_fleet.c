/*
 * model_fleet.c — fleet totals (what the header line, list's closing line
 * and the fleet's JSON object show), and the same rows per service.
 */
#include "model/model_build.h"
#include "model/eval.h"
#include "model/metric.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* per-second mean idle over the workers (of idx[0..n)) that have that second */
static void fleet_history(const struct model *m, const size_t *idx, size_t n, struct fleet_view *f)
{
	for (int k = 0; k < f->nhistory; k++) {
		double sum = 0;
		int cnt = 0;
		for (size_t j = 0; j < n; j++) {
			const struct worker_view *w = &m->workers[idx[j]];
			int i = w->nhistory - f->nhistory + k;
			if (i >= 0 && !isnan(w->idle_history[i])) {
				sum += w->idle_history[i];
				cnt++;
			}
		}
		f->idle_history[k] = cnt ? (float)(sum / cnt) : NAN;
	}
}

/* The fleet rows over the workers idx[0..n); ests is scratch for n. */
static void rollup(const struct model *m, const size_t *idx, size_t n, struct estimate *ests, struct fleet_view *f)
{
	memset(f, 0, sizeof(*f));
	for (int r = 0; r < METRIC_NFLEET; r++) {
		const struct metric *fm = &metric_fleet[r], *of = &metric_worker[fm->of];
		struct estimate e = { .ok = 0, .est = NAN };
		for (size_t j = 0; j < n; j++) {
			double v = metric_field(of, &m->workers[idx[j]]);
			ests[j] = (struct estimate){ .ok = !isnan(v), .est = v, .lo = v, .hi = v, .df = INFINITY };
		}
		model_eval_fleet(fm, ests, n, &e);
		char *field = (char *)f + fm->offset;
		if (fm->type == METRIC_UNSIGNED)
			*(unsigned *)field = e.ok ? (unsigned)e.est : 0;
		else
			*(double *)field = e.ok ? e.est : NAN;   /* unknown, not zero, when no worker can tell */
	}
	for (size_t j = 0; j < n; j++)
		if (m->workers[idx[j]].nhistory > f->nhistory)
			f->nhistory = m->workers[idx[j]].nhistory;
	fleet_history(m, idx, n, f);
}

static int by_service(const void *a, const void *b, void *arg)
{
	const struct model *m = arg;
	const struct worker_view *x = &m->workers[*(const size_t *)a];
	const struct worker_view *y = &m->workers[*(const size_t *)b];
	int c = strcmp(x->service, y->service);
	return c ? c : (*(const size_t *)a > *(const size_t *)b) - (*(const size_t *)a < *(const size_t *)b);
}

void model_fleet(struct model *m)
{
	size_t k = m->n ? m->n : 1;
	struct estimate *ests = calloc(k, sizeof(*ests));
	size_t *idx = calloc(k, sizeof(*idx));
	free(m->services);
	m->services = NULL;
	m->nservices = 0;
	if (!ests || !idx) {
		memset(&m->fleet, 0, sizeof(m->fleet));
		m->fleet.mean_idle_pct = m->fleet.ops_per_s = m->fleet.headroom_ops_per_s = m->fleet.idle_pct_min = NAN;
		goto out;
	}
	for (size_t i = 0; i < m->n; i++)
		idx[i] = i;
	rollup(m, idx, m->n, ests, &m->fleet);
	/* services: runs of one name once sorted by it */
	qsort_r(idx, m->n, sizeof(*idx), by_service, m);
	size_t nsvc = 0;
	for (size_t i = 0; i < m->n; i++)
		nsvc += i == 0 || strcmp(m->workers[idx[i]].service, m->workers[idx[i - 1]].service) != 0;
	if (nsvc && (m->services = calloc(nsvc, sizeof(*m->services)))) {
		for (size_t i = 0, j; i < m->n; i = j) {
			for (j = i + 1; j < m->n && strcmp(m->workers[idx[j]].service, m->workers[idx[i]].service) == 0; j++)
				;
			struct service_view *sv = &m->services[m->nservices++];
			snprintf(sv->name, sizeof(sv->name), "%s", m->workers[idx[i]].service);
			rollup(m, idx + i, j - i, ests, &sv->f);
		}
	}
out:
	free(ests);
	free(idx);
}
