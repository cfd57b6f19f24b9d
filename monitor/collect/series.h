/*
 * series.h — one worker's sample series: what the sampler feeds and the
 * model reads windows out of (model_window.h). Pure data and pure functions
 * (no /proc, no clock, no view struct), so recorded sample streams can be
 * replayed in tests.
 *
 * Time is in ns since the sampler started; a "second" is the integer part
 * of that. Detailed per-second buckets cover the last SERIES_DETAIL_S seconds
 * (the longest live window); a compact idle history covers SERIES_HISTORY
 * seconds; cumulative totals cover the whole run (list --duration).
 */
#ifndef LOOPSTAT_SERIES_H
#define LOOPSTAT_SERIES_H

#include <stdint.h>

#include "loopstat_shm.h"
#include "probe_classify.h"
#include "probe_fd.h"
#include "probe_shm.h"

#define SERIES_DETAIL_S   64
#define SERIES_BLOCK_KEYS 8
#define SERIES_HISTORY    300 /* seconds of compact per-second history */

/* How a sample counts; GONE / NO_ACCESS samples are not time spent anywhere. */
enum series_class { SERIES_POLL, SERIES_RUNNING, SERIES_BLOCKED, SERIES_OTHER, SERIES_NCLASS };

struct series_block {
	long     nr;
	int      fd;
	uint32_t n;              /* samples */
};

struct series_reading {         /* shm values at one instant */
	int      valid;
	uint64_t t_ns;
	uint64_t mono_ns;        /* the same instant, CLOCK_MONOTONIC (the writers' clock of poll_since_ns) */
	uint64_t v[PROBE_SHM_NVALUES];
};

struct series_sched {           /* schedstat at one instant */
	int      valid;
	uint64_t t_ns;
	uint64_t run_ns, wait_ns;
	uint64_t wakes;          /* voluntary switches (its sleeps) at the latest reading of them ... */
	uint64_t wakes_ns;       /* ... taken then (the series' clock); 0: none yet */
};

struct series_cgroup {          /* the worker's cgroup's cpu controller at one instant */
	int      valid;
	uint32_t group;          /* which of the worker's cgroups: readings of two are never subtracted */
	uint64_t t_ns;
	uint64_t throttled_ns;   /* the group's, since it was made */
	double   quota_cpus;     /* NaN: no quota */
	int      shared_only;    /* 1: the worker's process spent almost none of the group's CPU (it shares the
	                          * quota, others spend it); 0: it spends it; -1 unknown */
};

struct series_listen {          /* the process's fullest listening socket, this second */
	int      valid;          /* it has one */
	uint32_t queue, limit;   /* its accept queue and backlog at the last reading */
	uint32_t queue_max;      /* the longest queue read in the second */
};

/*
 * Busy spans (leaving the poll to re-entering it) as the samples see them:
 * a run of samples out of the poll between two samples in it. Its ends are
 * taken at the midpoints of the gaps around it, so a span is resolved to
 * about a sampling period: spans much shorter are seen by chance (one
 * sample, read as about a period) or not at all, and two spans whose idle
 * gap no sample fell in read as one. Lengths go into bins of a quarter
 * octave from 2^SERIES_LAG_SHIFT ns (bin 0 also holds every shorter one,
 * the last every longer one), each with its spans' lengths summed: a bin
 * is a fifth of its spans' length wide, and its mean says where in it
 * they lie (model/lag.c).
 */
#define SERIES_LAG_BINS  64
#define SERIES_LAG_SHIFT 17           /* 131 us */

/* The bin of a span of ns, and a bin's edges in ns. */
int series_lag_bin(uint64_t ns);
void series_lag_edges(int bin, double *lo, double *hi);

/*
 * A stall: a worker found out of its poll longer than the stall threshold,
 * captured at that moment (collect/sampler_stall.c): where it was, with
 * the user stack and the running fiber. A worker keeps its last
 * SERIES_STALLS; each second counts its own.
 */
