/*
 * sampler_cost.c — the sampler's real-time policy.
 *
 * A sampler that must queue for a CPU wakes late exactly when the CPUs are
 * busy, i.e. more often while its targets are running than while they
 * wait: its samples would over-count idle on a saturated machine. So it
 * asks for a real-time priority (granted to root or CAP_SYS_NICE), but only
 * while its own cost stays small: a real-time thread that took a large
 * share of a CPU would starve the very workers it measures. The share and
 * the policy include the io-wq threads that do a large fleet's reads (see
 * sample_batch.c).
 */
#include "collect/sampler_cost.h"
#include "collect/sampler_int.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#define RT_MAX_SHARE  0.20  /* drop real-time above this share of a CPU */
#define RT_BACK_SHARE 0.10  /* and take it back below this one */

void sampler_cost_start(struct sampler *s, struct sampler_cost *c)
{
	c->rt_allowed = !s->no_realtime && sample_batch_set_realtime(s->batch, 1);
	c->rt = c->rt_allowed;
	c->wall0 = mono_ns();
	c->cpu0 = sample_batch_cpu_ns(s->batch);
	__atomic_store_n(&s->realtime, c->rt, __ATOMIC_RELAXED);
}

void sampler_cost_demote(struct sampler *s)
{
	(void)s;
	struct sched_param sp = { .sched_priority = 0 };
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
}

void sampler_cost_restore(struct sampler *s)
{
	(void)s;
	struct sched_param sp = { .sched_priority = 1 };
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}

/* The share is measured over whole seconds: per-tick costs swing (a
 * discovery sweep costs 100 samples), a second's do not. */
void sampler_cost_tick(struct sampler *s, struct sampler_cost *c)
{
	uint64_t wall = mono_ns();
	if (wall - c->wall0 < NS)
		return;
	uint64_t cpu = sample_batch_cpu_ns(s->batch);
	double share = (double)(cpu - c->cpu0) / (double)(wall - c->wall0);
	if (c->rt && share > RT_MAX_SHARE)
		c->rt = !sample_batch_set_realtime(s->batch, 0);
	else if (!c->rt && c->rt_allowed && share < RT_BACK_SHARE)
		c->rt = sample_batch_set_realtime(s->batch, 1);
	__atomic_store_n(&s->realtime, c->rt, __ATOMIC_RELAXED);
	c->wall0 = wall;
	c->cpu0 = cpu;
}
