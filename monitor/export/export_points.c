/*
 * export_points.c — model → export points, by walking the metric table.
 */
#include "export/export_points.h"
#include "model/model_build.h"


#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fleet rows are exported as fleet.<name>: made from the table itself */
static const char *const fleet_names[METRIC_NFLEET] = {
#define FLEET_NAME_X(name, ...) "fleet." #name,
	METRIC_FLEET_IDS(FLEET_NAME_X)
#undef FLEET_NAME_X
};

const char *export_points_metric(const struct metric *m)
{
	if (m >= metric_fleet && m < metric_fleet + METRIC_NFLEET)
		return fleet_names[m - metric_fleet];
	return m->name;
}

void export_points_init(struct export_points *b)
{
	memset(b, 0, sizeof(*b));
}

void export_points_done(struct export_points *b)
{
	for (size_t i = 0; i < b->nstrs; i++)
		free(b->strs[i]);
	free(b->strs);
	free(b->pts);
	memset(b, 0, sizeof(*b));
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 256;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* A copy of s owned by b; NULL for "" (an absent level). */
static int keep(struct export_points *b, const char *s, const char **out)
{
	*out = NULL;
	if (!s || !s[0])
		return 0;
	if (grow((void **)&b->strs, &b->capstrs, b->nstrs + 1, sizeof(*b->strs)) < 0)
		return -ENOMEM;
	char *c = strdup(s);
	if (!c)
		return -ENOMEM;
	b->strs[b->nstrs++] = c;
	*out = c;
	return 0;
}

static int add(struct export_points *b, const struct export_point *p)
{
	if (grow((void **)&b->pts, &b->cap, b->n + 1, sizeof(*b->pts)) < 0)
		return -ENOMEM;
	b->pts[b->n++] = *p;
	return 0;
}

const char *export_points_service(const struct worker_view *w)
{
	return *w->service ? w->service : w->name;
}

static int add_worker(struct export_points *b, const struct worker_view *w, const char *prefix, const char *host,
                      int64_t ts)
{
	struct export_point p = { .prefix = prefix, .host = host, .pid = w->pid, .tid = w->tid, .ts = ts,
				  .kind = w->kind, .runtime = w->runtime };
	if (keep(b, w->name, &p.process) < 0 || keep(b, w->tag, &p.tag) < 0 ||
	    keep(b, export_points_service(w), &p.service) < 0)
		return -ENOMEM;
	if (!p.process)
		p.process = "unknown";
	if (!p.service)
		p.service = p.process;
	for (int i = 0; i < METRIC_NWORKER; i++) {
		const struct metric *m = &metric_worker[i];
		if (!metric_applies(m, w))
			continue;   /* an uninstrumented worker has no counters: no series at all */
		p.metric = export_points_metric(m);
		p.value = metric_value(m, w);   /* NaN is counted and skipped by export_run */
		p.help = metric_prom_help(m);
		p.prom = metric_prom_name(m);
		p.prom_value = metric_prom_value(m, w);
		p.counter = metric_prom_counter(m);
		if (add(b, &p) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The fleet rows over the fleet (service NULL: fleet.<row>) or over one
 * service: service.<name>.<row> in Graphite, the name one level however
 * many dots it holds ("nginx.service" is nginx_service), and in Prometheus
 * the fleet's names with a service label.
 */
static int add_rollup(struct export_points *b, struct export_point *p, const char *service, const struct fleet_view *f)
{
	char comp[EXPORT_COMPONENT_MAX + 1], metric[EXPORT_COMPONENT_MAX + 96];
	p->service = NULL;
	if (service) {
		export_sanitize(comp, service, strlen(service));
		if (keep(b, service, &p->service) < 0)
			return -ENOMEM;
	}
	for (int i = 0; i < METRIC_NFLEET; i++) {
		p->metric = export_points_metric(&metric_fleet[i]);
		if (service) {
			snprintf(metric, sizeof(metric), "service.%s.%s", comp, metric_fleet[i].name);
			if (keep(b, metric, &p->metric) < 0)
				return -ENOMEM;
		}
		p->value = metric_value(&metric_fleet[i], f);
		p->help = metric_fleet[i].desc;
		p->prom = metric_prom_name(&metric_fleet[i]);
		p->prom_value = metric_prom_value(&metric_fleet[i], f);
		if (add(b, p) < 0)
			return -ENOMEM;
	}
	return 0;
}

int export_points_add_source(struct export_points *b, const struct model *m, const char *prefix, const char *host,
			     int64_t ts)
{
	const char *src = m->source[0] ? m->source : "proc";
	struct export_point p = { .prefix = prefix, .host = host, .pid = -1, .tid = -1, .ts = ts, .value = 1,
				  .prom = "source_info", .prom_value = 1,
				  .help = "what measured the figures: bpf (kernel tracepoints) or proc (samples), and why auto fell back" };
	struct export_tag *t = calloc(2, sizeof(*t));
	if (!t || grow((void **)&b->strs, &b->capstrs, b->nstrs + 1, sizeof(*b->strs)) < 0) {
		free(t);
		return -ENOMEM;
	}
	b->strs[b->nstrs++] = (char *)t;   /* freed with the strings */
	t[0].key = "source";
	t[1].key = "reason";
	if (keep(b, strcmp(src, "bpf") == 0 ? "source.bpf" : "source.proc", &p.metric) < 0 ||
	    keep(b, src, &t[0].value) < 0 || keep(b, m->source_why, &t[1].value) < 0)
		return -ENOMEM;
	p.tags = t;
	p.ntags = m->source_why[0] ? 2 : 1;
	return add(b, &p);
}

int export_points_add_gauge(struct export_points *b, const char *prefix, const char *host, int64_t ts,
			    const char *metric, const char *help, double value)
{
	struct export_point p = { .prefix = prefix, .host = host, .pid = -1, .tid = -1, .ts = ts, .metric = metric,
				  .value = value, .prom = metric, .prom_value = value, .help = help };
	return add(b, &p);
}

int export_points_add_ignored(struct export_points *b, const struct model *m, const char *prefix, const char *host,
			      int64_t ts)
{
	for (int r = 0; r < MODEL_NIGNORED; r++) {
		struct export_point p = { .prefix = prefix, .host = host, .pid = -1, .tid = -1, .ts = ts,
					  .value = model_ignored(m, r), .prom = "ignored_threads",
					  .prom_value = model_ignored(m, r),
					  .help = "threads not sampled or not shown, by reason: cap (--max-workers), role "
						  "(loops not shown without --all), access (processes /proc refused)" };
		struct export_tag *t = calloc(1, sizeof(*t));
		char metric[64];
		snprintf(metric, sizeof(metric), "ignored_threads.%s", model_ignored_reason(r));
		if (!t || grow((void **)&b->strs, &b->capstrs, b->nstrs + 1, sizeof(*b->strs)) < 0) {
			free(t);
			return -ENOMEM;
		}
		b->strs[b->nstrs++] = (char *)t;   /* freed with the strings */
		t->key = "reason";
		t->value = model_ignored_reason(r);
		p.tags = t;
		p.ntags = 1;
		if (keep(b, metric, &p.metric) < 0 || add(b, &p) < 0)
			return -ENOMEM;
	}
	return 0;
}

int export_points_add_model(struct export_points *b, const struct model *m, const char *prefix, const char *host,
                            int64_t ts)
{
	for (size_t i = 0; i < m->n; i++)
		if (!m->workers[i].no_access && add_worker(b, &m->workers[i], prefix, host, ts) < 0)
			return -ENOMEM;
	struct export_point p = { .prefix = prefix, .host = host, .pid = -1, .tid = -1, .ts = ts };
	if (add_rollup(b, &p, NULL, &m->fleet) < 0)
		return -ENOMEM;
	for (size_t s = 0; s < m->nservices; s++)
		if (add_rollup(b, &p, m->services[s].name, &m->services[s].f) < 0)
			return -ENOMEM;
	return 0;
}

int export_points_add_second(struct export_points *b, const struct snapshot *snap, int64_t sec, int64_t ts,
			     const char *prefix, const char *host, int *sampled)
{
	struct model m;
	*sampled = 0;
	int rc = model_build_range(snap, sec, sec, &m);
	if (rc == 0) {
		rc = export_points_add_model_sampled(b, &m, ts, prefix, host, sampled);
		model_done(&m);
	}
	return rc;
}

int export_points_add_model_sampled(struct export_points *b, const struct model *m, int64_t ts, const char *prefix,
				    const char *host, int *sampled)
{
	*sampled = 0;
	for (size_t i = 0; i < m->n; i++)
		*sampled |= m->workers[i].samples > 0;
	return *sampled ? export_points_add_model(b, m, prefix, host, ts) : 0;
}
