/*
 * list.c — the `list` view: one row (or JSON object) per worker, walking
 * the metric table.
 */
#include "list/list.h"
#include "model/limit.h"
#include "util/json.h"
#include "model/metric.h"
#include "probe_shm.h"
#include "util/escape.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

#define LIST_JSON_VERSION 1

static void json_metric(struct json *j, const struct metric *m, const void *view)
{
	json_key(j, m->name);
	if (m->type == METRIC_DOUBLE)
		json_double(j, metric_value(m, view), m->decimals);
	else
		json_u64(j, (uint64_t)metric_value(m, view));
}

static void json_source(struct json *j, const struct worker_view *w, enum metric_source src)
{
	for (int i = 0; i < METRIC_NWORKER; i++)
		if (metric_worker[i].source == src)
			json_metric(j, &metric_worker[i], w);
}

static void json_blockers(struct json *j, const struct worker_view *w)
{
	json_key(j, "blocked_top");
	json_array_begin(j);
	for (int i = 0; i < w->nblocked_top; i++) {
		const struct blocker_view *b = &w->blocked_top[i];
		json_object_begin(j);
		json_key(j, "syscall");
		json_string(j, b->syscall);
		json_key(j, "fd");
		json_i64(j, b->fd);
		json_key(j, "target");
		json_string(j, b->target);
		json_key(j, "pct");
		json_double(j, b->pct, 2);
		json_object_end(j);
	}
	json_array_end(j);
}

