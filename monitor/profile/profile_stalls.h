/*
 * profile_stalls.h — stalls captured (rec_event.stall_ms), deduplicated
 * by stack for report (model/stall_group.h, as top groups them): a hundred stalls of one stack are one line with
 * count 100, the first and last time, the worst duration and the CPU wait
 * during them (a stall spent waiting for a CPU — steal, a noisy
 * neighbour — told apart from one running the loop's own code).
 *
 * A stall is captured as it passes --stall-ms; profile's accumulator ends
 * it at its thread's next sample in the poll (profile_stalls_end), which
 * gives its whole length to a sampling period, and the thread's schedstat
 * wait between the reading before it and the one at that sample. The
 * readings come every 250 ms: the CPU wait is a share of the time between
 * them, the stall and what was around it, not of the stall alone.
 */
#ifndef LOOPSTAT_PROFILE_STALLS_H
#define LOOPSTAT_PROFILE_STALLS_H

#include <stdint.h>
#include <stdio.h>

#include "collect/recording.h"
#include "model/stall_group.h"

struct profile_stalls;

struct profile_stalls *profile_stalls_new(void);
void profile_stalls_delete(struct profile_stalls *s);

/* A stall captured: its stack's group, made at the first; returns the
 * group's index, -1 past STALL_GROUP_MAX (counted), or -ENOMEM. */
int  profile_stalls_add(struct profile_stalls *s, const struct rec_event *ev);

/* The stall of group g (profile_stalls_add's) ended dur_ns after it
 * began; wait_ns of CPU wait in the around_ns between the schedstat
 * readings around it (wait_ns < 0: not measured). */
void profile_stalls_end(struct profile_stalls *s, int g, uint64_t dur_ns, int64_t wait_ns, uint64_t around_ns);

/* Stalls captured in all. */
uint64_t profile_stalls_count(const struct profile_stalls *s);

/* The report's lines: one per stack, the most frequent first. 0 or -EIO. */
int  profile_stalls_write(const struct profile_stalls *s, FILE *f);

#endif /* LOOPSTAT_PROFILE_STALLS_H */
