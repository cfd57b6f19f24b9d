/*
 * model.h — what every view shows: per-worker capacity figures over a
 * window, and fleet totals. model_build() makes a struct model from the
 * sampler's snapshot; views (tui, list, export, check, profile) only read
 * it, through the metric table (metric.h), and never sample or compute.
 *
 * Units: percentages are 0..100; rates are per second of wall time; NaN
 * means "not known" (no samples yet, not instrumented, or unbounded).
 */
#ifndef LOOPSTAT_MODEL_H
#define LOOPSTAT_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loopstat_shm.h"
#include "probe_access.h"
#include "probe_rt.h"
#include "probe_fd.h"
#include "probe_service.h"
#include "probe_sweep.h"
#include "probe_shm.h"
#include "probe_stat.h"
#include "model/metric_table.h"

#define MODEL_BLOCKERS    5    /* top blocking (syscall, fd) pairs kept per worker */
#define MODEL_HISTORY     300  /* seconds of per-second idle history */
#define MODEL_TARGET_LEN  PROBE_TARGET_LEN
#define MODEL_REFUSED     16   /* refused processes named in the model */
#define MODEL_LAG_OCTAVES 16   /* the busy-span histogram's octaves, from 2^MODEL_LAG_SHIFT ns */
#define MODEL_LAG_SHIFT   17
#define MODEL_NROLES      5    /* loops' roles as snapshot.h numbers them, for the counts of those left out */
#define MODEL_ROLE_SERVER 1    /* of them, the one shown by default */
#define MODEL_HELPERS     4    /* helper loops named per worker they fold into */
#define MODEL_SPENDERS    3    /* processes named spending a cgroup's quota */
#define MODEL_CGROUP_LEN  128

struct blocker_view {
	long   nr;                        /* syscall number */
	char   syscall[32];               /* its name, or "syscall_<nr>" */
	int    fd;                        /* fd argument, -1 if the syscall takes none */
	char   target[MODEL_TARGET_LEN];  /* what the fd is ("pipe:[123]", "tcp 1.2.3.4:5 -> ..."), "" if none */
	double pct;                       /* share of the window's samples */
};

/* One key of the run's breakdown: a class, and for idle and blocked samples
 * the syscall, fd and pc, with the running fiber (profile, detail). */
struct key_view {
	const char *cls;                  /* "idle", "running", "blocked", "other" (static) */
	long     nr;                      /* syscall, -1 for running and other */
	char     syscall[32];             /* its name, "" when nr < 0 */
	int      fd;
	char     target[MODEL_TARGET_LEN];
	uint64_t pc, sp;                  /* pc is of the key, sp the last seen under it */
	char     fiber[LOOPSTAT_TAG_LEN]; /* the running fiber's tag, "" when none or unknown */
	double   pct;                     /* share of the run's samples */
};

#define MODEL_KEYS 16

/* A stall as views show it (collect/series.h's struct series_stall). */
struct stall_view {
	double   t_s;                     /* when captured, seconds since sampling began */
	double   dur_ms;                  /* out of the poll when captured; the span's length once it ended */
	int      ended;                   /* the span ended: dur_ms is its whole length */
	double   lo_ms, hi_ms;            /* once ended, the least and most it can have lasted */
	const char *state;                /* "running", "blocked", "other" (static) */
	char     syscall[32];             /* its name, "" when not in one */
	int      fd;                      /* the syscall's fd argument, -1 when none */
	char     target[MODEL_TARGET_LEN]; /* what the fd is, "" when unknown */
	char     fiber[LOOPSTAT_TAG_LEN]; /* the running fiber's tag, "" when none */
	const char *stack_from;           /* "syscall" (sp/pc of the syscall file), "perf" (a cpu-clock sample), "none" (static) */
	char     why[SERIES_STALL_WHY];   /* why there is no stack, "" when there is */
	int      nframes;
	char     frames[SERIES_STALL_FRAMES][SERIES_FRAME_LEN]; /* innermost first */
};

#define MODEL_POOL_TIDS 64
#define MODEL_MEMBERS   16   /* a scheduler's threads named */

/* A helper pool of a worker's process (collect/sampler_pools.c). */
struct pool_view {
	pid_t    pid;
	uint64_t key;                     /* the futex address & ~7 its threads wait on; 0 for busy helpers */
	const char *kind;                 /* "condvar" or "busy_helpers" (static) */
	unsigned nthreads;                /* its threads; the first MODEL_POOL_TIDS in tids */
	pid_t    tids[MODEL_POOL_TIDS];
	double   busy_pct;                /* its threads' samples out of its wait over the window, NaN: none */
};

/* What bounds a worker's sustainable rate (JSON's headroom_bound). */
enum model_bound { MODEL_BOUND_NONE, MODEL_BOUND_LOOP, MODEL_BOUND_QUOTA, MODEL_BOUND_POOL };
/* A thread of a scheduler's pool (collect/sampler_sched.c). */
struct member_view {
	pid_t    tid;
	char     name[16];                /* its comm */
	int      worker;                  /* counted as capacity (tokio: not its blocking pool) */
	double   busy_pct;                /* its samples out of its park over the run, NaN: none */
};

