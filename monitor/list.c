/*
 * list.c — the `list` view: one row per instrumented worker.
 */
#include "list.h"
#include "json.h"

#define LIST_JSON_VERSION 1

void list_print_json(FILE *out, const struct snapshot *s)
{
	struct json j;
	json_init(&j, out);
	json_object_begin(&j);
	json_key(&j, "version");
	json_u64(&j, LIST_JSON_VERSION);
	json_key(&j, "workers");
	json_array_begin(&j);
	for (size_t i = 0; i < s->n; i++) {
		const struct snap_worker *w = &s->workers[i];
		json_object_begin(&j);
		json_key(&j, "pid");
		json_i64(&j, w->shm.pid);
		json_key(&j, "tid");
		json_i64(&j, w->shm.tid);
		json_key(&j, "name");
		json_string(&j, w->name);
		json_key(&j, "tag");
		json_string(&j, w->shm.tag);
		json_key(&j, "backend");
		json_string(&j, probe_shm_backend_name(w->shm.backend));
		json_key(&j, "instrumented");
		json_bool(&j, 1);
		json_key(&j, "wait_fd");
		json_i64(&j, w->shm.wait_fd);
		json_key(&j, "fiber_tag");
		json_string(&j, w->shm.fiber_tag);
		json_key(&j, "totals");
		json_object_begin(&j);
		for (int v = 0; v < PROBE_SHM_NVALUES; v++) {
			json_key(&j, probe_shm_values[v].name);
			json_u64(&j, w->shm.values[v]);
		}
		json_object_end(&j);
		json_object_end(&j);
	}
	json_array_end(&j);
	json_object_end(&j);
	fputc('\n', out);
}

void list_print_text(FILE *out, const struct snapshot *s)
{
	fprintf(out, "%7s %7s %-15s %-12s %-8s %5s %5s %6s %12s %12s %10s %9s\n", "PID", "TID", "NAME", "TAG",
		"BACKEND", "RUNQ", "PEND", "FIBERS", "SWITCHES", "OPS", "POLLS", "POLL_S");
	for (size_t i = 0; i < s->n; i++) {
		const struct snap_worker *w = &s->workers[i];
		const uint64_t *v = w->shm.values;
		fprintf(out, "%7d %7d %-15.15s %-12.12s %-8s %5llu %5llu %6llu %12llu %12llu %10llu %9.1f\n",
			(int)w->shm.pid, (int)w->shm.tid, w->name, w->shm.tag[0] ? w->shm.tag : "-",
			probe_shm_backend_name(w->shm.backend), (unsigned long long)v[PROBE_SHM_runqueue_len],
			(unsigned long long)v[PROBE_SHM_pending_ops], (unsigned long long)v[PROBE_SHM_fibers_live],
			(unsigned long long)v[PROBE_SHM_switches], (unsigned long long)v[PROBE_SHM_ops],
			(unsigned long long)v[PROBE_SHM_polls], v[PROBE_SHM_poll_time_ns] / 1e9);
	}
	if (s->n == 0)
		fprintf(out, "(no instrumented workers in %s)\n", probe_shm_dir());
}
