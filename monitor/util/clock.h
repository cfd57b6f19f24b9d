/*
 * clock.h — the monitor's one clock, CLOCK_MONOTONIC in nanoseconds (and
 * the same in milliseconds and seconds, for deadlines and ages), and the
 * calling thread's CPU time, what the sampler's costs are measured in.
 */
#ifndef LOOPSTAT_CLOCK_H
#define LOOPSTAT_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline long long mono_ms(void) { return (long long)(mono_ns() / 1000000ull); }

static inline double mono_s(void) { return (double)mono_ns() / 1e9; }

static inline uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* LOOPSTAT_CLOCK_H */
