/*
 * snapshot.h — what the sampler hands the model: a copy of every shown
 * worker's identity and series, taken under the sampler's lock in one
 * pass of memcpy, so that the model (and so every view) is computed
 * outside it and a heavy view never delays a tick.
 */
#ifndef LOOPSTAT_SNAPSHOT_H
#define LOOPSTAT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loopstat_shm.h"
#include "probe_access.h"
#include "probe_fd.h"
#include "probe_loop.h"
#include "probe_service.h"
#include "probe_sweep.h"
#include "probe_stat.h"
#include "collect/series.h"

#define SNAP_TARGETS 16   /* fds a worker recently blocked on, resolved */
#define SNAP_HELPERS 4    /* helper loops named per worker they fold into */
#define SNAP_SPENDERS 3   /* processes named spending a worker's cgroup's quota */
#define SNAP_CGROUP_LEN 128

struct snap_target {
	int  fd;
	char text[PROBE_TARGET_LEN];
};

/* What a loop is for (sampler_roles.c): the default views show servers. */
enum snap_role {
	SNAP_ROLE_UNKNOWN,       /* not judged yet (its first second) */
	SNAP_ROLE_SERVER,        /* instrumented, its process listens, or it runs in a unit or container */
	SNAP_ROLE_CLIENT,        /* only connections it opened, or none */
	SNAP_ROLE_INTERACTIVE,   /* it waits on a terminal: a shell, tmux */
	SNAP_ROLE_HELPER,        /* a process's secondary loop that waits only for wake-ups and does no work */
	SNAP_NROLES
};

/* "unknown", "server", "client", "interactive", "helper". Static. */
const char *snap_role_name(enum snap_role r);

#define SNAP_MEMBERS 16   /* a scheduler's threads named in a snapshot */

struct snap_member {              /* a thread of a scheduler's pool */
	pid_t    tid;
	char     name[16];            /* its comm */
	int      worker;              /* counted as capacity (tokio: not the blocking pool) */
	uint32_t n, busy;             /* its samples over the run, and those out of its park */
};

struct snap_worker {
	pid_t    pid, tid;
	char     name[PROBE_COMM_LEN];
	enum snap_role role;
	pid_t    helpers[SNAP_HELPERS];    /* its process's helper loops folded into it (not shown apart) */
	int      nhelpers;
	char     cgroup[SNAP_CGROUP_LEN];  /* its cgroup with a cpu controller ("/system.slice/x.service"), "" none */
	pid_t    spenders[SNAP_SPENDERS];  /* the processes spending that group's CPU, the largest first */
	int      nspenders;
	char     service[PROBE_SERVICE_LEN]; /* systemd unit, container, or the process name */
	char     tag[LOOPSTAT_TAG_LEN];
	int      instrumented;
	uint32_t backend;                /* enum loopstat_backend */
	int      gone, no_access;
	enum probe_loop_basis basis;     /* how its loop's poll is told apart */
	int      loop_fd;
	char     access_text[PROBE_ACCESS_TEXT_LEN];
	struct snap_target targets[SNAP_TARGETS];
	int      ntargets;
	/* a pooled runtime's scheduler row, or a loop (scheduler 0, capacity 1) */
	int      scheduler;
	int      runtime;                /* enum probe_rt */
	int      capacity;               /* threads' worth */
	int      cap_from;               /* enum probe_rt_cap */
	char     thread_name[16];        /* a loop's thread's comm, "" when not read */
	int      nmembers;
	struct snap_member members[SNAP_MEMBERS];
	struct series series;
};

/*
 * A helper pool of a worker's process (sampler_pools.c): the threads that
 * wait on one condition variable, or the busy helpers, with their samples
 * over the snapshot's window.
 */
#define SNAP_POOL_TIDS 64   /* thread ids named per pool; nthreads counts them all */
#define SNAP_POOLS_PER_PROC 64 /* pools named per process: a process may make one per thread */

enum snap_pool_kind {
	SNAP_POOL_CONDVAR,       /* threads seen waiting on the same futex key */
	SNAP_POOL_HELPERS,       /* threads never seen waiting, not loops, busy >= 90%: a saturated pool */
};

struct snap_pool {
	pid_t    pid;
	uint64_t key;            /* the futex address & ~7 (probe_sc_futex_wait); 0 for busy helpers */
	enum snap_pool_kind kind;
	unsigned nthreads;
	pid_t    tids[SNAP_POOL_TIDS];
	uint64_t n, busy;        /* its threads' samples in the window, and of them those not in its wait */
};

#define SNAP_REFUSED 16   /* refused processes named, with why */

struct snap_refusal {
	pid_t pid;
	char  text[PROBE_ACCESS_TEXT_LEN];   /* the reason and the fix (probe_access.h) */
};

struct snapshot {
	struct snap_worker *w;           /* owned; n used, cap allocated (reused across takes) */
	size_t   n, cap;
	uint64_t now_ns;                 /* on the series' clock */
	char     source[8];              /* "bpf" or "proc": what measured the figures */
	char     source_why[200];        /* why auto fell back to proc, "" when it did not */
	double   rate_hz;
	double   precision_pts;          /* the target half-width of idle%; 0: every thread at every tick */
	uint64_t total_samples;
	uint64_t tick_lag_max_ns;        /* the latest any tick started after its time, so far */
	struct snap_refusal refused[SNAP_REFUSED];
	unsigned nrefused;               /* processes with a refused thread (may exceed SNAP_REFUSED) */
	unsigned ignored;                /* threads turned away by the sampler's cap */
	int      servers_only;           /* only servers shown: */
	unsigned left_out[SNAP_NROLES];  /* loops not shown, by role */
	int      swept;                  /* the host is swept for loops: the counts below are its last sweep's */
	struct probe_sweep_counts sweep;
	size_t   max_workers;            /* that cap */
	unsigned naccessible;            /* threads sampled, shown or not, whose samples we could read */
	struct snap_pool *pools;         /* owned; npools used, poolcap allocated (reused across takes) */
	size_t   npools, poolcap;
	unsigned pool_threads_dropped;   /* threads of pools past SNAP_POOLS_PER_PROC, not in any */
};

void snapshot_done(struct snapshot *snap);

#endif /* LOOPSTAT_SNAPSHOT_H */
