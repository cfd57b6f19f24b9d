/*
 * sample_batch.h — how the sampler reads its workers' syscall files each
 * tick (libprobes' probe_sc_batch, which picks pread or io_uring by
 * measuring both on this machine), and what that costs the sampler in CPU.
 */
#ifndef LOOPSTAT_SAMPLE_BATCH_H
#define LOOPSTAT_SAMPLE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "probe_syscall.h"
#include "probe_syscall_batch.h"

/* reads per io_uring_enter; a larger fleet takes more than one */
#define SAMPLE_BATCH_SQ  1024

struct sample_batch;

int  sample_batch_new(struct sample_batch **out);
void sample_batch_delete(struct sample_batch *sb);

/* The n probe slots of this tick, to fill (NULL: skip that index), or NULL
 * without memory (then skip the tick). Valid until the next call. */
struct probe_syscall **sample_batch_slots(struct sample_batch *sb, size_t n);

/* Samples the slots filled since sample_batch_slots. */
void sample_batch_run(struct sample_batch *sb);

/* Slot i's sample: what probe_syscall_sample returns, and *out. */
int sample_batch_result(const struct sample_batch *sb, size_t i, struct probe_sc_sample *out);

/* Forces a path (benchmarks, tests) or gives the choice back (AUTO). */
void sample_batch_set_path(struct sample_batch *sb, enum probe_sc_path p);

/* 1 when the last run went through io_uring (probe_sc_batch's choice). */
int sample_batch_used_ring(const struct sample_batch *sb);

/* CPU time of the calling (sampling) thread plus the io-wq threads that
 * read for it, in ns: the sampler's real cost, which its own thread clock
 * alone understates. Call it about once a second (it scans /proc/self). */
uint64_t sample_batch_cpu_ns(struct sample_batch *sb);

/* Puts the calling thread, and the io-wq threads reading for it, at
 * SCHED_FIFO 1 (on) or SCHED_OTHER (off). Returns 1 if the calling thread
 * now has the asked policy. */
int sample_batch_set_realtime(struct sample_batch *sb, int on);

#endif /* LOOPSTAT_SAMPLE_BATCH_H */
