/*
 * sampler_int.h — what the sampler's files share: the sampler, its worker
 * and segment tables, and the worker tables' functions. Private to
 * monitor/collect/sampler*.c; each part's own functions are in its header.
 *
 *   sampler.c          life cycle, options, the thread and tick timing, controls
 *   sampler_tick.c     the tick: reads, shortcuts, the 4 Hz schedstat pass
 *   sampler_snapshot.c the copy views take
 *   sampler_workers.c  worker and segment tables, discovery, shm reads (here)
 *   sampler_sweep.c    the host's loops, by sweeps of /proc (here)
 *   sampler_limits.c   cgroup limits and listeners (sampler_limits.h)
 *   sampler_roles.c    loops' roles (sampler_roles.h)
 *   sampler_stall.c    stall capture (sampler_stall.h)
 *   sampler_pools.c    helper pools (sampler_pools.h)
 *   sampler_sched.c    pooled runtimes' scheduler rows (sampler_sched.h)
 *   sampler_cost.c     the sampler's own CPU cost and real-time policy (sampler_cost.h)
 *   sampler_bpf.c      the bpf source (sampler_bpf.h)
 */
#ifndef LOOPSTAT_SAMPLER_INT_H
#define LOOPSTAT_SAMPLER_INT_H

#include <pthread.h>
#include <stdint.h>

#include "util/clock.h"
#include "util/idmap.h"
#include "probe_access.h"
#include "probe_discover.h"
#include "probe_fd.h"
#include "probe_loop.h"
#include "probe_schedstat.h"
#include "probe_service.h"
#include "probe_shm.h"
#include "probe_sweep.h"
#include "probe_syscall.h"
#include "collect/precision.h"
#include "collect/sample_batch.h"
#include "collect/sampler.h"
#include "collect/series.h"
#include "collect/snapshot.h"

#define NS 1000000000ull
#define SAMPLER_MAX_PROCS   4096
#define SAMPLER_MAX_THREADS 4096
#define SAMPLER_MAX_SLOTS   1024
#define SAMPLER_STALL_BURST 5      /* stalls captured per worker a minute at most */