struct worker_view {
	pid_t    pid, tid;                /* a scheduler's tid is 0: the row is its pool */
	char     name[PROBE_COMM_LEN];    /* process name (comm) */
	const char *role;                 /* "server", "client", "interactive", "helper", "unknown" (static) */
	pid_t    helpers[MODEL_HELPERS];  /* its process's helper loops folded into it */
	int      nhelpers;
	char     cgroup[MODEL_CGROUP_LEN]; /* its cgroup with a cpu controller, "" none or unknown */
	pid_t    quota_spenders[MODEL_SPENDERS]; /* the processes spending its CPU, the largest first */
	int      nquota_spenders;
	int      quota_shared;            /* its process only shares the quota others spend: never held back by it */
	double   accept_queue_held;       /* its accept queue at its last two readings, the lesser (NaN: none):
	                                   * the backlog verdict needs a queue that does not drain */
	char     service[PROBE_SERVICE_LEN]; /* its systemd unit, container or process name */
	char     tag[LOOPSTAT_TAG_LEN];   /* thread tag, "" if none */
	int      instrumented;            /* publishes a shm slot */
	int      exact;                   /* its class counts were measured exactly, not sampled (a source that
	                                   * measures so, or the kernel's counts under bpf): its ± is 0 */
	const char *kind;                 /* "loop" (one thread) or "scheduler" (a runtime's pool) (static) */
	const char *runtime;              /* probe_rt_name of its process: "go", "tokio", "jvm", "unknown" (static) */
	int      threads;                 /* its capacity in threads: 1 for a loop, GOMAXPROCS, tokio's workers */
	const char *threads_from;         /* where that came from (probe_rt_cap_name) (static) */
	char     thread_name[16];         /* a loop's thread name where it has one ("nioEventLoopGro"), else "" */
	char     group[16];               /* a loop group's name (Netty's loops), "" when none */
	struct member_view members[MODEL_MEMBERS]; /* a scheduler's threads */
	int      nmembers;
	const char *backend;              /* "io_uring", "libev", "none" (static) */
	int      gone;                    /* task exited; kept a few seconds, then dropped */
	char     loop_basis[64];          /* how its loop's poll is told apart: "epoll fd 7", "plain poll loop ..." */
	int      no_access;               /* /proc refused us: access_text says why and how to fix it */
	char     access_text[PROBE_ACCESS_TEXT_LEN];

	struct blocker_view blocked_top[MODEL_BLOCKERS]; /* the largest (syscall, fd) keys */
	int      nblocked_top;
	uint64_t totals[PROBE_SHM_NVALUES]; /* instrumented: the slot's raw latest values */
	uint64_t shortcut_samples;        /* idle samples counted from the slot without a /proc read (run total) */
	uint64_t unchanged_samples;       /* samples reused, schedstat showing the thread had not run (run total) */
	char     fiber_tag[LOOPSTAT_TAG_LEN]; /* tag of the running fiber at the last reading */

	/* every row of the metric table (metric_table.c: its unit and meaning);
	 * NaN: not known (no samples, not instrumented, unbounded) */
#define MODEL_X_FIELD(name, type) METRIC_CTYPE_##type name;
	METRIC_WORKER_IDS(MODEL_X_FIELD)

	float    idle_history[MODEL_HISTORY]; /* per-second idle%, oldest first; NaN = no samples */
	int      nhistory;

	/* the busy spans' histogram (model/lag.h): octave i counts spans of
	 * 2^(MODEL_LAG_SHIFT + i) ns up to twice that, the first also every
	 * shorter one, the last every longer one */
	double   lag_octaves[MODEL_LAG_OCTAVES];
	int      lag_exact;               /* from the runtime's slot or the kernel (bpf), else sampled */
	char     lag_why[200];            /* why a lag_* row the samples cannot resolve is unknown
	                                   * ("lag_p99_ms: ..."), "" when every one is known */

	struct stall_view stall_log[SERIES_STALLS]; /* the last stalls captured, newest first */
	int      nstall_log;

	struct key_view keys[MODEL_KEYS];  /* the run's largest keys, largest first */
	int      nkeys;
	double   keys_unkeyed_pct;        /* of the run's samples, beyond the key table's room */

	enum model_bound headroom_bound;  /* which bound headroom_ops_per_s is the tightest of */
	const struct pool_view *pools;    /* its process's helper pools, borrowed from the model; npools */
	int      npools;
};

struct fleet_view {
	/* every fleet row of the metric table */
	METRIC_FLEET_IDS(MODEL_X_FIELD)
#undef MODEL_X_FIELD
	float    idle_history[MODEL_HISTORY]; /* per-second mean idle%, oldest first */
	int      nhistory;
};

/* A service's workers rolled up by the fleet rows of the metric table. */
struct service_view {
	char     name[PROBE_SERVICE_LEN];
	struct fleet_view f;
};

