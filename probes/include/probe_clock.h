/*
 * probe_clock.h — the clock every libprobes reading and deadline is dated
 * by, CLOCK_MONOTONIC in nanoseconds, and the calling thread's CPU time
 * (what a probe's own cost is measured in). The monitor keeps its own in
 * util/clock.h: util depends on nothing (docs/design.md, Layers).
 */
#ifndef LOOPSTAT_PROBE_CLOCK_H
#define LOOPSTAT_PROBE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t probe_clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t probe_mono_ns(void) { return probe_clock_ns(CLOCK_MONOTONIC); }

static inline uint64_t probe_thread_cpu_ns(void) { return probe_clock_ns(CLOCK_THREAD_CPUTIME_ID); }

#endif /* LOOPSTAT_PROBE_CLOCK_H */