struct sworker {
	/* what every tick touches, sampled or skipped: side by side at the
	 * head, so that a skipped worker costs about one cache line a tick */
	uint64_t gone_ns;             /* 0 while alive */
	int      tick_mode;           /* this tick: TICK_SKIP, TICK_READ, TICK_POLL_SHORTCUT, TICK_CROSS_CHECK, TICK_UNCHANGED */
	uint32_t weight;              /* this tick's sample counts this many times; 0: skipped */
	int      gate_fresh;          /* gate_ref was read this tick, before its /proc read */
	int      tick_ss_ok;          /* so the 4 Hz pass need not read schedstat again */
	struct prec prec;             /* its sampling stride (precision.h) */
	pid_t    pid, tid;
	uint64_t start_time;          /* its process's (stat field 22), 0 unknown: (pid, start) names it */
	uid_t    uid;                 /* its process's owner, (uid_t)-1 unknown */
	int      kept;                /* instrumented or a named target: never made room from */
	int      instrumented;
	uint32_t backend;
	int      wait_fd;
	uint64_t generation;          /* slot generation, instrumented only */
	/* the poll_since_ns shortcut (sampler_tick.c): an instrumented worker still
	 * in the blocking poll /proc last confirmed is idle without a read */
	uint64_t hot_since;           /* poll_since_ns read at this tick, 0: none or unknown */
	uint64_t confirmed_since;     /* poll_since_ns of the last /proc-confirmed poll sample, 0: none */
	/* the last /proc sample, reused by both shortcuts: by the poll one
	 * while confirmed_since stands, by the schedstat one while last_ok */
	struct probe_sc_sample last_smp;
	struct probe_verdict last_v;
	/* the schedstat shortcut (sampler_tick.c): a thread not put on a CPU since
	 * a sample that found it off the CPU is still where it was found */
	struct probe_schedstat gate_ref; /* read just before the last /proc sample */
	struct probe_schedstat tick_ss; /* the check's reading at this tick, when tick_ss_ok */
	struct probe_schedstat check_ss; /* the last check's reading, at check_at (the series' clock) */
	uint64_t check_at;
	int      last_ok;             /* last_smp is off the CPU and gate_ref came before it */
	int      gated;               /* checking schedstat first pays for this thread */
	struct probe_schedstat judged; /* the last 4 Hz reading */
	uint64_t sched_poll;          /* the confirmed poll it was in at its last 4 Hz reading, 0: none */
	uint64_t sched_reused;        /* 4 Hz readings that stood for a new one (tests) */
	struct probe_schedstat judge_ref; /* the reading whether the check pays was last judged on */
	uint64_t judged_samples, judged_ns; /* its samples and the clock then */
	uint32_t slot;                /* its slot's index in its segment */
	size_t   seg_i;               /* where its segment was last found in s->seg (a hint) */
	char     name[PROBE_COMM_LEN];
	char     service[PROBE_SERVICE_LEN];   /* "" until resolved: then the unit, container or name */
	int      in_unit;             /* its process is in a systemd unit or a container */
	enum snap_role role;          /* sampler_roles.c */
	uint64_t role_at;             /* when it was judged (0: not yet) */
	unsigned role_n;              /* how many times */
	unsigned waits;               /* what its loop waits on (probe_waitset.h), at that judgement */
	int      worked;              /* seen waiting on more than wake-ups, or on a CPU: never a helper */
	uint64_t wakes_at;            /* when its voluntary switches were last read (wakes_of) */
	int      busy_loop;           /* named, never seen in its poll, busy in a process holding an epoll
	                               * instance: a loop saturated from the start (sampler_roles.c) */
	int      poll_fds[PROBE_VERDICT_FDS]; /* the fds of its last plain poll-loop wait */
	int      npoll_fds;
	char     tag[LOOPSTAT_TAG_LEN];
	struct probe_syscall sc;
	struct probe_schedstat_file ss;
	struct probe_loop loop;       /* which of its polls is its loop's (probe_loop.h) */
	enum probe_loop_basis basis;  /* how, as of the last sample */
	int      loop_fd;
	int      cg;                  /* its cgroup: index + 1 in s->cg, 0 not looked up yet, -1 none */
	uint64_t cg_at;               /* when cg was looked up (a process may be moved to another) */
	int      no_access;
	char     access_text[PROBE_ACCESS_TEXT_LEN]; /* why, once no_access was first seen */
	int      seen;                /* mark for discovery sweeps */
	uint32_t discover_due, discover_gap; /* a -p process's main thread: its next look, and the gap */
	uint64_t stall_span;          /* the busy span last captured as a stall (its start) */
	uint64_t stall_times[SAMPLER_STALL_BURST]; /* the last captures, for the rate limit */
	unsigned nstall_times;
	struct snap_target targets[SNAP_TARGETS]; /* what recently blocking fds are */
	int      ntargets;
	/* pooled runtimes (sampler_sched.c) */
	struct sched_row *sched;      /* a scheduler row (tid 0): its pool, owned; NULL for a thread */
	int      member;              /* a thread of a scheduler's pool: sampled every tick, not shown */
	int      runtime;             /* enum probe_rt of its process */
	char     thread_name[16];     /* the thread's own comm, "" when not read */
	uint32_t *bpf_hist;           /* the kernel's span histogram at the last exact reading (owned), NULL: none */
	int32_t  bpf_off_nr[SERIES_EXACT_OFF]; /* the syscall of each place of its exact off-CPU times */
	int      bpf_noff;            /* places given */
	struct series series;
};

/* A loop: seen in its poll, or saturated from the start (busy_loop). */
static inline int sampler_is_loop(const struct sworker *w)
{
	return w->series.polls_seen > 0 || w->busy_loop;
}

enum { TICK_SKIP, TICK_READ, TICK_POLL_SHORTCUT, TICK_CROSS_CHECK, TICK_UNCHANGED };

struct segment {
	pid_t pid;
	struct probe_shm *shm;
	char  name[PROBE_COMM_LEN];
	int   seen;
	int   read_ok;                   /* its last read gave slots */
};

