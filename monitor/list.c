/*
 * list.c — the `list` view: one row (or JSON object) per worker.
 */
#include "list.h"
#include "json.h"
#include "probe_shm.h"

#include <math.h>

#define LIST_JSON_VERSION 1

static void json_pct(struct json *j, const char *key, double v)
{
	json_key(j, key);
	json_double(j, v, 2);
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
		json_pct(j, "pct", b->pct);
		json_object_end(j);
	}
	json_array_end(j);
}

static void json_counters(struct json *j, const struct worker_view *w)
{
	json_key(j, "totals");
	json_object_begin(j);
	for (int v = 0; v < PROBE_SHM_NVALUES; v++) {
		json_key(j, probe_shm_values[v].name);
		json_u64(j, w->totals[v]);
	}
	json_object_end(j);
	json_key(j, "counters");
	json_object_begin(j);
	json_pct(j, "ops_per_s", w->ops_per_s);
	json_pct(j, "switches_per_s", w->switches_per_s);
	json_pct(j, "polls_per_s", w->polls_per_s);
	json_pct(j, "completions_per_s", w->completions_per_s);
	json_key(j, "runqueue_len");
	json_u64(j, w->runqueue_len);
	json_key(j, "runqueue_max");
	json_u64(j, w->runqueue_max);
	json_key(j, "pending_ops");
	json_u64(j, w->pending_ops);
	json_key(j, "fibers");
	json_u64(j, w->fibers);
	json_pct(j, "self_idle_pct", w->self_idle_pct);
	json_pct(j, "stall_ms", w->stall_ms);
	json_pct(j, "headroom_ops_per_s", w->headroom_ops_per_s);
	json_object_end(j);
}

static void json_worker(struct json *j, const struct worker_view *w)
{
	json_object_begin(j);
	json_key(j, "pid");
	json_i64(j, w->pid);
	json_key(j, "tid");
	json_i64(j, w->tid);
	json_key(j, "name");
	json_string(j, w->name);
	json_key(j, "tag");
	json_string(j, w->tag);
	json_key(j, "backend");
	json_string(j, w->backend);
	json_key(j, "instrumented");
	json_boolean(j, w->instrumented);
	json_key(j, "gone");
	json_boolean(j, w->gone);
	json_key(j, "samples");
	json_u64(j, w->samples);
	json_pct(j, "idle_pct", w->idle_pct);
	json_pct(j, "idle_ci95", w->idle_ci95);
	json_pct(j, "running_pct", w->running_pct);
	json_pct(j, "blocked_pct", w->blocked_pct);
	json_pct(j, "other_pct", w->other_pct);
	json_blockers(j, w);
	json_pct(j, "cpu_pct", w->cpu_pct);
	json_pct(j, "cpu_wait_pct", w->cpu_wait_pct);
	if (w->instrumented) {
		json_key(j, "fiber_tag");
		json_string(j, w->fiber_tag);
		json_counters(j, w);
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
	json_double(&j, m->window_s > 0 ? m->window_s : m->elapsed_s, 3);
	json_key(&j, "rate_hz");
	json_double(&j, m->rate_hz, 1);
	json_key(&j, "workers");
	json_array_begin(&j);
	for (size_t i = 0; i < m->n; i++)
		json_worker(&j, &m->workers[i]);
	json_array_end(&j);
	json_key(&j, "fleet");
	json_object_begin(&j);
	json_key(&j, "workers");
	json_u64(&j, m->fleet.workers);
	json_pct(&j, "mean_idle_pct", m->fleet.mean_idle_pct);
	json_pct(&j, "ops_per_s", m->fleet.ops_per_s);
	json_pct(&j, "headroom_ops_per_s", m->fleet.headroom_ops_per_s);
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

/* A process names itself: control bytes must not reach the terminal. */
static void printable(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

void list_print_text(FILE *out, const struct model *m)
{
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32], blk[64], name[PROBE_COMM_LEN + LOOPSTAT_TAG_LEN + 2];
	fprintf(out, "%7s %7s %-24s %-8s %6s %5s %6s %6s %-22s %9s %5s %5s %8s\n", "PID", "TID", "NAME", "BACKEND",
		"IDLE%", "±", "CPU%", "BLKD%", "TOP-BLOCKER", "OPS/s", "RUNQ", "PEND", "STALL");
	for (size_t i = 0; i < m->n; i++) {
		const struct worker_view *w = &m->workers[i];
		if (w->nblocked_top)
			snprintf(blk, sizeof(blk), "%s(%d) %.0f%%", w->blocked_top[0].syscall, w->blocked_top[0].fd,
				 w->blocked_top[0].pct);
		else
			snprintf(blk, sizeof(blk), "-");
		if (w->tag[0])
			snprintf(name, sizeof(name), "%s:%s", w->name, w->tag);
		else
			snprintf(name, sizeof(name), "%s", w->name);
		printable(name);
		fprintf(out, "%7d %7d %-24.24s %-8s %6s %5s %6s %6s %-22.22s %9s %5s %5s %8s\n", (int)w->pid,
			(int)w->tid, name, w->backend, num(a, sizeof(a), w->idle_pct, 1),
			num(b, sizeof(b), w->idle_ci95, 1), num(c, sizeof(c), w->cpu_pct, 1),
			num(d, sizeof(d), w->blocked_pct, 1), blk, num(e, sizeof(e), w->ops_per_s, 0),
			w->instrumented ? num(f, sizeof(f), (double)w->runqueue_len, 0) : "-",
			w->instrumented ? num(g, sizeof(g), (double)w->pending_ops, 0) : "-",
			w->stall_ms > 0 ? num(h, sizeof(h), w->stall_ms / 1000, 1) : "-");
	}
	fprintf(out, "%u workers, mean idle %s%%, %s ops/s, headroom %s ops/s (%.1f s at %.0f Hz)\n", m->fleet.workers,
		num(a, sizeof(a), m->fleet.mean_idle_pct, 1), num(b, sizeof(b), m->fleet.ops_per_s, 0),
		num(c, sizeof(c), m->fleet.headroom_ops_per_s, 0), m->window_s > 0 ? m->window_s : m->elapsed_s,
		m->rate_hz);
}
