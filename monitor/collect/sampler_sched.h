/*
 * sampler_sched.h — pooled runtimes as scheduler rows
 * (sampler_sched.c): a row's pool and its members. Private to the sampler.
 */
#ifndef LOOPSTAT_SAMPLER_SCHED_H
#define LOOPSTAT_SAMPLER_SCHED_H

#include <stdint.h>

#include "probe_rt.h"
#include "collect/sampler_int.h"

#define SCHED_MEMBERS 64          /* threads a scheduler row follows */

struct sched_member {
	pid_t    tid;
	char     comm[16];
	int      live;                /* listed at the last refresh and not gone */
	int      evidence;            /* tokio: worker parks (+) against blocking-pool waits (-) */
	uint32_t n, busy;             /* its samples over the run, and those out of its park */
	int      ss_seen;             /* last_run and last_wait hold a reading */
	uint64_t last_run, last_wait; /* its schedstat at the last 4 Hz pass */
};

struct sched_row {
	struct probe_rt_proc rt;
	int      capacity;            /* threads' worth, at the last tick */
	uint64_t run_ns, wait_ns;     /* its threads' CPU and CPU-wait time over its capacity, summed */
	uint64_t next_refresh;        /* the series' clock */
	int      nthreads;            /* its process's threads at the last listing, 0: never listed */
	unsigned unchanged;           /* looks since, the count standing */
	int      nm;
	struct sched_member m[SCHED_MEMBERS];
};

struct sampler_rt {               /* a process's runtime, recognised once */
	uint64_t start_time;
	struct probe_rt_proc rt;
};

/* sampler_sched.c: pooled runtimes as scheduler rows. sampler_runtime_of
 * recognises a process once (its pid and start time), without the lock;
 * the rest with s->lock held. */
const struct probe_rt_proc *sampler_runtime_of(struct sampler *s, pid_t pid, uint64_t start_time, const char *comm);
int  sampler_rt_is_scheduler(const struct probe_rt_proc *rt);
/* The live row of pid's pool, made when it has none; NULL when out of room. */
struct sworker *sampler_sched_row(struct sampler *s, pid_t pid, const char *comm, const struct probe_rt_proc *rt);
/* w->thread_name from its thread's comm. */
void sampler_name_thread(struct sworker *w);
/* After a tick's reads: each row's members counted into its series. */
void sampler_sample_scheds(struct sampler *s, uint64_t now);
/* After the 4 Hz schedstat pass: each row's threads' times into its series. */
void sampler_sched_cpu(struct sampler *s, uint64_t now);
void sampler_sched_copy(struct snap_worker *d, const struct sworker *w);
void sampler_free_rts(struct sampler *s);

#endif /* LOOPSTAT_SAMPLER_SCHED_H */
