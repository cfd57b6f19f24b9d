/*
 * acc.h — one worker's accumulators: what the sampler feeds and the model
 * reads. Pure data and pure functions (no /proc, no clock), so recorded
 * sample streams can be replayed in tests.
 *
 * Time is in ns since the sampler started; a "second" is the integer part
 * of that. Detailed per-second buckets cover the last ACC_DETAIL_S seconds
 * (the longest live window); a compact idle history covers MODEL_HISTORY
 * seconds; cumulative totals cover the whole run (list --duration).
 */
#ifndef LOOPSTAT_ACC_H
#define LOOPSTAT_ACC_H

#include <stdint.h>

#include "model.h"
#include "probe_classify.h"

#define ACC_DETAIL_S   64
#define ACC_BLOCK_KEYS 8
#define ACC_NCLASS     4   /* poll, running, blocked, other */

struct acc_block {
	long     nr;
	int      fd;
	uint32_t n;              /* samples */
};

struct acc_reading {         /* shm values at one instant */
	int      valid;
	uint64_t t_ns;
	uint64_t mono_ns;        /* the same instant, CLOCK_MONOTONIC (the writers' clock of poll_since_ns) */
	uint64_t v[PROBE_SHM_NVALUES];
};

struct acc_sched {           /* schedstat at one instant */
	int      valid;
	uint64_t t_ns;
	uint64_t run_ns, wait_ns;
};

struct acc_bucket {
	int64_t  sec;                         /* -1: unused */
	uint32_t n[ACC_NCLASS];               /* samples by class */
	struct acc_block blocks[ACC_BLOCK_KEYS];
	uint32_t blocks_overflow;             /* blocked samples whose key did not fit */
	struct acc_reading shm;               /* last reading taken in this second */
	uint64_t runq_max;                    /* max runqueue_len read in this second */
	struct acc_sched sched;               /* last schedstat in this second */
};

struct acc_totals {                       /* since the worker was first seen */
	uint32_t n[ACC_NCLASS];
	struct acc_block blocks[ACC_BLOCK_KEYS * 2];
	uint32_t blocks_overflow;
	uint64_t runq_max;
	struct acc_reading shm_first;
	struct acc_sched sched_first;
};

struct acc {
	struct acc_bucket detail[ACC_DETAIL_S];  /* ring: second s lives at s % ACC_DETAIL_S */
	int64_t  hist_sec[MODEL_HISTORY];        /* ring of compact history */
	uint16_t hist_n[MODEL_HISTORY], hist_poll[MODEL_HISTORY], hist_run[MODEL_HISTORY];
	uint32_t hist_busy_us[MODEL_HISTORY];    /* runnable (schedstat) in the second */
	uint32_t hist_span_us[MODEL_HISTORY];    /* of how much of it schedstat covered */
	struct acc_totals total;
	struct acc_reading shm_last;
	struct acc_sched sched_last;
	uint64_t samples;                        /* all samples ever */
	uint64_t polls_seen;                     /* POLL samples ever: marks a worker */
	/* stall tracking: the switch counter and when it last moved */
	uint64_t last_switches;
	uint64_t last_change_ns;
	int      polled_since_change;
	int      busy_since_change;
	char     fiber_tag[LOOPSTAT_TAG_LEN];    /* at the last shm reading */
	int64_t  first_sec;                      /* second of the first sample, -1 before */
};

void acc_init(struct acc *a);

/* One classified syscall sample taken at t_ns. */
void acc_add_sample(struct acc *a, uint64_t t_ns, const struct probe_verdict *v);

/* A reading of the worker's shm slot values at t_ns, which is mono_ns on
 * CLOCK_MONOTONIC (to count a blocking poll still in progress). */
void acc_add_shm(struct acc *a, uint64_t t_ns, uint64_t mono_ns, const uint64_t values[PROBE_SHM_NVALUES],
		 const char *fiber_tag);

/* A schedstat reading at t_ns. */
void acc_add_sched(struct acc *a, uint64_t t_ns, uint64_t run_ns, uint64_t wait_ns);

/* Stall: how long (ns) the switch counter has not moved while the thread was
 * seen running or blocked and never in its poll; 0 if not stalled. */
uint64_t acc_stall_ns(const struct acc *a, uint64_t now_ns);

/*
 * Fills the sampled and counter figures of w (pid, names, tags and
 * blocker targets are the caller's) over the window_s seconds ending at
 * now_ns; window_s <= 0: since the worker was first seen.
 */
void acc_view(const struct acc *a, uint64_t now_ns, double window_s, int instrumented, struct worker_view *w);

#endif /* LOOPSTAT_ACC_H */
