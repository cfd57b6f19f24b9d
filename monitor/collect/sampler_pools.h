/*
 * sampler_pools.h — the workers' processes' helper pools
 * (sampler_pools.c). Private to the sampler.
 */
#ifndef LOOPSTAT_SAMPLER_POOLS_H
#define LOOPSTAT_SAMPLER_POOLS_H

#include <stdint.h>

#include "collect/sampler_int.h"

/* sampler_pools.c, on the sampling thread with s->lock held: each tick the
 * pool threads that are due (a lower rate than loops); once a second the
 * threads listed again and the busiest pool into each loop's series; the
 * pools over a window into a snapshot */
void sampler_sample_pools(struct sampler *s, uint64_t now);
void sampler_read_pools(struct sampler *s, uint64_t now);
void sampler_snapshot_pools(struct sampler *s, struct snapshot *snap, double window_s);
void sampler_free_pools(struct sampler *s);

#endif /* LOOPSTAT_SAMPLER_POOLS_H */