#define SERIES_STALLS       4
#define SERIES_STALL_FRAMES 16
/* a stall's frame label: whole up to this, shortened by whole parts
 * beyond (probe_unwind_label); a worker keeps SERIES_STALLS of them in
 * every view of it, so not the unwinder's full PROBE_UNWIND_LABEL_LEN */
#define SERIES_FRAME_LEN    320
#define SERIES_STALL_WHY    160

enum series_stack_from {
	SERIES_STACK_NONE,               /* no stack: why says why */
	SERIES_STACK_SYSCALL,            /* unwound from the syscall file's sp and pc */
	SERIES_STACK_PERF,               /* unwound from one perf_event cpu-clock sample */
	SERIES_STACK_BPF,                /* unwound from the bpf source's registers and stack copy */
};

struct series_stall {
	uint64_t t_ns;                   /* captured at (the series' clock) */
	uint64_t span_start_ns;          /* the busy span it is in (series.h's estimate) */
	uint32_t dur_ms;                 /* out of the poll so far when captured; the span's whole length once it ended */
	uint8_t  ended;                  /* the span ended: dur_ms is its length */
	uint32_t lo_ms, hi_ms;           /* once it ended, the span's length lies between: the busy
	                                  * samples' reach and the idle ones' around them */
	uint8_t  cls;                    /* SERIES_RUNNING, SERIES_BLOCKED or SERIES_OTHER */
	uint8_t  stack_from;             /* enum series_stack_from */
	int32_t  nr, fd;                 /* the syscall and its fd argument, -1 when none */
	char     target[PROBE_TARGET_LEN]; /* what the fd is, "" when unknown */
	char     fiber[LOOPSTAT_TAG_LEN]; /* the running fiber's tag (instrumented), "" when none */
	char     why[SERIES_STALL_WHY];  /* why the stack is missing or short, "" when none */
	int      nframes;
	char     frames[SERIES_STALL_FRAMES][SERIES_FRAME_LEN]; /* innermost first, "module`symbol" */
};

/*
 * Exact figures of a thread the kernel counted (the bpf source,
 * probes/include/probe_bpf.h): cumulative clocks and counts at one
 * instant, read once a second. An interval's figure is the difference of
 * two readings: measured, not estimated.
 */
#define SERIES_EXACT_OFF 6

struct series_exact {
	int      valid;
	uint64_t t_ns;                   /* the series' clock */
	uint64_t poll_ns;                /* inside the loop's poll */
	uint64_t rq_ns;                  /* runnable, waiting for a CPU */
	uint64_t oncpu_ns;               /* on a CPU */
	uint64_t events;                 /* events (ready fds) its poll returned */
	uint64_t returns;                /* its poll's returns */
	uint64_t blocked_ns;             /* off a CPU inside a syscall that is not the loop's poll */
	/* blocked_ns by syscall: a syscall keeps its place once given one
	 * (two readings' places agree), -1 an empty place; syscalls past
	 * SERIES_EXACT_OFF are in blocked_ns only */
	int32_t  off_nr[SERIES_EXACT_OFF];
	uint64_t off_ns[SERIES_EXACT_OFF];
};

struct series_pool {            /* the busiest helper pool of the worker's process, this second */
	int      valid;
	uint32_t threads;        /* its threads */
	uint32_t n, busy;        /* its threads' samples, and those not in the pool's wait */
};