struct model {
	struct worker_view *workers;     /* owned; n entries, sorted by (pid, tid) */
	size_t   n;
	struct fleet_view fleet;
	struct service_view *services;   /* owned; nservices, by name */
	size_t   nservices;
	double   rate_hz;                /* target sampling rate */
	char     source[8];              /* "bpf" or "proc": what measured the figures */
	char     source_why[200];        /* why auto fell back to proc, "" when it did not */
	double   precision_pts;          /* target half-width of idle%, points; 0: every thread at every tick */
	double   window_s;               /* window the figures cover */
	double   elapsed_s;              /* since sampling started */
	uint64_t total_samples;          /* all samples taken, all workers */
	double   tick_lag_max_ms;        /* the latest a sampler tick started after its time */
	struct model_refusal {
		pid_t pid;
		char  text[PROBE_ACCESS_TEXT_LEN];
	} refused[MODEL_REFUSED];        /* processes /proc refused us, first MODEL_REFUSED */
	unsigned nrefused;               /* how many (may exceed MODEL_REFUSED) */
	unsigned ignored;                /* threads not sampled: more than max_workers, or past the sweep's tables */
	int      servers_only;           /* only servers are shown (no -p, -n or --all): */
	unsigned left_out[MODEL_NROLES]; /* the loops left out, by role (model_role_name) */
	int      swept;                  /* the host was swept for loops: */
	struct probe_sweep_counts sweep; /* what its last sweep saw */
	size_t   max_workers;
	unsigned naccessible;            /* threads sampled, worker or not, that we could read */
	struct pool_view *pools;         /* owned; npools, grouped by pid */
	size_t   npools;
};

/* The name of role r, as a worker's role says it. Static. */
const char *model_role_name(int r);

/* Loops left out of m (not servers, without --all). */
unsigned model_left_out(const struct model *m);

/* Why threads are not shown: the cap (--max-workers, or the sweep's
 * tables), their role (loops not shown without --all), or access (the
 * processes /proc refused, counted as processes). One table for list's
 * "ignored_by" and /metrics' loopstat_ignored_threads{reason}. */
enum { MODEL_IGNORED_CAP, MODEL_IGNORED_ROLE, MODEL_IGNORED_ACCESS, MODEL_NIGNORED };
/* The reason's name ("cap", "role", "access"). Static. */
const char *model_ignored_reason(int r);
/* How many were left out of m for reason r. */
unsigned model_ignored(const struct model *m, int r);

/* "3 loops left out: 1 client, 2 interactive (--all shows them)", "" when
 * none was. Returns buf. */
char *model_left_out_text(const struct model *m, char *buf, size_t len);

void model_done(struct model *m);

/* Seconds the figures cover: the window, or the whole run. */
double model_span_s(const struct model *m);

/* How the figures were sampled, for a header or a footer: "100 Hz, +-2
 * pts" (precision-targeted) or "100 Hz, every tick". */
void model_sampling_text(const struct model *m, char *buf, size_t len);

/* "name", "name/tag" when the worker has a tag other than its name, or
 * "name (thread)" when its thread has a name of its own: every view writes
 * a worker's name this one way. */
void model_worker_name(const struct worker_view *w, char *buf, size_t len);

/* Wilson score interval half-width for a proportion p of n samples, in points (0..100). */
double model_ci95_pts(double p, uint64_t n);

/* count of basis samples as a percentage, its Wilson half-width in *ci95
 * (may be NULL); NaN for both when basis is 0. profile's stacks use it. */
double model_share_pct(uint64_t count, uint64_t basis, double *ci95);

/* A node's share of its thread's wall time by the one split (eval_split),
 * as list reads it: off_count of the thread's n_off samples off the CPU
 * and run_count of its n_run running ones, with schedstat's runnable share
 * (NaN: unknown, every sample then counts alike). In percent, the parts'
 * intervals in quadrature in *ci95 (may be NULL); NaN without samples. */
double model_split_share_pct(uint64_t off_count, uint64_t run_count, uint64_t n_off, uint64_t n_run,
			     double runnable, double *ci95);

/* ops/s ÷ (1 − idle), NaN when idle ≥ 99% or ops unknown. */
double model_headroom(double ops_per_s, double idle_pct);

/*
 * The sustainable rate of a worker doing ops_per_s: the tightest of
 *   loop   ops ÷ (1 − idle)                  (none at idle >= 99%)
 *   quota  ops × quota_cpus ÷ (cpu_pct/100)  (its CPU time scaled up to the quota)
 *   pool   ops ÷ (pool_busy_pct/100)         (its busiest pool saturated)
 * each bound known only when its figures are (NaN: unknown); which one in
 * *which (may be NULL). NaN and NONE when no bound is known. The one place
 * headroom is computed: the evaluator's row and the JSON's bound use it.
 */
double model_headroom_bound(double ops_per_s, double idle_pct, double quota_cpus, double cpu_pct,
			    double pool_busy_pct, enum model_bound *which);

/* "loop", "quota", "pool"; NULL for NONE. Static. */
const char *model_bound_name(enum model_bound b);

#endif /* LOOPSTAT_MODEL_H */