struct sampler {
	pthread_mutex_t lock;
	pthread_t thread;
	pid_t    self_tid;                /* the sampling thread's, once it runs (0: none) */
	int      started;
	int      stop;
	int      realtime;                /* the thread runs SCHED_FIFO now */
	int      paused;
	int      all_threads;
	int      servers_only;            /* host-wide without --all: only servers are shown */
	int      no_realtime;
	int      no_shortcuts;
	int      always_check_schedstat;
	double   rate_hz;
	double   precision_pts;           /* the target half-width, 0: every worker at every tick */
	struct prec_conf prec;            /* from the two (precision.h) */
	uint64_t last_tick_ns;            /* the series' clock at the last tick, 0: none */
	const struct targets *targets;   /* borrowed */
	void   (*on_sample)(void *arg, const struct sampler_event *ev);
	void   (*on_stall)(void *arg, const struct sampler_stall_event *ev);
	void    *on_sample_arg;
	struct probe_fd_cache *fds;      /* blocker fd targets, forgotten each discovery sweep */
	struct sample_batch *batch;      /* owned: how each tick's syscall files are read */

	struct sworker **w;              /* owned; pointers so series never move */
	size_t   n, cap;
	size_t   max_workers;
	unsigned ignored_threads;        /* turned away by max_workers in the last discovery pass */
	unsigned ignored_slots;          /* and in the last pass over the segments */
	struct idmap by_tid;             /* (pid, tid) -> index in w */
	struct idmap live_by_pid;        /* scratch for discovery: pid -> its live workers */
	struct segment *seg;
	size_t   nseg, segcap;
	struct idmap by_pid;             /* pid -> index in seg */

	uint64_t t0;                     /* CLOCK_MONOTONIC at creation */
	uint64_t next_discover, next_shm, next_sched, next_limits, next_roles;
	uint32_t discover_round;         /* discovery passes so far */
	uint64_t sched_at;               /* the last 4 Hz schedstat pass */
	struct probe_sweep *sweep;       /* the host's loops (no -p, -n, --instrumented); NULL: none */
	uint64_t next_sweep;             /* when the next sweep is due: its cost sets the gap */
	uint64_t relook_at;              /* when the last sweep's second look is due, 0: none */
	uint64_t tick_cpu_ns;            /* CPU of the ticks taken from within discovery, so far */
	uint64_t setup_cpu_ns;           /* CPU of setting up the workers sweeps found, so far */
	unsigned sweep_added;            /* workers the sweep under way added for sweep_uid */
	uid_t    sweep_uid;              /* the user whose processes it visits */
	uint32_t sweeps;                 /* sweeps run */
	int      trim_due;               /* many workers were freed: the next this many snapshots trim the heap */
	size_t   freed_untrimmed;        /* workers freed since the last trim was asked for */
	struct probe_sweep_counts swept; /* the last sweep's */
	pid_t    service_pid;            /* the last process whose service was resolved, and it */
	char     service_of[PROBE_SERVICE_LEN];
	char     name_of[PROBE_SERVICE_LEN];     /* a process name as a service, cleaned */
	uid_t    adding_uid;             /* the owner of the worker being added, (uid_t)-1 unknown */
	int      adding_kept;            /* and whether it is kept (instrumented or named) */
	struct sampler_cgroup *cg;       /* the workers' cgroups (sampler_limits.c) */
	size_t   ncg;
	struct sampler_listener *lis;    /* the workers' processes' listening sockets */
	size_t   nlis;
	struct idmap by_listener;        /* pid -> index in lis */
	struct probe_listen_row *listen_rows;   /* scratch: one namespace's LISTEN rows */
	struct sampler_pools *pools;     /* the workers' processes' helper pools (sampler_pools.c) */
	struct sampler_rt *rts;          /* processes' runtimes, nrts of rtcap (sampler_sched.c) */
	size_t   nrts, rtcap;
	struct idmap rt_by_pid;          /* pid -> index in rts */
	struct sampler_bpf *bpf;         /* the bpf source (sampler_bpf.c), NULL: proc alone */
	char     source[8];              /* "bpf" or "proc" */
	char     source_why[200];        /* why auto fell back to proc, "" when it did not */
	uint64_t total_samples;
	uint64_t ticks;                  /* sample_all calls (sampler_tick.c) */
	/* what a read costs this thread, in CPU ns (EWMAs): a schedstat file
	 * and a syscall file; whether the schedstat shortcut pays hangs on both */
	uint64_t check_ns, read_ns;
	uint64_t tick_lag_max_ns;        /* the latest a tick started after its time */
	uint64_t due_ns;                 /* CLOCK_MONOTONIC of the next tick; 0: no thread keeps the schedule */
	uint32_t tick_weight;            /* 1 + the ticks lost to lag just before this one (0 reads as 1) */
	unsigned rng;
	uint64_t stall_ns;               /* the stall threshold, 0: no capture */
	struct sampler_stall *stall;     /* owned: the capture's unwinders (sampler_stall.c) */

