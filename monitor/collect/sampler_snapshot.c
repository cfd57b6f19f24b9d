/*
 * sampler_snapshot.c — the copy views take: the workers shown (by kind
 * and role), made under the lock so that the model is computed from it
 * outside the lock.
 */
#include "collect/sampler.h"
#include "collect/sampler_int.h"
#include "collect/sampler_limits.h"
#include "collect/sampler_pools.h"
#include "collect/sampler_roles.h"
#include "collect/sampler_sched.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int shown(const struct sampler *s, const struct sworker *w)
{
	if (w->sched)
		return w->series.samples > 0;
	return w->instrumented || (sampler_is_loop(w) && !w->member) || s->all_threads;
}

/* Shown, and of a role shown: a loop left out is counted by its role. */
static int shown_counted(const struct sampler *s, const struct sworker *w, struct snapshot *snap)
{
	if (!shown(s, w))
		return 0;
	if (s->all_threads || sampler_role_shown(s, w))
		return 1;
	if (!w->gone_ns)
		snap->left_out[w->role]++;
	return 0;
}

static void copy_worker(const struct sampler *s, struct snap_worker *d, const struct sworker *w, int64_t now_sec,
			double window_s, int with_history)
{
	d->pid = w->pid;
	d->tid = w->tid;
	memcpy(d->name, w->name, sizeof(d->name));
	d->role = w->role;
	d->nhelpers = 0;
	const char *cg;
	d->nspenders = sampler_cgroup_spenders(s, w->cg, d->spenders, SNAP_SPENDERS, &cg);
	snprintf(d->cgroup, sizeof(d->cgroup), "%s", cg ? cg : "");
	memcpy(d->service, w->service, sizeof(d->service));
	memcpy(d->tag, w->tag, sizeof(d->tag));
	d->instrumented = w->instrumented;
	d->backend = w->backend;
	d->gone = w->gone_ns != 0;
	d->no_access = w->no_access;
	d->basis = w->basis;
	d->loop_fd = w->loop_fd;
	memcpy(d->access_text, w->access_text, sizeof(d->access_text));
	d->ntargets = w->ntargets;
	memcpy(d->targets, w->targets, (size_t)w->ntargets * sizeof(d->targets[0]));
	sampler_sched_copy(d, w);
	series_copy_window(&d->series, &w->series, now_sec, window_s, with_history);
}

/* Each helper loop left out is named by its process's main worker: the
 * one on the process's main thread if it is shown, else its first shown. */
static void fold_helpers(const struct sampler *s, struct snapshot *snap)
{
	if (!snap->left_out[SNAP_ROLE_HELPER])
		return;
	for (size_t i = 0; i < s->n; i++) {
		const struct sworker *h = s->w[i];
		if (h->role != SNAP_ROLE_HELPER || h->gone_ns || sampler_role_shown(s, h) || s->all_threads)
			continue;
		struct snap_worker *main = NULL;
		for (size_t k = 0; k < snap->n; k++)
			if (snap->w[k].pid == h->pid && (!main || snap->w[k].tid == h->pid))
				main = &snap->w[k];
		if (main && main->nhelpers < SNAP_HELPERS)
			main->helpers[main->nhelpers++] = h->tid;
	}
}

/* A process counts once, however many of its threads were refused. */
static void add_refusal(struct snapshot *snap, const struct sworker *w)
{
	unsigned named = snap->nrefused < SNAP_REFUSED ? snap->nrefused : SNAP_REFUSED;
	for (unsigned i = 0; i < named; i++)
		if (snap->refused[i].pid == w->pid)
			return;
	if (snap->nrefused < SNAP_REFUSED) {
		snap->refused[snap->nrefused].pid = w->pid;
		memcpy(snap->refused[snap->nrefused].text, w->access_text, sizeof(w->access_text));
	}
	snap->nrefused++;
}

/* Workers' room a snapshot keeps beyond the fleet's size. */
#define SNAP_SPARE 16

int sampler_snapshot(struct sampler *s, double window_s, int with_history, struct snapshot *snap)
{
	pthread_mutex_lock(&s->lock);
	/* a snapshot is ~90 KB a worker: one that held a flood's is cut down
	 * when the flood went, not kept at its size for good */
	int shrink = snap->cap > 2 * s->n + SNAP_SPARE;
	if (snap->cap < s->n || shrink) {
		/* grown without the lock would mean a second pass: allocate inside,
		 * it happens only when the fleet grows */
		size_t cap = shrink ? s->n + SNAP_SPARE : s->n;
		struct snap_worker *w = realloc(snap->w, cap * sizeof(*w));
		if (!w) {
			pthread_mutex_unlock(&s->lock);
			return -ENOMEM;
		}
		snap->w = w;
		snap->cap = cap;
	}
	int trim = shrink || s->trim_due > 0;
	s->trim_due -= s->trim_due > 0;
	snap->n = 0;
	snap->nrefused = 0;
	snap->now_ns = sampler_elapsed_ns(s);
	snap->naccessible = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (s->w[i]->no_access)
			add_refusal(snap, s->w[i]);
		else if (!s->w[i]->gone_ns && s->w[i]->series.samples)
			snap->naccessible++;
	}
	memset(snap->left_out, 0, sizeof(snap->left_out));
	snap->servers_only = s->servers_only && !s->all_threads;
	for (size_t i = 0; i < s->n; i++)
		if (shown_counted(s, s->w[i], snap))
			copy_worker(s, &snap->w[snap->n++], s->w[i], (int64_t)(snap->now_ns / NS), window_s, with_history);
	fold_helpers(s, snap);
	snap->rate_hz = s->rate_hz;
	snprintf(snap->source, sizeof(snap->source), "%s", s->source);
	snprintf(snap->source_why, sizeof(snap->source_why), "%s", s->source_why);
	snap->precision_pts = s->precision_pts;
	snap->total_samples = s->total_samples;
	snap->tick_lag_max_ns = s->tick_lag_max_ns;
	snap->ignored = s->ignored_threads + s->ignored_slots + s->swept.ignored_limit;
	snap->swept = s->sweep != NULL;
	snap->sweep = s->swept;
	snap->max_workers = s->max_workers;
	sampler_snapshot_pools(s, snap, window_s);
	pthread_mutex_unlock(&s->lock);
	if (trim)
		malloc_trim(0);   /* what the flood's workers and snapshots held, back to the system */
	return 0;
}