struct series_bucket {
	int64_t  sec;                         /* -1: unused */
	uint32_t n[SERIES_NCLASS];               /* samples by class, each counted its weight times */
	uint32_t n2[SERIES_NCLASS];              /* the sum of their weights squared (n's Kish size: n²/n2) */
	uint32_t taken;                          /* samples taken, each once */
	struct series_block blocks[SERIES_BLOCK_KEYS];
	uint32_t blocks_overflow;             /* blocked samples whose key did not fit */
	struct series_reading shm;               /* last reading taken in this second */
	uint64_t runq_max;                    /* max runqueue_len read in this second */
	uint64_t stall_max_ns;                /* the longest stall seen at this second's shm readings */
	struct series_sched sched;               /* last schedstat in this second */
	struct series_cgroup cg;                 /* last cgroup reading in this second */
	struct series_listen listen;
	uint16_t lag_n[SERIES_LAG_BINS];      /* busy spans that ended in this second, by bin */
	uint32_t lag_sum_us[SERIES_LAG_BINS]; /* and their lengths summed: where in its bin a span lies */
	uint32_t lag_max_us;                  /* the longest span seen in it, one in progress included */
	uint32_t stalls;                      /* stalls captured in it */
	struct series_pool pool;
	struct series_exact exact;            /* the last exact reading in this second */
};

/*
 * What the profiler and the detail view break a worker's time down by: one
 * key per (class, syscall, fd, pc, running fiber's tag), with the last
 * stack pointer seen under it. POLL and BLOCKED keep nr, fd and pc; RUNNING
 * and OTHER only the fiber.
 */
struct series_key {
	uint64_t pc, sp;         /* pc is part of the key, sp the last seen */
	int32_t  nr, fd;
	uint32_t n;              /* samples */
	uint8_t  cls;            /* enum series_class */
	uint8_t  fiber;          /* 1 + the slot's tag index of the running fiber, 0: none or unknown */
};

/* The sample context the verdict does not carry. */
struct series_ctx {
	uint64_t sp, pc;         /* from the syscall file, 0 when not in a syscall */
	uint8_t  fiber;          /* as series_key.fiber */
	/* precision-targeted sampling (collect/precision.h): a sample taken
	 * with probability 1/weight counts weight times (0 counts as 1); and
	 * when ticks were skipped since the worker's last sample, the gap of
	 * the tick before this one (0: none skipped), for the span estimate */
	uint32_t weight;
	uint64_t tick_gap_ns;
	/* the wait since the worker's last sample the sampler meant (its
	 * period times the ticks since; 0: unknown): one SERIES_HOLE times
	 * longer (and SERIES_HOLE_MIN_NS) was the sampler held up, and no span
	 * is measured across it */
	uint64_t due_ns;
};

/* Three, the periods an idle gap needs for sampled spans to be resolved
 * at all (model/lag.h, LAG_RES_PERIODS). At two, a tick held 20-30 ms (as
 * under the sanitizers beside another suite) was a hole, and a 300-ms
 * stall across it reads as two shorter spans (the likely cause of a
 * flight-recorder test whose lag_max_ms>200 trigger never fired); the
 * holes that merged spans were waits of 47 and 120 ms at 10-ms periods. */
#define SERIES_HOLE 3
/* And never shorter than at the default 100 Hz (sampler.c checks it): at 1 kHz (profile,
 * record) three meant waits are 3 ms, and on a loaded host nearly every
 * span held a tick that late; none reached --stall-ms, and a recording
 * of 200-ms burns kept no stall (ci47). */
#define SERIES_HOLE_MIN_NS (30 * 1000000ull)

#define SERIES_KEYS 64

struct series_totals {                       /* since the worker was first seen */
	uint32_t n[SERIES_NCLASS];               /* weighted, as a bucket's */
	uint64_t n2[SERIES_NCLASS];
	uint32_t keys_overflow;               /* samples whose key did not fit: counted, shown */
	struct series_key keys[SERIES_KEYS];  /* the first SERIES_KEYS keys seen (next to n: a sample adds to both) */
	struct series_block blocks[SERIES_BLOCK_KEYS * 2];
	uint32_t blocks_overflow;
	uint64_t runq_max;
	uint64_t stall_max_ns;                /* the longest stall seen at any shm reading */
	struct series_reading shm_first;
	struct series_sched sched_first;
	struct series_cgroup cg_first;
	uint32_t accept_max;                  /* the longest accept queue read */
	uint32_t lag_n[SERIES_LAG_BINS];      /* busy spans, by bin */
	uint64_t lag_sum_us[SERIES_LAG_BINS]; /* their lengths summed, as the seconds' */
	uint64_t lag_max_ns;                  /* the longest span, one in progress included */
	uint32_t stalls;                      /* stalls captured */
	struct series_pool pool;              /* n and busy summed over the run, the last threads */
	struct series_exact exact_first;      /* the first exact reading */
};

