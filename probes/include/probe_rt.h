/*
 * probe_rt.h — pooled runtimes recognised from outside: Go, tokio and the
 * JVM spread one scheduler over a pool of threads, so the pool, not each
 * thread, is the worker (design.md, "Worker kinds").
 *
 *   Go     the executable has a .go.buildinfo section. Capacity is
 *          GOMAXPROCS: the runtime's own runtime.gomaxprocs read with
 *          process_vm_readv where the symbol table names it (validated:
 *          1..PROBE_RT_MAX_CAPACITY, next to runtime.ncpu), else the
 *          GOMAXPROCS environment variable, else the CPU affinity (Go's own
 *          default). Every thread is an M; an M running Go code holds a P,
 *          so running threads are busy Ps and every wait (futex: stopm,
 *          epoll: the netpoller, nanosleep: sysmon) is idle capacity.
 *   tokio  threads named tokio-runtime-w(orker). Workers and the blocking
 *          pool share the name; a worker parks on a condvar with no timeout
 *          or in epoll_wait (it holds the I/O driver), a blocking-pool
 *          thread waits with a timeout (its keep-alive) or runs blocking
 *          work (sleeps, file reads): probe_rt_tokio_evidence. A worker out
 *          of its park is busy, in a syscall or not.
 *   JVM    the executable is named java. Netty's event loops
 *          (nioEventLoopGro..., epollEventLoopG...) stay one loop each
 *          (a hot connection pins to one loop) in a group named by their
 *          truncated thread name. ForkJoinPool workers ("ForkJoinPool-1-w",
 *          "ForkJoinPool.co") are a scheduler's pool, parked in futex when
 *          idle, busy running or in another syscall (a pinned carrier).
 *
 * Recognition reads the executable's ELF headers once per process and
 * never stops the target: no ptrace; memory only through process_vm_readv.
 */
#ifndef PROBE_RT_H
#define PROBE_RT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe_stat.h"
#include "probe_syscall.h"

#define PROBE_RT_MAX_CAPACITY 1024   /* a GOMAXPROCS beyond this is not believed */

/* The first three are schedulers or loop groups; the rest name a loop's
 * runtime only (by process name; fiberloop: a worker publishing a slot). */
enum probe_rt {
	PROBE_RT_UNKNOWN, PROBE_RT_GO, PROBE_RT_TOKIO, PROBE_RT_JVM,
	PROBE_RT_NODE, PROBE_RT_PYTHON, PROBE_RT_RUBY, PROBE_RT_FIBERLOOP, PROBE_RT_N
};

/* Where a scheduler's capacity came from. */
enum probe_rt_cap {
	PROBE_RT_CAP_NONE,       /* not known yet */
	PROBE_RT_CAP_SYMBOL,     /* the runtime's own variable (runtime.gomaxprocs) */
	PROBE_RT_CAP_ENV,        /* the GOMAXPROCS environment variable */
	PROBE_RT_CAP_AFFINITY,   /* the CPUs the process may run on */
	PROBE_RT_CAP_THREADS,    /* the pool's threads as seen (tokio's workers, a ForkJoinPool) */
};

struct probe_rt_proc {
	enum probe_rt rt;
	int      capacity;       /* threads' worth of capacity, 0: from the pool's threads */
	enum probe_rt_cap from;
	uint64_t gomaxprocs_addr; /* runtime.gomaxprocs in the target (non-PIE address), 0: none */
	uint64_t ncpu_addr;       /* runtime.ncpu, its validation */
};

/* "go", "tokio", "jvm", "node", "python", "ruby", "fiberloop", "unknown". Static. */
const char *probe_rt_name(enum probe_rt rt);
/* "runtime.gomaxprocs", "GOMAXPROCS", "cpu affinity", "threads", "-". Static. */
const char *probe_rt_cap_name(enum probe_rt_cap from);

/* Recognises pid's runtime: comm is its process name, first_thread the
 * comm of any thread seen (tokio names its threads, not its process).
 * Returns 0 with out filled (rt UNKNOWN when none), or -errno (-ESRCH gone). */
int probe_rt_detect(pid_t pid, const char *comm, struct probe_rt_proc *out);

/* Re-reads a Go process's capacity (a program may call GOMAXPROCS at run
 * time): the symbol, else the environment, else the affinity. 0 or -errno. */
int probe_rt_go_capacity(pid_t pid, struct probe_rt_proc *p);

/* Whether a thread of a process of runtime rt, named thread_comm, belongs
 * to its scheduler pool. */
int probe_rt_member(enum probe_rt rt, const char *thread_comm);

/* Whether a pooled thread's sample is idle capacity (parked), busy running,
 * or busy in a syscall (blocked while holding the capacity). */
enum probe_rt_state { PROBE_RT_IDLE, PROBE_RT_RUNNING, PROBE_RT_BLOCKED, PROBE_RT_UNSEEN };
enum probe_rt_state probe_rt_state_of(enum probe_rt rt, const struct probe_sc_sample *s);

/* tokio: what a sample of a tokio-runtime-w thread says about it: +1 a
 * worker's park, -1 the blocking pool's (a timed condvar wait or blocking
 * work), 0 nothing. */
int probe_rt_tokio_evidence(const struct probe_sc_sample *s);

/* JVM: whether a thread's name is an event loop's (Netty's NIO, epoll or
 * kqueue loop groups); its group is that name. */
int probe_rt_jvm_loop(const char *thread_comm);

/* Go: whether the executable of pid carries a .go.buildinfo section, and
 * where runtime.gomaxprocs and runtime.ncpu are when it has a symbol table.
 * 1 Go, 0 not Go, -errno. (rt_go.c) */
int probe_rt_go_exe(pid_t pid, struct probe_rt_proc *out);

#endif /* PROBE_RT_H */
