/*
 * sampler.c — the sampler's life: options into a sampler, its thread and
 * the tick schedule, and the controls views use. The tick itself is
 * sampler_tick.c's, the snapshot sampler_snapshot.c's.
 *
 * One thread owns all /proc and shm reads; the gap to the next tick is
 * drawn uniformly from [0.5, 1.5] x 1/rate so that sampling does not alias
 * with periodic workloads. Views never read the tables: they take a
 * snapshot (a copy made under the lock) and the model is computed from it
 * outside the lock.
 */
#include "collect/sampler.h"
#include "collect/sampler_int.h"
#include "collect/sampler_bpf.h"
#include "collect/sampler_cost.h"
#include "collect/sampler_limits.h"
#include "collect/sampler_pools.h"
#include "collect/sampler_sched.h"
#include "collect/sampler_stall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* a sampler hole is never shorter than at the default rate (series.h) */
_Static_assert(SERIES_HOLE_MIN_NS == SERIES_HOLE * (NS / (long)SAMPLER_DEFAULT_HZ), "one default rate");

static __thread char source_why[200];

int sampler_new(const struct sampler_opts *o, struct sampler **out)
{
	source_why[0] = '\0';
	struct sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	s->rate_hz = o->rate_hz > 0 ? o->rate_hz : SAMPLER_DEFAULT_HZ;
	/* a hook keeps its own record of every sample, unweighted */
	s->precision_pts = o->on_sample || o->precision_pts < 0 ? 0 : o->precision_pts > 0 ? o->precision_pts : PREC_DEFAULT_PTS;
	s->prec = prec_conf(s->rate_hz, s->precision_pts);
	s->targets = o->targets;
	s->all_threads = o->all_threads;
	/* named processes are shown whatever their loops are for */
	s->servers_only = o->targets && !o->targets->npids && !o->targets->has_re && !o->targets->all_roles;
	s->no_realtime = o->no_realtime;
	s->no_shortcuts = o->no_shortcuts;
	s->always_check_schedstat = o->always_check_schedstat;
	s->on_sample = o->on_sample;
	s->on_stall = o->on_stall;
	s->max_workers = o->max_workers ? o->max_workers : SAMPLER_MAX_WORKERS;
	s->on_sample_arg = o->on_sample_arg;
	idmap_init(&s->by_tid);
	idmap_init(&s->live_by_pid);
	idmap_init(&s->by_listener);
	idmap_init(&s->by_pid);
	idmap_init(&s->rt_by_pid);
	/* t0 one second back: bucket 0 never starts at a partial instant */
	s->t0 = mono_ns() - NS;
	s->rng = (unsigned)s->t0 ^ (unsigned)getpid();
	s->stall_ns = o->stall_ms < 0 ? 0 : (uint64_t)((o->stall_ms > 0 ? o->stall_ms : SAMPLER_STALL_MS) * 1e6);
	s->fds = probe_fd_cache_new(1024);
	if ((s->targets && targets_host(s->targets) && probe_sweep_new(&s->sweep) < 0) || !s->fds ||
	    sample_batch_new(&s->batch) < 0 || sampler_stall_init(s) < 0) {
		sample_batch_delete(s->batch);
		probe_sweep_delete(s->sweep);
		probe_fd_cache_delete(s->fds);
		free(s);
		return -ENOMEM;
	}
	int err = sampler_bpf_open(s, o->source);
	if (err < 0) {
		snprintf(source_why, sizeof(source_why), "%s", s->source_why);
		sampler_delete(s);
		return err;
	}
	/* the clock starts once the sources are ready: loading the bpf
	 * programs takes tenths of a second that nothing measured */
	s->t0 = mono_ns() - NS;
	*out = s;
	return 0;
}

const char *sampler_source_why(void)
{
	return source_why;
}

/* The next tick's time: a jittered gap after the last one's, so that
 * samples never lock step with a periodic load. */
