/*
 * sampler_bpf.h — the bpf source inside the sampler (sampler_bpf.c): exact
 * readings of the kernel's per-thread counts into the workers' series.
 * The sampler's own; its callers choose with sampler_opts.source.
 */
#ifndef LOOPSTAT_SAMPLER_BPF_H
#define LOOPSTAT_SAMPLER_BPF_H

#include <stdint.h>

#include "collect/sampler.h"

struct sworker;

/* Loads the programs unless want is PROC; s->source and s->source_why say
 * what is in use and why auto fell back. 0, or -errno when want is BPF and
 * they cannot load (s->source_why says why). */
int  sampler_bpf_open(struct sampler *s, enum sampler_source want);
void sampler_bpf_close(struct sampler *s);
/* Once a second, lock held: watches new workers' processes and adds every
 * covered worker's exact reading at now (the series' clock). */
void sampler_bpf_read(struct sampler *s, uint64_t now);
/* At a tick, lock held: the kernel's stamp of w's wait in its loop's poll
 * (probe_bpf_in_poll), for the poll shortcut as an instrumented worker's
 * poll_since_ns is; 0 when w is not counted by the kernel or is out of it. */
uint64_t sampler_bpf_hot(const struct sampler *s, const struct sworker *w);

#endif /* LOOPSTAT_SAMPLER_BPF_H */