/* One second of compact history: one slot, so that a sample touches one
 * cache line of it (a tick adds a sample to every worker's). */
struct series_hist {
	int64_t  sec;
	uint32_t busy_us;                         /* runnable (schedstat) in the second */
	uint32_t span_us;                         /* of how much of it schedstat covered */
	uint16_t n, poll, run;
};

struct series {
	struct series_bucket detail[SERIES_DETAIL_S];  /* ring: second s lives at s % SERIES_DETAIL_S */
	struct series_hist hist[SERIES_HISTORY]; /* ring of compact history */
	/* from here on: what every window needs (series_copy_window copies it
	 * whole); first what every sample touches, side by side */
	uint64_t samples;                        /* all samples ever */
	uint64_t shortcut_samples;               /* of them, counted idle from the slot without a /proc read */
	uint64_t unchanged_samples;              /* of them, reused because schedstat showed the thread had not run */
	uint64_t polls_seen;                     /* POLL samples ever: marks a worker */
	int64_t  first_sec;                      /* second of the first sample, -1 before */
	int      polled_since_change;            /* stall tracking: see last_change_ns */
	int      busy_since_change;
	uint8_t  fiber_now;                      /* series_key.fiber of the running fiber, last reading */
	uint8_t  span_prev_busy;                 /* the previous sample was out of the poll */
	uint8_t  exact;                          /* class counts are measured exactly (ns, events), not sampled:
	                                          * set by a source that measures so (source.h, SOURCE_EXACT) */
	uint64_t span_prev_ns;                   /* when that sample was taken, 0: none to go on */
	uint64_t span_start_ns;                  /* the estimated start of the span in progress, 0: none */
	uint64_t span_idle_ns, span_busy_ns;     /* its last sample in the poll and first out of it */
	int      exact_spans;                    /* spans come from the kernel (series_add_exact), not the samples */
	uint8_t  pooled;                         /* a scheduler's pool (series_add_pooled): a sample is a thread's
	                                          * share of a tick, a span a run of ticks with every thread busy */
	struct series_exact exact_last;          /* the last exact reading */
	struct series_totals total;
	struct series_reading shm_last;
	struct series_sched sched_last;
	struct series_cgroup cg_last;
	struct series_listen listen_last;
	uint64_t self_disagreements;             /* cross-checks where /proc contradicted the slot's poll */
	/* stall tracking: the switch counter and when it last moved */
	uint64_t last_switches;
	uint64_t last_change_ns;
	char     fiber_tag[LOOPSTAT_TAG_LEN];    /* at the last shm reading */
	char     fiber_names[LOOPSTAT_TAG_MAX + 1][LOOPSTAT_TAG_LEN]; /* [series_key.fiber]: as readings named it */
	struct series_stall stalls[SERIES_STALLS]; /* the last ones: stall i lives at i % SERIES_STALLS */
};

void series_init(struct series *a);

/* The series class a verdict's sample counts in; -1 for GONE and
 * NO_ACCESS, which are no time spent anywhere. */
int series_class_of(enum probe_class c);

/* One classified syscall sample taken at t_ns; ctx may be NULL. */
void series_add_sample(struct series *a, uint64_t t_ns, const struct probe_verdict *v, const struct series_ctx *ctx);

/* One tick of a pooled runtime's scheduler (collect/sampler_sched.c): of
 * capacity threads' worth, running and blocked busy (blocked_v names the
 * syscall), the rest parked; each unit counts as a sample. A busy span is
 * a run of ticks with the whole capacity busy. */