static void schedule_next(struct sampler *s, int paused, double hz)
{
	double jitter = 0.5 + (double)rand_r(&s->rng) / ((double)RAND_MAX + 1.0);
	uint64_t gap = paused ? NS / 20 : (uint64_t)(jitter * 1e9 / hz);
	uint64_t now = mono_ns();
	s->due_ns += gap;
	s->tick_weight = 1;
	if (s->due_ns < now) { /* fell behind: skip, don't burst */
		/* the next tick stands for the ticks skipped too (dithered to an
		 * integer, unbiased): a tick slowed by what it found (stacks to
		 * unwind) would otherwise leave that state under-sampled */
		double lost = (double)(now - s->due_ns) * hz / 1e9;
		double u = (double)rand_r(&s->rng) / ((double)RAND_MAX + 1.0);
		if (!paused && lost < 1e6)
			s->tick_weight += (uint32_t)(lost + u);
		s->due_ns = now + gap;
	}
}

void sampler_tick_if_due(void *arg)
{
	struct sampler *s = arg;
	if (!s->due_ns || mono_ns() < s->due_ns)
		return;
	pthread_mutex_lock(&s->lock);
	int paused = s->paused;
	double hz = s->rate_hz;
	uint64_t c0 = thread_cpu_ns();
	if (!paused)
		sampler_sample_tick(s, sampler_elapsed_ns(s));
	pthread_mutex_unlock(&s->lock);
	schedule_next(s, paused, hz);
	s->tick_cpu_ns += thread_cpu_ns() - c0;   /* the sweep's gap leaves it out */
}

/* ---- the thread ------------------------------------------------------------- */

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	struct sampler_cost cost;
	pthread_mutex_lock(&s->lock);
	s->self_tid = gettid();
	pthread_mutex_unlock(&s->lock);
	sampler_cost_start(s, &cost);
	s->due_ns = mono_ns();
	for (;;) {
		pthread_mutex_lock(&s->lock);
		int stop = s->stop, paused = s->paused;
		double hz = s->rate_hz;
		uint64_t lag = mono_ns() - s->due_ns;
		if (!paused && lag > s->tick_lag_max_ns)
			s->tick_lag_max_ns = lag;
		pthread_mutex_unlock(&s->lock);
		if (stop)
			break;
		if (!paused)
			sampler_step(s);
		sampler_cost_tick(s, &cost);
		schedule_next(s, paused, hz);
		struct timespec next = { (time_t)(s->due_ns / NS), (long)(s->due_ns % NS) };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	s->due_ns = 0;
	return NULL;
}

int sampler_start(struct sampler *s)
{
	int err = pthread_create(&s->thread, NULL, sampler_main, s);
	if (err)
		return -err;
	s->started = 1;
	return 0;
}

void sampler_stop(struct sampler *s)
{
	if (!s->started)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = 1;
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	s->started = 0;
}

void sampler_delete(struct sampler *s)
{
	if (!s)
		return;
	sampler_stop(s);
	sampler_free_workers(s);
	sampler_free_limits(s);
	sampler_stall_free(s);
	sampler_free_pools(s);
	sampler_free_rts(s);
	sampler_bpf_close(s);
	probe_fd_cache_delete(s->fds);
	sample_batch_delete(s->batch);
	probe_sweep_delete(s->sweep);
	free(s->w);
	free(s->seg);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void sampler_set_rate(struct sampler *s, double hz)
{
	if (!(hz >= 1 && hz <= 10000))
		return;
	pthread_mutex_lock(&s->lock);
	s->rate_hz = hz;
	s->prec = prec_conf(hz, s->precision_pts);
	pthread_mutex_unlock(&s->lock);
}

void sampler_read_costs(struct sampler *s, uint64_t *check_ns, uint64_t *read_ns)
{
	pthread_mutex_lock(&s->lock);
	*check_ns = s->check_ns;
	*read_ns = s->read_ns;
	pthread_mutex_unlock(&s->lock);
}

int sampler_realtime(struct sampler *s)
{
	return __atomic_load_n(&s->realtime, __ATOMIC_RELAXED);
}

double sampler_rate(struct sampler *s)
{
	pthread_mutex_lock(&s->lock);
	double hz = s->rate_hz;
	pthread_mutex_unlock(&s->lock);
	return hz;
}

void sampler_set_paused(struct sampler *s, int paused)
{
	pthread_mutex_lock(&s->lock);
	s->paused = paused;
	pthread_mutex_unlock(&s->lock);
}

void sampler_set_all_threads(struct sampler *s, int on)
{
	pthread_mutex_lock(&s->lock);
	s->all_threads = on;
	pthread_mutex_unlock(&s->lock);
}
