/*
 * expo_prom.c — Prometheus exposition (text 0.0.4, OpenMetrics) of points.
 */
#include "expo/expo_prom.h"
#include "model/metric.h"
#include "util/escape.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PROM_NAME_MAX METRIC_PROM_NAME_MAX

/* [a-zA-Z_][a-zA-Z0-9_]*: colons are for recording rules, so never ours. */
static void put_name_part(char *dst, size_t *n, size_t cap, const char *src)
{
	for (const char *p = src; *p && *n + 1 < cap; p++) {
		unsigned char c = (unsigned char)*p;
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
		if (*n == 0 && c >= '0' && c <= '9')
			dst[(*n)++] = '_';
		if (*n + 1 < cap)
			dst[(*n)++] = ok ? (char)c : '_';
	}
	dst[*n] = '\0';
}

static void family_name(char out[PROM_NAME_MAX], const struct expo_point *p)
{
	size_t n = 0;
	out[0] = '\0';
	if (p->prefix && p->prefix[0]) {
		put_name_part(out, &n, PROM_NAME_MAX - 8, p->prefix);
		put_name_part(out, &n, PROM_NAME_MAX - 8, "_");
	}
	put_name_part(out, &n, PROM_NAME_MAX - 8, p->prom ? p->prom : p->metric);
	if (n == 0)
		put_name_part(out, &n, PROM_NAME_MAX - 8, "_");
	if (p->counter && (n < 6 || strcmp(out + n - 6, "_total")))
		strcat(out, "_total");
}

/* The name in base units (model/metric.h's one rule) and the scale to
 * them. A point made by hand has no row to give its unit: a name ending in
 * "_ms" is in ms, any other keeps its unit. */
static double base_units(char name[PROM_NAME_MAX])
{
	char in[PROM_NAME_MAX];
	size_t n = strlen(name);
	enum metric_unit u = n > 3 && !strcmp(name + n - 3, "_ms") ? METRIC_MS : METRIC_COUNT;
	snprintf(in, sizeof(in), "%s", name);
	metric_prom_spell(name, PROM_NAME_MAX, in, u);
	return metric_prom_scale(u);
}

/* Escapes \ and newline, and " too in label values; control characters and
 * invalid UTF-8 become '?' (escape.h). */
static void put_escaped(FILE *f, const char *s, int quote)
{
	esc_fputs(f, quote ? &esc_prom_label : &esc_prom_help, s);
}

static void put_label(FILE *f, int *first, const char *key, const char *value)
{
	fputs(*first ? "{" : ",", f);
	*first = 0;
	char k[PROM_NAME_MAX];
	size_t n = 0;
	/* a label name may not start with __ (reserved) nor a digit */
	put_name_part(k, &n, sizeof(k), key[0] == '_' ? key + strspn(key, "_") : key);
	fprintf(f, "%s=\"", n ? k : "label");
	put_escaped(f, value, 1);
	fputc('"', f);
}

struct item {
	size_t idx;
	double scale;            /* of the value, to the name's base unit */
	char name[PROM_NAME_MAX];
};

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The value in the name's unit: prom_value for a point named from the
 * metric table, else value scaled to the unit base_units spelled. */
static double value_of(const struct expo_point *p, const struct item *it)
{
	return p->prom ? p->prom_value : p->value * it->scale;
}

/* # HELP and # TYPE of a family; OpenMetrics names a counter's family
 * without its _total, and escapes " in HELP too. */
static void put_family(FILE *f, const struct expo_point *p, const char *name, enum expo_prom_fmt fmt)
{
	int om = fmt == EXPO_PROM_OPENMETRICS;
	size_t len = strlen(name);
	if (om && p->counter && len > 6 && !strcmp(name + len - 6, "_total"))
		len -= 6;
	fprintf(f, "# HELP %.*s ", (int)len, name);
	put_escaped(f, p->help ? p->help : p->metric, om);
	fprintf(f, "\n# TYPE %.*s %s\n", (int)len, name, p->counter ? "counter" : "gauge");
}

size_t expo_prom_budget(void)
{
	const char *e = getenv("LOOPSTAT_SERIES_BUDGET");
	char *end;
	unsigned long long v = e && *e ? strtoull(e, &end, 10) : 0;
	return e && *e && !*end && v > 0 ? (size_t)v : EXPO_PROM_SERIES_BUDGET;
}

/* A thread's series: a point that names a pid and a tid. */
static int of_thread(const struct expo_point *p)
{
	return p->pid >= 0 && p->tid >= 0;
}