void series_add_pooled(struct series *a, uint64_t t_ns, uint32_t capacity, uint32_t running, uint32_t blocked,
		       const struct probe_verdict *blocked_v);

/* A reading of the worker's shm slot values at t_ns, which is mono_ns on
 * CLOCK_MONOTONIC (to count a blocking poll still in progress). */
void series_add_shm(struct series *a, uint64_t t_ns, uint64_t mono_ns, const uint64_t values[PROBE_SHM_NVALUES],
		 const char *fiber_tag);

/* The running fiber as read at a tick's own instant (probe_shm_read_hot):
 * tag_index is current_tag (0: none), tag its name. */
void series_set_fiber(struct series *a, uint32_t tag_index, const char *tag);

/* A schedstat reading at t_ns. */
void series_add_sched(struct series *a, uint64_t t_ns, uint64_t run_ns, uint64_t wait_ns);
/* The same with the times the thread slept of its own accord so far (a
 * loop's blocking polls: how often it cycles, for the lag's resolution,
 * model/lag.h); 0: not read this time. */
void series_add_sched_wakes(struct series *a, uint64_t t_ns, uint64_t run_ns, uint64_t wait_ns, uint64_t wakes);

/* A reading of the worker's cgroup at t_ns (read once a second per group);
 * group tells the worker's cgroups apart (it may be moved), shared_only
 * says its process only shares the quota others spend (-1: no quota). */
void series_add_cgroup(struct series *a, uint64_t t_ns, uint32_t group, uint64_t throttled_ns, double quota_cpus,
		       int shared_only);

/* A reading of the worker's process's fullest listening socket at t_ns. */
void series_add_listen(struct series *a, uint64_t t_ns, uint32_t queue, uint32_t limit);

/* An exact reading e (its t_ns the series' clock), with the busy spans
 * that ended since the last one in lag bins (spans[SERIES_LAG_BINS], their
 * lengths summed in sums_ns) and the longest of them or of one in progress
 * (max_ns). From the first on, spans come only from these, not from the
 * samples; a reading whose loop poll returned since the last marks a
 * worker (polls_seen). */
void series_add_exact(struct series *a, const struct series_exact *e, const uint32_t *spans, const uint64_t *sums_ns,
		       uint64_t max_ns);

/* A stall captured at st->t_ns (its span_start_ns the span in progress). */
void series_add_stall(struct series *a, const struct series_stall *st);

/* The span in progress: how long (ns) the worker has been out of its poll
 * at now_ns, and when it left it; 0 when in it or unknown. */
uint64_t series_span_open_ns(const struct series *a, uint64_t now_ns, uint64_t *start_ns);
/* The busiest pool of the worker's process over the last second (sampler_pools.c). */
void series_add_pool(struct series *a, uint64_t t_ns, uint32_t threads, uint32_t n, uint32_t busy);

/* Stall: how long (ns) the switch counter has not moved while the thread was
 * seen running or blocked and never in its poll; 0 if not stalled. */
uint64_t series_stall_ns(const struct series *a, uint64_t now_ns);

/*
 * Copies into dst what a window of window_s seconds ending in second
 * now_sec needs (<= 0: the whole run, totals only), and the compact history
 * only when with_history: a view's copy costs what it reads, not the whole
 * series. dst reads like src for that window and no other.
 */
void series_copy_window(struct series *dst, const struct series *src, int64_t now_sec, double window_s,
			int with_history);

/* Seconds of detail a window of window_s covers, capped by the ring. */
int64_t series_window_span(double window_s);

/* Adds n samples of (nr, fd) to a key table of nkeys, or to *overflow
 * when the table is full. */
void series_add_block(struct series_block *blocks, int nkeys, uint32_t *overflow, long nr, int fd, uint32_t n);

#endif /* LOOPSTAT_SERIES_H */
