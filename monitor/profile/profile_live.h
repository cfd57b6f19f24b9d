/*
 * profile_live.h — the sampler hook of `loopstat profile` and `loopstat
 * record`: each sample of the chosen threads becomes a profile event with
 * its labels resolved (syscall name, fd target, the user stack unwound
 * from the sample's sp/pc, the running fiber's tag), which goes to a
 * recording, an accumulator, or both.
 *
 * Runs on the sampler's thread with its lock held: the work per sample is
 * bounded by one pid (or one thread) and a depth limit, and a parked
 * thread's stack costs one small read once it is cached (probe_unwind.h).
 *
 * Which samples go where (also docs/profile.md):
 *   poll (the loop's own wait)  idle, target "[idle] epoll_wait fd 7"; not unwound
 *   running                     on cpu / waiting for cpu (profile_acc); on cpu with
 *                               the stack of the thread's newest perf_event cpu-clock
 *                               sample (one per 1/rate of its CPU time, taken since
 *                               the last one used) where perf events are allowed
 *   in another syscall          blocked: syscall → "fd N <target>" → stack
 *   -1 (not in a syscall, not   blocked, syscall "[not in a syscall]" → stack:
 *     runnable: page fault,       it is wall time the thread could not run
 *     stopped)
 *   no access                   not time anywhere; counted (exit 5 if all)
 * A stack whose thread left the syscall while it was read is not dropped:
 * the sample is still wall time in that syscall, so it keeps its syscall
 * and fd and gets the one frame "[stack changed]" (counted as moved).
 */
#ifndef LOOPSTAT_PROFILE_LIVE_H
#define LOOPSTAT_PROFILE_LIVE_H

#include <stdint.h>
#include <sys/types.h>

#include "profile/profile_acc.h"
#include "profile/flight_ring.h"
#include "collect/sampler.h"

#define PROFILE_LIVE_DEPTH 64   /* frames unwound per sample */

struct profile_live_opts {
	pid_t pid;                         /* 0: every target */
	pid_t tid;                         /* 0: every thread of pid */
	struct profile_acc *acc;           /* borrowed, may be NULL */
	struct rec_writer *rec;    /* borrowed, may be NULL */
	struct flight_ring *ring;          /* borrowed, may be NULL: the flight recorder's (flight_ring.h) */
	int   depth;                       /* 0: PROFILE_LIVE_DEPTH */
	double rate_hz;                    /* the sampling rate: perf samples each 1/rate of CPU time; 0: 1000 */
};

struct profile_live_stats {
	uint64_t samples;                  /* events made (samples taken) */
	uint64_t counted;                  /* and counted: each its sampler weight times */
	int      threads;                  /* threads sampled */
	uint64_t unwound;                  /* stacks unwound */
	uint64_t moved;                    /* stacks that changed while read ("[stack changed]") */
	uint64_t unwind_failed;            /* unwinds that returned an error ("[unknown]") */
	uint64_t no_access;                /* samples /proc refused */
	uint64_t cpu_stacks;               /* on-CPU samples given a perf sample's stack */
	uint64_t cpu_bare;                 /* on-CPU samples without one (none fresh, or perf refused) */
	char     perf_why[160];            /* why perf_event_open was refused, "" when it was not */
	int      err;                      /* first -errno of the accumulator or the recording */
};

struct profile_live;

struct profile_live *profile_live_new(const struct profile_live_opts *o);
void profile_live_delete(struct profile_live *l);

/* The sampler hook (sampler_opts.on_sample, arg = the profile_live). */
void profile_live_on_sample(void *arg, const struct sampler_event *ev);

/* The stall hook (sampler_opts.on_stall, same arg): a stall captured of
 * the chosen threads goes to the recording and the accumulator as a
 * stall event (rec_event.stall_ms). */
void profile_live_on_stall(void *arg, const struct sampler_stall_event *ev);

/* Read after the sampler stopped (or under its lock). */
void profile_live_stats(const struct profile_live *l, struct profile_live_stats *out);

#endif /* LOOPSTAT_PROFILE_LIVE_H */
