/*
 * sampler.h — the one sampling thread: discovers workers, samples each
 * thread's syscall file at randomized intervals around the target rate,
 * reads shm counters at a lower rate, and keeps per-second history.
 * Views get a struct model from it and never sample themselves.
 */
#ifndef LOOPSTAT_SAMPLER_H
#define LOOPSTAT_SAMPLER_H

#include "probe_classify.h"
#include "probe_syscall.h"
#include "collect/snapshot.h"
#include "collect/targets.h"

/* bench/probe_fleet: ~5 us per sample here, so 64 workers at 100 Hz cost ~3% of a core */
#define SAMPLER_DEFAULT_HZ     100.0
#define SAMPLER_SHM_HZ         10.0
#define SAMPLER_DISCOVER_S     1.0   /* how often new workers are looked for */
#define SAMPLER_GONE_KEEP_S    5.0   /* how long an exited worker stays listed */
/* Threads sampled at most: another user can publish segments naming any
 * number of threads, and a root monitor must not follow them into the
 * ground. Those turned away are counted and shown. */
#define SAMPLER_MAX_WORKERS    4096
#define SAMPLER_STALL_MS       100.0 /* the default stall threshold */
/* One shortcut tick in this many (at random) reads /proc all the same:
 * the cross-checks are most of what an idle instrumented fleet costs
 * (one schedstat read each against a few loads per shortcut tick), and
 * at 100 Hz this still checks each worker about 1.5 times a second. */
#define SAMPLER_CROSS_CHECK    64
/* A worker /proc contradicted this often is read at every tick for good. */
#define SAMPLER_DISTRUST_AFTER 3

/* One sample as the tick classified it, for views that keep their own
 * record (profile, record): all borrowed, valid during the call only. */
struct sampler_event {
	pid_t    pid, tid;
	const char *name;                /* process name (comm) */
	const char *service;             /* its systemd unit, container, else the process name */
	int      instrumented;
	uint64_t t_ns;                   /* the series' clock: ns since the sampler started */
	const struct probe_sc_sample *sample;
	const struct probe_verdict *verdict;
	const char *fiber_tag;           /* the running fiber's tag at the slot's last reading, NULL if not instrumented */
	const char *target;              /* what the verdict's fd is ("pipe:[12]", a path, a socket), NULL if unknown */
	uint64_t run_ns, wait_ns;        /* the thread's schedstat totals at their last reading (0 before) */
	uint64_t switches;               /* the slot's switch counter at its last reading, 0 if not instrumented */
	uint32_t weight;                 /* the ticks this sample stands for: 1, more after ticks the sampler
	                                  * skipped because it fell behind */
};

/* A stall as it is captured (sampler_stall.c), for views that keep their
 * own record (record): all borrowed, valid during the call only. */
struct sampler_stall_event {
	pid_t    pid, tid;
	const char *name;                /* process name (comm) */
	int      instrumented;
	const struct series_stall *stall;
};

struct sampler_opts {
	double rate_hz;                  /* samples per second of a thread whose state changes; 0: default */
	/* each thread's rate is what a 95% interval of its idle% this many
	 * points wide either side over 10 s needs, between 10 Hz and rate_hz
	 * (precision.h); 0: PREC_DEFAULT_PTS, < 0: every thread at rate_hz.
	 * With on_sample every thread is sampled at rate_hz. */
	double precision_pts;
	const struct targets *targets;   /* borrowed; must outlive the sampler */
	int    all_threads;              /* also list threads never seen polling (top's 't') */
	int    no_realtime;              /* never take real-time priority (tests: a sampler that cannot preempt) */
	size_t max_workers;              /* threads sampled at most; 0: SAMPLER_MAX_WORKERS */
	int    no_shortcuts;             /* read /proc at every tick, even for a worker its slot says is still in
	                                  * the poll /proc last confirmed (tests compare the two) */
	int    always_check_schedstat;   /* the schedstat check for every thread, whether or not it pays
	                                  * (tests of its correctness on threads it would not pay for) */
	/* called on the sampling thread, with its lock held, for every sample
	 * of a live task: keep it short (it delays the tick). With a hook the
	 * shm slots are read every tick, not at SAMPLER_SHM_HZ, so fiber_tag
	 * is the fiber running at the sample's tick. */
	void (*on_sample)(void *arg, const struct sampler_event *ev);
	void  *on_sample_arg;
	double stall_ms;                 /* capture a worker out of its poll this long (sampler_stall.c);
	                                  * 0: SAMPLER_STALL_MS, < 0: never */
	/* called like on_sample (same arg) for every stall captured */
	void (*on_stall)(void *arg, const struct sampler_stall_event *ev);
};

struct sampler;

int  sampler_new(const struct sampler_opts *o, struct sampler **out);
/* Starts the sampling thread. Returns 0 or -errno. */
int  sampler_start(struct sampler *s);
void sampler_stop(struct sampler *s);
void sampler_delete(struct sampler *s);

/* Thread-safe controls for the views. */
void   sampler_set_rate(struct sampler *s, double hz);
double sampler_rate(struct sampler *s);
void   sampler_set_paused(struct sampler *s, int paused);
void   sampler_set_all_threads(struct sampler *s, int on);
/* What a read costs the sampler here, as last measured, in CPU ns: a
 * schedstat file and a syscall file (0: not measured yet). */
void   sampler_read_costs(struct sampler *s, uint64_t *check_ns, uint64_t *read_ns);
/* 1 while the sampling thread runs at real-time priority (see sampler.c). */
int    sampler_realtime(struct sampler *s);

/*
 * Copies every shown worker's identity and what a window of window_s
 * seconds needs of its series (<= 0: the whole run; the per-second history
 * too when with_history) into snap, reusing its memory (free with
 * snapshot_done). Only that copy happens under the lock: the model is
 * computed from it outside (model_build.h). Thread-safe. 0 or -ENOMEM.
 */
int sampler_snapshot(struct sampler *s, double window_s, int with_history, struct snapshot *snap);

/* Runs one sampling step synchronously (tests, list without a thread). */
void sampler_step(struct sampler *s);

#endif /* LOOPSTAT_SAMPLER_H */