	/* scratch for discovery and shm reads, too big for the stack */
	struct probe_proc_info procs[SAMPLER_MAX_PROCS];
	pid_t    tids[SAMPLER_MAX_THREADS];
	pid_t    pids[TARGETS_MAX_PIDS];   /* the -p targets without a segment */
	struct probe_shm_worker slots[SAMPLER_MAX_SLOTS];
};

/* ns since the sampler started: the series' clock */
static inline uint64_t sampler_elapsed_ns(const struct sampler *s)
{
	return mono_ns() - s->t0;
}

/* sampler_tick.c: a tick's samples, with s->lock held. */
void sampler_sample_tick(struct sampler *s, uint64_t now);

/* sampler_workers.c, on the sampling thread: all with s->lock held but
 * sampler_discover, which takes it itself */
struct sworker *sampler_find_worker(struct sampler *s, pid_t pid, pid_t tid);
void sampler_drop_gone(struct sampler *s, uint64_t now);
void sampler_mark_gone(struct sworker *w, uint64_t now);
void sampler_discover(struct sampler *s, uint64_t now);
/* Whether the process passes -u and -s (both: no look at /proc when
 * neither is given). */
int sampler_narrowed_in(struct sampler *s, pid_t pid, uid_t uid, const char *name);
/* Whether w (NULL: none) is the worker of the live process started at
 * start (0: unknown), not a gone one's or an earlier one's with its pid. */
int sampler_worker_current(const struct sworker *w, uint64_t start);
/* The worker of thread tid of the process (pid, start) found now, added
 * when there is none; NULL past the cap (counted in *ignored). */
struct sworker *sampler_worker_of(struct sampler *s, pid_t pid, pid_t tid, uint64_t start, const char *name,
				  unsigned *ignored);
/* sampler_sweep.c: a sweep of the host when one is due (from
 * sampler_discover, which it leaves the lock to as it does). */
void sampler_sweep_host(struct sampler *s, uint64_t now);
/* The last sweep's second look at the threads it found on a CPU, once
 * due (SAMPLER_RELOOK_NS after it); takes the lock itself. */
void sampler_relook(struct sampler *s, uint64_t now);
/* Called by a long discovery between its files: takes the tick that is
 * due, if one is, so that a huge segment directory delays no sample. */
void sampler_tick_if_due(void *sampler);
void sampler_read_segments(struct sampler *s, uint64_t now);
/* An instrumented worker's running fiber, read at this tick (one pread of
 * its slot) into its series; a slot that changed waits for the table. */
/* Reads w's hot slot fields at this tick: the running fiber into its series,
 * and its poll_since_ns (0 when unknown). */
uint64_t sampler_read_hot(struct sampler *s, struct sworker *w);
void sampler_add_target(struct sampler *s, struct sworker *w, int fd, uint64_t ino);
/* A new worker for (pid, tid), or NULL past max_workers (counted in *ignored). */
struct sworker *sampler_add_worker(struct sampler *s, pid_t pid, pid_t tid, const char *name, unsigned *ignored);
void sampler_free_workers(struct sampler *s);

#endif /* LOOPSTAT_SAMPLER_INT_H */
