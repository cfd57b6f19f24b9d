/*
 * model_build.c — from a snapshot to the model every view reads.
 */
#include "model/model_build.h"
#include "model/model_window.h"
#include "probe_loop.h"
#include "probe_shm.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ull

static int by_pid_tid(const void *a, const void *b)
{
	const struct worker_view *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void target_of(const struct snap_worker *w, int fd, char *buf, size_t len)
{
	for (int k = 0; k < w->ntargets; k++)
		if (w->targets[k].fd == fd)
			snprintf(buf, len, "%s", w->targets[k].text);
}

/* What each top blocker's and key's fd is, as the sampler thread last resolved it. */
static void copy_targets(const struct snap_worker *w, struct worker_view *v)
{
	for (int i = 0; i < v->nblocked_top; i++)
		target_of(w, v->blocked_top[i].fd, v->blocked_top[i].target, sizeof(v->blocked_top[i].target));
	for (int i = 0; i < v->nkeys; i++)
		target_of(w, v->keys[i].fd, v->keys[i].target, sizeof(v->keys[i].target));
}

/* what kind of worker: a loop, or a pooled runtime's scheduler */
static void build_runtime(const struct snap_worker *w, struct worker_view *v)
{
	v->kind = w->scheduler ? "scheduler" : "loop";
	v->runtime = probe_rt_name(w->instrumented ? PROBE_RT_FIBERLOOP : (enum probe_rt)w->runtime);
	v->threads = w->scheduler ? w->capacity : 1;
	v->threads_from = w->scheduler ? probe_rt_cap_name((enum probe_rt_cap)w->cap_from) : "-";
	memcpy(v->thread_name, w->thread_name, sizeof(v->thread_name));
	v->group[0] = '\0';
	if (w->runtime == PROBE_RT_JVM && probe_rt_jvm_loop(w->thread_name))
		memcpy(v->group, w->thread_name, sizeof(v->group));
	/* what its "poll" is: the pool's parks, said where a loop's basis is */
	if (w->scheduler)
		snprintf(v->loop_basis, sizeof(v->loop_basis), "%s scheduler, %d threads (%s)", v->runtime, v->threads,
			 v->threads_from);
	v->nmembers = w->nmembers < MODEL_MEMBERS ? w->nmembers : MODEL_MEMBERS;
	for (int i = 0; i < v->nmembers; i++) {
		const struct snap_member *m = &w->members[i];
		struct member_view *o = &v->members[i];
		o->tid = m->tid;
		memcpy(o->name, m->name, sizeof(o->name));
		o->worker = m->worker;
		o->busy_pct = m->n ? 100.0 * m->busy / m->n : NAN;
	}
}

/* the worker's identity; its figures are the caller's (a window, or a range) */
static void build_identity(const struct snap_worker *w, struct worker_view *v)
{
	v->pid = w->pid;
	v->tid = w->tid;
	snprintf(v->name, sizeof(v->name), "%s", w->name);
	v->role = snap_role_name(w->role);
	v->nhelpers = w->nhelpers;
	memcpy(v->helpers, w->helpers, sizeof(v->helpers));
	snprintf(v->cgroup, sizeof(v->cgroup), "%s", w->cgroup);
	v->nquota_spenders = w->nspenders;
	memcpy(v->quota_spenders, w->spenders, sizeof(v->quota_spenders));
	snprintf(v->service, sizeof(v->service), "%s", *w->service ? w->service : w->name);
	snprintf(v->tag, sizeof(v->tag), "%s", w->tag);
	v->instrumented = w->instrumented;
	v->exact = w->series.exact;
	v->backend = w->instrumented ? probe_shm_backend_name(w->backend) : "none";
	v->gone = w->gone;
	probe_loop_basis_text(w->basis, w->loop_fd, v->loop_basis, sizeof(v->loop_basis));
	v->no_access = w->no_access;
	memcpy(v->access_text, w->access_text, sizeof(v->access_text));
	build_runtime(w, v);
}

static void build_done(const struct snap_worker *w, struct worker_view *v)
{
	copy_targets(w, v);
	if (v->gone)
		v->stall_ms = 0; /* an exited thread is not stalled */
}

/* The snapshot's pools, and each worker's of its process. */
static int build_pools(const struct snapshot *snap, struct model *m)
{
	_Static_assert(MODEL_POOL_TIDS == SNAP_POOL_TIDS, "tids are copied whole");
	if (!snap->npools)
		return 0;
	m->pools = calloc(snap->npools, sizeof(*m->pools));
	if (!m->pools)
		return -ENOMEM;
	for (size_t i = 0; i < snap->npools; i++) {
		const struct snap_pool *sp = &snap->pools[i];
		struct pool_view *p = &m->pools[m->npools++];
		p->pid = sp->pid;
		p->key = sp->key;
		p->kind = sp->kind == SNAP_POOL_HELPERS ? "busy_helpers" : "condvar";
		p->nthreads = sp->nthreads;
		memcpy(p->tids, sp->tids, sizeof(p->tids));
		p->busy_pct = sp->n ? 100.0 * (double)sp->busy / (double)sp->n : NAN;
	}
	for (size_t i = 0; i < m->n; i++) {
		struct worker_view *v = &m->workers[i];
		for (size_t k = 0; k < m->npools; k++) {
			if (m->pools[k].pid != v->pid)
				continue;
			if (!v->npools)
				v->pools = &m->pools[k];   /* a process's pools are side by side */
			v->npools++;
		}
	}
	return 0;
}

/* lo > hi: the window of window_s ending now; else seconds [lo, hi] */
static int build(const struct snapshot *snap, double window_s, int64_t lo, int64_t hi, struct model *m)
{
	memset(m, 0, sizeof(*m));
	m->workers = calloc(snap->n ? snap->n : 1, sizeof(*m->workers));
	if (!m->workers)
		return -ENOMEM;
	for (size_t i = 0; i < snap->n; i++) {
		const struct snap_worker *w = &snap->w[i];
		struct worker_view *v = &m->workers[m->n++];
		build_identity(w, v);
		if (lo > hi)
			model_window(&w->series, snap->now_ns, window_s, w->instrumented, v);
		else
			model_window_range(&w->series, lo, hi, w->instrumented, v);
		build_done(w, v);
	}
	m->rate_hz = snap->rate_hz;
	snprintf(m->source, sizeof(m->source), "%s", snap->source[0] ? snap->source : "proc");
	snprintf(m->source_why, sizeof(m->source_why), "%s", snap->source_why);
	m->precision_pts = snap->precision_pts;
	m->window_s = window_s;
	m->elapsed_s = (double)(snap->now_ns - NS) / 1e9;
	m->total_samples = snap->total_samples;
	m->tick_lag_max_ms = (double)snap->tick_lag_max_ns / 1e6;
	_Static_assert(MODEL_REFUSED == SNAP_REFUSED, "refusals are copied whole");
	m->nrefused = snap->nrefused;
	m->naccessible = snap->naccessible;
	m->ignored = snap->ignored;
	m->servers_only = snap->servers_only;
	for (int r = 0; r < MODEL_NROLES; r++)
		m->left_out[r] = snap->left_out[r];
	m->swept = snap->swept;
	m->sweep = snap->sweep;
	m->max_workers = snap->max_workers;
	for (unsigned i = 0; i < snap->nrefused && i < MODEL_REFUSED; i++) {
		m->refused[i].pid = snap->refused[i].pid;
		memcpy(m->refused[i].text, snap->refused[i].text, sizeof(m->refused[i].text));
	}
	qsort(m->workers, m->n, sizeof(*m->workers), by_pid_tid);
	model_fleet(m);
	if (build_pools(snap, m) < 0) {
		model_done(m);
		return -ENOMEM;
	}
	return 0;
}

int model_build(const struct snapshot *snap, double window_s, struct model *m)
{
	return build(snap, window_s, 1, 0, m);
}

int model_build_range(const struct snapshot *snap, int64_t lo, int64_t hi, struct model *m)
{
	if (hi < lo)
		return -EINVAL;
	int err = build(snap, (double)(hi - lo + 1), lo, hi, m);
	return err;
}

_Static_assert(MODEL_NROLES == SNAP_NROLES, "the model counts the snapshot's roles");

const char *model_role_name(int r)
{
	return snap_role_name((enum snap_role)r);
}

unsigned model_left_out(const struct model *m)
{
	unsigned n = 0;
	for (int r = 0; r < MODEL_NROLES; r++)
		n += m->left_out[r];
	return n;
}

const char *model_ignored_reason(int r)
{
	static const char *const names[MODEL_NIGNORED] = { "cap", "role", "access" };
	return r >= 0 && r < MODEL_NIGNORED ? names[r] : "";
}

unsigned model_ignored(const struct model *m, int r)
{
	switch (r) {
	case MODEL_IGNORED_CAP:    return m->ignored;
	case MODEL_IGNORED_ROLE:   return model_left_out(m);
	case MODEL_IGNORED_ACCESS: return m->sweep.ignored_access;
	default:                   return 0;
	}
}

char *model_left_out_text(const struct model *m, char *buf, size_t len)
{
	unsigned n = model_left_out(m);
	size_t at = 0;
	if (len)
		buf[0] = '\0';
	if (!n || !len)
		return buf;
	at += (size_t)snprintf(buf, len, "%u loop%s left out:", n, n == 1 ? "" : "s");
	const char *sep = " ";
	for (int r = 0; r < MODEL_NROLES && at < len; r++)
		if (m->left_out[r]) {
			at += (size_t)snprintf(buf + at, len - at, "%s%u %s", sep, m->left_out[r], model_role_name(r));
			sep = ", ";
		}
	if (at < len)
		snprintf(buf + at, len - at, " (--all shows them)");
	return buf;
}
_Static_assert(MODEL_ROLE_SERVER == SNAP_ROLE_SERVER && MODEL_HELPERS == SNAP_HELPERS &&
	       MODEL_SPENDERS == SNAP_SPENDERS && MODEL_CGROUP_LEN == SNAP_CGROUP_LEN, "the same numbers");