/* The stalls captured (model/stall.h), newest first. */
static void json_stalls(struct json *j, const struct worker_view *w)
{
	json_key(j, "stalls");
	json_array_begin(j);
	for (int i = 0; i < w->nstall_log; i++) {
		const struct stall_view *s = &w->stall_log[i];
		json_object_begin(j);
		json_key(j, "time_s");
		json_double(j, s->t_s, 3);
		json_key(j, "duration_ms");
		json_double(j, s->dur_ms, 0);
		json_key(j, "ended");
		json_boolean(j, s->ended);
		/* an open span's reach is not known yet */
		const double reach[2] = { s->lo_ms, s->hi_ms };
		const char *const reach_key[2] = { "duration_lo_ms", "duration_hi_ms" };
		for (int r = 0; r < 2; r++) {
			json_key(j, reach_key[r]);
			if (s->ended)
				json_double(j, reach[r], 0);
			else
				json_null(j);
		}
		json_key(j, "state");
		json_string(j, s->state);
		json_key(j, "syscall");
		if (s->syscall[0])
			json_string(j, s->syscall);
		else
			json_null(j);
		json_key(j, "fd");
		json_i64(j, s->fd);
		json_key(j, "target");
		json_string(j, s->target);
		json_key(j, "fiber");
		json_string(j, s->fiber);
		json_key(j, "stack_from");
		json_string(j, s->stack_from);
		json_key(j, "stack_missing");
		json_string(j, s->why);
		json_key(j, "frames");
		json_array_begin(j);
		for (int f = 0; f < s->nframes; f++)
			json_string(j, s->frames[f]);
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_totals(struct json *j, const struct worker_view *w)
{
	json_key(j, "totals");
	json_object_begin(j);
	for (int v = 0; v < PROBE_SHM_NVALUES; v++) {
		json_key(j, probe_shm_values[v].name);
		json_u64(j, w->totals[v]);
	}
	json_object_end(j);
}

/* Its process's helper pools: what pool_threads and pool_busy_pct pick the busiest of. */
static void json_pools(struct json *j, const struct worker_view *w)
{
	json_key(j, "pools");
	json_array_begin(j);
	for (int i = 0; i < w->npools; i++) {
		const struct pool_view *p = &w->pools[i];
		char key[24];
		json_object_begin(j);
		json_key(j, "kind");
		json_string(j, p->kind);
		json_key(j, "key");
		if (p->key) {
			snprintf(key, sizeof(key), "0x%llx", (unsigned long long)p->key);
			json_string(j, key);
		} else {
			json_null(j);
		}
		json_key(j, "nthreads");
		json_u64(j, p->nthreads);
		json_key(j, "threads");
		json_array_begin(j);
		for (unsigned k = 0; k < p->nthreads && k < MODEL_POOL_TIDS; k++)
			json_i64(j, p->tids[k]);
		json_array_end(j);
		json_key(j, "busy_pct");
		json_double(j, p->busy_pct, 2);
		json_object_end(j);
	}
	json_array_end(j);
}

/* kind, runtime, capacity in threads, and a scheduler's threads */
static void json_runtime(struct json *j, const struct worker_view *w)
{
	json_key(j, "kind");
	json_string(j, w->kind);
	json_key(j, "runtime");
	json_string(j, w->runtime);
	json_key(j, "threads");
	json_i64(j, w->threads);
	json_key(j, "threads_from");
	json_string(j, w->threads_from);
	json_key(j, "thread_name");
	json_string(j, w->thread_name);
	json_key(j, "group");
	if (w->group[0])
		json_string(j, w->group);
	else
		json_null(j);
	json_key(j, "members");
	json_array_begin(j);
	for (int i = 0; i < w->nmembers; i++) {
		const struct member_view *m = &w->members[i];
		json_object_begin(j);
		json_key(j, "tid");
		json_i64(j, m->tid);
		json_key(j, "name");
		json_string(j, m->name);
		json_key(j, "role");
		json_string(j, m->worker ? "worker" : "blocking");
		json_key(j, "busy_pct");
		json_double(j, m->busy_pct, 2);
		json_object_end(j);
	}
	json_array_end(j);
}

void list_json_worker(struct json *j, const struct worker_view *w)
{
	json_object_begin(j);
	json_key(j, "pid");
	json_i64(j, w->pid);
	json_key(j, "tid");
	json_i64(j, w->tid);
	json_key(j, "name");
	json_string(j, w->name);
	json_key(j, "role");
	json_string(j, w->role ? w->role : "unknown");
	json_key(j, "helpers");   /* helper loops of its process folded into it */
	json_array_begin(j);
	for (int i = 0; i < w->nhelpers; i++)
		json_i64(j, w->helpers[i]);
	json_array_end(j);
	json_key(j, "service");
	json_string(j, w->service);
	json_key(j, "tag");
	json_string(j, w->tag);
	json_key(j, "backend");
	json_string(j, w->backend);
	json_key(j, "instrumented");
	json_boolean(j, w->instrumented);
	json_key(j, "gone");
	json_boolean(j, w->gone);
	json_key(j, "loop_basis");
	json_string(j, w->loop_basis);
	json_runtime(j, w);
	json_source(j, w, METRIC_SAMPLED);
	json_key(j, "interval");   /* what idle_lo and idle_hi are */
	json_string(j, w->exact ? "exact" : "batch_means");
	json_blockers(j, w);
	json_source(j, w, METRIC_SCHED);
	char why[320];   /* a quota verdict names its cgroup */
	int l = model_limit_of(w, why, sizeof(why));
	json_key(j, "limit");   /* the verdict of the limit_* rows, as a word */
	if (l < 0)
		json_null(j);
	else
		json_string(j, model_limit_name((enum metric_limit)l));
	json_key(j, "limit_reason");
	json_string(j, why);
	if (w->lag_why[0]) {   /* a lag_* row is null because the samples cannot resolve it */
		json_key(j, "lag_why");
		json_string(j, w->lag_why);
	}
	json_stalls(j, w);
	json_pools(j, w);
	if (w->exact && !w->instrumented) {
		/* an uninstrumented loop's rates from its poll's returns and events (bpf) */
		json_key(j, "exact");
		json_object_begin(j);
		json_key(j, "polls_per_s");
		json_double(j, w->polls_per_s, 2);
		json_key(j, "ops_per_s");
		json_double(j, w->ops_per_s, 2);
		json_key(j, "headroom_ops_per_s");
		json_double(j, w->headroom_ops_per_s, 2);
		json_object_end(j);
	}
	if (w->instrumented) {
		json_key(j, "fiber_tag");
		json_string(j, w->fiber_tag);
		json_totals(j, w);
		json_key(j, "counters");
		json_object_begin(j);
		json_source(j, w, METRIC_COUNTERS);
		json_key(j, "headroom_bound");   /* what headroom_ops_per_s is the tightest of */
		if (model_bound_name(w->headroom_bound))
			json_string(j, model_bound_name(w->headroom_bound));
		else
			json_null(j);
		json_object_end(j);
	}
	json_object_end(j);
}

void list_print_json(FILE *out, const struct model *m)
{
	struct json j;
	json_init(&j, out);
	json_object_begin(&j);
	json_key(&j, "version");
	json_u64(&j, LIST_JSON_VERSION);
	json_key(&j, "duration_s");
	json_double(&j, model_span_s(m), 3);
	json_key(&j, "rate_hz");
	json_double(&j, m->rate_hz, 1);
	json_key(&j, "precision_pts");
	json_double(&j, m->precision_pts, 1);
	json_key(&j, "source");
	json_string(&j, m->source[0] ? m->source : "proc");
	if (m->source_why[0]) {
		json_key(&j, "source_why");
		json_string(&j, m->source_why);
	}
	json_key(&j, "workers");
	json_array_begin(&j);
	for (size_t i = 0; i < m->n; i++)
		list_json_worker(&j, &m->workers[i]);
	json_array_end(&j);
	json_key(&j, "ignored");
	json_u64(&j, m->ignored + m->sweep.ignored_access);
	json_key(&j, "ignored_by");   /* the same by reason (model_ignored_reason); "ignored" stays their sum of old */
	json_object_begin(&j);
	for (int r = 0; r < MODEL_NIGNORED; r++) {
		json_key(&j, model_ignored_reason(r));
		json_u64(&j, model_ignored(m, r));
	}
	json_object_end(&j);
	json_key(&j, "left_out");   /* loops not shown, by role: only servers without -p, -n or --all */
	json_object_begin(&j);
	for (int r = 0; r < MODEL_NROLES; r++)
		if (r != MODEL_ROLE_SERVER) {
			json_key(&j, model_role_name(r));
			json_u64(&j, m->left_out[r]);
		}
	json_object_end(&j);
	if (m->swept) {
		json_key(&j, "swept");
		json_object_begin(&j);
		json_key(&j, "processes");
		json_u64(&j, m->sweep.procs);
		json_key(&j, "threads");
		json_u64(&j, m->sweep.threads);
		json_key(&j, "loops");
		json_u64(&j, m->sweep.loops);
		json_key(&j, "ignored_permission");
		json_u64(&j, m->sweep.ignored_access);
		json_key(&j, "ignored_limit");
		json_u64(&j, m->ignored);
		json_object_end(&j);
	}
	json_key(&j, "refused");
	json_array_begin(&j);
	for (unsigned i = 0; i < m->nrefused && i < MODEL_REFUSED; i++) {
		json_object_begin(&j);
		json_key(&j, "pid");
		json_i64(&j, m->refused[i].pid);
		json_key(&j, "reason");
		json_string(&j, m->refused[i].text);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_key(&j, "fleet");
	json_object_begin(&j);
	for (int i = 0; i < METRIC_NFLEET; i++)
		json_metric(&j, &metric_fleet[i], &m->fleet);
	json_key(&j, "services");
	json_array_begin(&j);
	for (size_t s = 0; s < m->nservices; s++) {
		json_object_begin(&j);
		json_key(&j, "name");
		json_string(&j, m->services[s].name);
		for (int i = 0; i < METRIC_NFLEET; i++)
			json_metric(&j, &metric_fleet[i], &m->services[s].f);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	json_object_end(&j);
	fputc('\n', out);
}

/* "-" for unknown, else the value with the given decimals */
static const char *num(char *buf, size_t len, double v, int decimals)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.*f", decimals, v);
	return buf;
}

/* "read(7) 40%", or "-" */
static void top_blocker(char *buf, size_t len, const struct worker_view *w)
{
	if (w->nblocked_top)
		snprintf(buf, len, "%s(%d) %.0f%%", w->blocked_top[0].syscall, w->blocked_top[0].fd,
			 w->blocked_top[0].pct);
	else
		snprintf(buf, len, "-");
}

static void print_cell(FILE *out, const char *text, int width, int last)
{
	if (last)
		fprintf(out, " %s", text);   /* no padding after the last column */
	else if (width < 0)
		fprintf(out, " %-*.*s", -width, -width, text);
	else
		fprintf(out, " %*s", width, text);
}

/* The text table's figures, keyed as the metric table: the dashboard's
 * columns (their titles as top's) and idle_pct's interval beside it. */
static const struct {
	int metric;          /* enum worker_metric */
	const char *title;
	int width;           /* cells */
} list_columns[] = {
	{ METRIC_W_idle_pct,     "IDLE%",    5 },
	{ METRIC_W_idle_ci95,    "±",        5 },
	{ METRIC_W_cpu_pct,      "CPU%",     5 },
	{ METRIC_W_blocked_pct,  "BLOCKED%", 8 },
	{ METRIC_W_ops_per_s,    "OPS/s",    7 },
	{ METRIC_W_runqueue_len, "RUNQ",     4 },
	{ METRIC_W_pending_ops,  "PEND",     4 },
	{ METRIC_W_stall_ms,     "STALL",    6 },
	{ METRIC_W_lag_p99_ms,   "LAG99",    6 },
};

const char *list_column_title(int metric)
{
	for (size_t c = 0; c < sizeof(list_columns) / sizeof(list_columns[0]); c++)
		if (list_columns[c].metric == metric)
			return list_columns[c].title;
	return NULL;
}

/* The figure columns; TOP-BLOCKER follows blocked_pct, then LIMIT (the
 * verdict, "-" when the loop's own figure is unknown), and the loop's poll
 * basis ends the line. */
static void print_cells(FILE *out, const struct worker_view *w)
{
	char cell[64];
	for (size_t c = 0; c < sizeof(list_columns) / sizeof(list_columns[0]); c++) {
		int i = list_columns[c].metric;
		const struct metric *m = &metric_worker[i];
		if (w)
			metric_format(cell, sizeof(cell), m->unit, metric_applies(m, w) ? metric_value(m, w) : NAN, 1);
		print_cell(out, w ? cell : list_columns[c].title, list_columns[c].width, 0);
		if (i == METRIC_W_blocked_pct) {
			if (w)
				top_blocker(cell, sizeof(cell), w);
			print_cell(out, w ? cell : "TOP-BLOCKER", -22, 0);
		}
	}
	int l = w ? model_limit_of(w, NULL, 0) : -1;
	print_cell(out, !w ? "LIMIT" : l < 0 ? "-" : model_limit_name((enum metric_limit)l), -7, 0);
	print_cell(out, !w ? "LOOP-POLL" : w->loop_basis[0] ? w->loop_basis : "-", -40, 1);
}

/* The service table's column titles, keyed by the fleet rows' ids: list's
 * own layout, in the worker table's words. */
static const char *const service_titles[METRIC_NFLEET] = {
	[METRIC_F_workers]            = "WORKERS",
	[METRIC_F_mean_idle_pct]      = "MEAN-IDLE%",
	[METRIC_F_ops_per_s]          = "OPS/s",
	[METRIC_F_headroom_ops_per_s] = "HEADROOM-OPS/s",
	[METRIC_F_idle_pct_min]       = "MIN-IDLE%",
};

const char *list_service_title(int metric)
{
	return metric >= 0 && metric < METRIC_NFLEET ? service_titles[metric] : NULL;
}

void list_print_services(FILE *out, const struct model *m)
{
	list_print_groups(out, m, "service");
}

/* One row per group: the fleet rows of the metric table over its workers. */
void list_print_groups(FILE *out, const struct model *m, const char *what)
{
	char cell[64], name[PROBE_SERVICE_LEN], title[32];
	size_t k = 0;
	for (; what[k] && k < sizeof(title) - 1; k++)
		title[k] = (char)toupper((unsigned char)what[k]);
	title[k] = '\0';
	fprintf(out, "%-32s", title);
	for (int i = 0; i < METRIC_NFLEET; i++)
		fprintf(out, " %14s", service_titles[i]);
	fputc('\n', out);
	for (size_t s = 0; s < m->nservices; s++) {
		esc_copy(name, 33, &esc_term, m->services[s].name, SIZE_MAX, NULL);
		fprintf(out, "%-32s", name);
		for (int i = 0; i < METRIC_NFLEET; i++) {
			metric_format(cell, sizeof(cell), metric_fleet[i].unit, metric_value(&metric_fleet[i], &m->services[s].f), 1);
			fprintf(out, " %14s", cell);
		}
		fputc('\n', out);
	}
	char how[64];
	model_sampling_text(m, how, sizeof(how));
	fprintf(out, "%zu %s%s, %u worker%s (%.1f s at %s)\n", m->nservices, what, m->nservices == 1 ? "" : "s",
		m->fleet.workers, m->fleet.workers == 1 ? "" : "s", model_span_s(m), how);
}

void list_print_text(FILE *out, const struct model *m)
{
	char a[32], b[32], c[32], name[PROBE_COMM_LEN + LOOPSTAT_TAG_LEN + 2];
	fprintf(out, "%7s %7s %-24s %-8s", "PID", "TID", "NAME", "BACKEND");
	print_cells(out, NULL);
	fputc('\n', out);
	for (size_t i = 0; i < m->n; i++) {
		const struct worker_view *w = &m->workers[i];
		model_worker_name(w, name, sizeof(name));
		/* at most 24 bytes, cut at a character boundary (%.24s could split one) */
		esc_copy(name, 25, &esc_term, name, SIZE_MAX, NULL);
		fprintf(out, "%7d %7d %-24s %-8s", (int)w->pid, (int)w->tid, name, w->backend);
		print_cells(out, w);
		fputc('\n', out);
	}
	/* a figure nobody measured is left out, not printed as "-" */
	const struct fleet_view *f = &m->fleet;
	char how[64];
	model_sampling_text(m, how, sizeof(how));
	fprintf(out, "%u worker%s", f->workers, f->workers == 1 ? "" : "s");
	if (!isnan(f->mean_idle_pct))
		fprintf(out, ", mean idle %s%%", num(a, sizeof(a), f->mean_idle_pct, 1));
	if (!isnan(f->ops_per_s))
		fprintf(out, ", %s ops/s", num(b, sizeof(b), f->ops_per_s, 0));
	if (!isnan(f->headroom_ops_per_s))
		fprintf(out, ", headroom %s ops/s", num(c, sizeof(c), f->headroom_ops_per_s, 0));
	fprintf(out, " (%.1f s at %s)\n", model_span_s(m), how);
	char left[160];
	if (*model_left_out_text(m, left, sizeof(left)))
		fprintf(out, "%s\n", left);
	list_print_lag_why(out, m);
	list_print_source(out, m);
}

void list_print_lag_why(FILE *out, const struct model *m)
{
	char why[sizeof(m->workers[0].lag_why) * 4];
	const struct worker_view *one = NULL;
	size_t n = 0;
	for (size_t i = 0; i < m->n; i++)
		if (m->workers[i].lag_why[0] && !n++)
			one = &m->workers[i];
	if (n == 1) {
		esc_copy(why, sizeof(why), &esc_term, one->lag_why, SIZE_MAX, NULL);
		fprintf(out, "lag of %d/%d unresolved, %s\n", (int)one->pid, (int)one->tid, why);
	} else if (n > 1) {   /* one line, not one a worker: --json says why for each */
		fprintf(out, "lag of %zu workers unresolved by the samples (lag_why in --json; --source bpf resolves it)\n",
			n);
	}
}

void list_print_source(FILE *out, const struct model *m)
{
	char why[sizeof(m->source_why) * 4];
	if (strcmp(m->source, "bpf") == 0)
		fprintf(out, "source: bpf (kernel tracepoints: idle, cpu wait, spans and poll events exact)\n");
	else if (m->source_why[0]) {
		esc_copy(why, sizeof(why), &esc_term, m->source_why, SIZE_MAX, NULL);
		fprintf(out, "source: proc (%s)\n", why);
	}
}
