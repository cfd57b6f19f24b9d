/*
 * sampler_cost.h — the sampler's own CPU cost and its real-time
 * policy (sampler_cost.c). Private to the sampler.
 */
#ifndef LOOPSTAT_SAMPLER_COST_H
#define LOOPSTAT_SAMPLER_COST_H

#include <stdint.h>

#include "collect/sampler_int.h"

/* sampler_cost.c: the real-time policy, judged on the sampler's own cost */
struct sampler_cost {
	int      rt_allowed;             /* real-time was granted once */
	int      rt;                     /* the thread runs real-time now */
	uint64_t wall0, cpu0;            /* start of the current second */
};
void sampler_cost_start(struct sampler *s, struct sampler_cost *c);
/* Called after every tick; about once a second it re-judges the policy. */
void sampler_cost_tick(struct sampler *s, struct sampler_cost *c);
/* The sampling thread alone (not its io-wq readers) at SCHED_OTHER for a
 * while, then back to real-time: around work whose size others choose. */
void sampler_cost_demote(struct sampler *s);
void sampler_cost_restore(struct sampler *s);

#endif /* LOOPSTAT_SAMPLER_COST_H */