static _Thread_local const struct expo_point *cmp_pts;   /* cmp_owner's, during one sort */

/* Threads' items by service, then thread; the rest first. */
static int cmp_owner(const void *a, const void *b)
{
	const struct expo_point *x = &cmp_pts[((const struct item *)a)->idx], *y = &cmp_pts[((const struct item *)b)->idx];
	int tx = of_thread(x), ty = of_thread(y);
	if (tx != ty)
		return tx - ty;
	int c = tx ? strcmp(x->service ? x->service : "", y->service ? y->service : "") : 0;
	if (c)
		return c;
	if (x->pid != y->pid)
		return (x->pid > y->pid) - (x->pid < y->pid);
	if (x->tid != y->tid)
		return (x->tid > y->tid) - (x->tid < y->tid);
	return (((const struct item *)a)->idx > ((const struct item *)b)->idx) -
	       (((const struct item *)a)->idx < ((const struct item *)b)->idx);
}

struct run { size_t at, n; };   /* one thread's items: items[at .. at + n) */

struct owner {                  /* one process's threads: runs[first .. first + n) */
	size_t first, n;
	size_t svc_threads;     /* its service's threads, all processes */
};

static int cmp_turn(const void *a, const void *b)
{
	const struct owner *x = a, *y = b;
	if (x->svc_threads != y->svc_threads)
		return (x->svc_threads > y->svc_threads) - (x->svc_threads < y->svc_threads);
	if (x->n != y->n)
		return (x->n > y->n) - (x->n < y->n);
	return (x->first > y->first) - (x->first < y->first);
}

static const char *svc_of(const struct expo_point *p)
{
	return p->service ? p->service : "";
}

/* Keeps at most budget of the m items, in place: the series of no thread
 * first (fleet, services, the source), then threads whole, in rounds: each
 * process gives one thread a round, those of the smallest services and the
 * smallest processes first, so that a flood of threads (one process's or
 * one service's) cannot take the budget from the others. Returns the
 * items kept; the rest are dropped. */
static size_t fit_budget(const struct expo_point *pts, struct item *items, size_t m, size_t budget)
{
	cmp_pts = pts;
	qsort(items, m, sizeof(*items), cmp_owner);
	size_t others = 0;
	while (others < m && !of_thread(&pts[items[others].idx]))
		others++;
	if (others >= budget)
		return budget;
	struct run *runs = calloc(m - others + 1, sizeof(*runs));
	struct owner *own = calloc(m - others + 1, sizeof(*own));
	char *keep = calloc(m, 1);
	size_t nruns = 0, nown = 0, svc_at = 0;
	if (!runs || !own || !keep) {
		free(runs), free(own), free(keep);
		return others;
	}
	for (size_t i = others; i < m; i++) {
		const struct expo_point *p = &pts[items[i].idx];
		const struct expo_point *q = i > others ? &pts[items[i - 1].idx] : NULL;
		int new_svc = !q || strcmp(svc_of(q), svc_of(p));
		if (new_svc || q->pid != p->pid) {
			if (new_svc) {   /* the last service's size to its processes */
				for (size_t k = svc_at; k < nown; k++)
					own[k].svc_threads = nruns - own[svc_at].first;
				svc_at = nown;
			}
			own[nown++] = (struct owner){ .first = nruns };
		}
		if (new_svc || q->pid != p->pid || q->tid != p->tid) {
			runs[nruns++] = (struct run){ i, 0 };
			own[nown - 1].n++;
		}
		runs[nruns - 1].n++;
	}
	for (size_t k = svc_at; k < nown; k++)
		own[k].svc_threads = nruns - own[svc_at].first;
	qsort(own, nown, sizeof(*own), cmp_turn);
	size_t left = budget - others;
	for (size_t round = 0; nown && left; round++) {
		size_t still = 0;
		for (size_t k = 0; k < nown; k++) {
			const struct run *r = &runs[own[k].first + round];
			if (r->n <= left) {
				memset(keep + r->at, 1, r->n);
				left -= r->n;
			}
			if (round + 1 < own[k].n)
				own[still++] = own[k];   /* threads left to give: in the next round, in turn */
		}
		nown = still;
	}
	size_t j = others;
	for (size_t i = others; i < m; i++)
		if (keep[i])
			items[j++] = items[i];
	free(runs), free(own), free(keep);
	return j;
}

