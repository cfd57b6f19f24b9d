/*
 * sampler_stall.h — stall capture (sampler_stall.c). Private to
 * the sampler.
 */
#ifndef LOOPSTAT_SAMPLER_STALL_H
#define LOOPSTAT_SAMPLER_STALL_H

#include <stdint.h>

#include "collect/sampler_int.h"

/* sampler_stall.c, on the sampling thread with s->lock held: each tick,
 * the workers out of their poll past the threshold are captured */
int  sampler_stall_init(struct sampler *s);
void sampler_stall_free(struct sampler *s);
void sampler_check_stalls(struct sampler *s, uint64_t now);
/* A stall the bpf source's kernel side saw, into w's series. */
struct probe_bpf_stall;
void sampler_stall_bpf(struct sampler *s, struct sworker *w, const struct probe_bpf_stall *e);

#endif /* LOOPSTAT_SAMPLER_STALL_H */