/* What the budget dropped: a gauge always (so an alert can watch it), and
 * in the text format a comment line that says it. */
static void put_dropped(FILE *f, const struct expo_point *any, size_t dropped, size_t budget,
			enum expo_prom_fmt fmt)
{
	char name[PROM_NAME_MAX];
	struct expo_point p = { .prefix = any ? any->prefix : NULL, .metric = "series_dropped" };
	family_name(name, &p);
	if (dropped && fmt == EXPO_PROM_TEXT)
		fprintf(f, "# loopstat: %zu series dropped past the budget of %zu (threads' first, services' last)\n",
			dropped, budget);
	fprintf(f, "# HELP %s series left out of this exposition past its budget of %zu (LOOPSTAT_SERIES_BUDGET)\n"
		"# TYPE %s gauge\n%s", name, budget, name, name);
	if (any && any->host) {
		int first = 1;
		put_label(f, &first, "host", any->host);
		fputc('}', f);
	}
	fprintf(f, " %zu\n", dropped);
}

size_t expo_prom_format(FILE *f, const struct expo_point *pts, size_t n, size_t *skipped)
{
	return expo_prom_render(f, pts, n, EXPO_PROM_TEXT, skipped);
}

size_t expo_prom_render(FILE *f, const struct expo_point *pts, size_t n, enum expo_prom_fmt fmt,
                        size_t *skipped)
{
	struct item *items = calloc(n ? n : 1, sizeof(*items));
	size_t m = 0, written = 0, skip = 0;
	for (size_t i = 0; items && i < n; i++) {
		if (!pts[i].metric) {
			skip++;
			continue;
		}
		items[m].idx = i;
		family_name(items[m].name, &pts[i]);
		items[m].scale = pts[i].prom ? 1 : base_units(items[m].name);
		if (!isfinite(value_of(&pts[i], &items[m]))) {
			skip++;
			continue;
		}
		m++;
	}
	size_t budget = expo_prom_budget(), dropped = 0;
	if (items && m + 1 > budget) {   /* the dropped gauge is one of the budget's series */
		size_t kept = fit_budget(pts, items, m, budget - 1);
		dropped = m - kept;
		m = kept;
	}
	if (items)
		qsort(items, m, sizeof(*items), cmp_item);
	for (size_t j = 0; j < m; j++) {
		const struct expo_point *p = &pts[items[j].idx];
		if (j == 0 || strcmp(items[j].name, items[j - 1].name))
			put_family(f, p, items[j].name, fmt);
		fputs(items[j].name, f);
		int first = 1;
		char num[24];
		if (p->host)
			put_label(f, &first, "host", p->host);
		if (p->process)
			put_label(f, &first, "name", p->process);
		if (p->service)
			put_label(f, &first, "service", p->service);
		if (p->pid >= 0) {
			snprintf(num, sizeof(num), "%lld", (long long)p->pid);
			put_label(f, &first, "pid", num);
		}
		if (p->tid >= 0) {
			snprintf(num, sizeof(num), "%lld", (long long)p->tid);
			put_label(f, &first, "tid", num);
		}
		if (p->tag)
			put_label(f, &first, "tag", p->tag);
		if (p->kind)
			put_label(f, &first, "kind", p->kind);
		if (p->runtime)
			put_label(f, &first, "runtime", p->runtime);
		for (size_t t = 0; t < p->ntags && t < EXPO_TAGS_MAX; t++) {
			static const char *const builtin[] = { "host", "name", "service", "pid", "tid", "tag", "kind",
								 "runtime" };
			int clash = 0;
			for (size_t b = 0; b < sizeof(builtin) / sizeof(builtin[0]); b++)
				clash |= !strcmp(p->tags[t].key, builtin[b]);
			if (!clash && p->tags[t].value)
				put_label(f, &first, p->tags[t].key, p->tags[t].value);
		}
		if (!first)
			fputc('}', f);
		double v = value_of(p, &items[j]);
		/* a counter in full; else 15 digits, so 0.1 reads 0.1 */
		if (v == floor(v) && fabs(v) < 9e15)
			fprintf(f, " %.0f\n", v);
		else
			fprintf(f, " %.15g\n", v);
		written++;
	}
	put_dropped(f, n ? &pts[0] : NULL, dropped, budget, fmt);
	if (fmt == EXPO_PROM_OPENMETRICS)
		fputs("# EOF\n", f);
	free(items);
	if (skipped)
		*skipped = skip;
	return written;
}
