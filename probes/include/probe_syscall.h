/*
 * probe_syscall.h — sampling /proc/PID/task/TID/syscall.
 *
 * The file is opened once per task and re-read with pread(fd, buf, n, 0):
 * the kernel regenerates its content on every read at offset 0, so a sample
 * costs one syscall and a parse that never allocates.
 *
 * The open fd is bound to the task, not to its number: once the task has
 * exited, reads fail with ESRCH (GONE) even if the tid is reused, so a
 * probe never silently samples a different task.
 *
 * A probe belongs to one thread at a time; different probes may be sampled
 * from different threads without locking.
 *
 * Content, as the kernel prints it (nr in decimal, the rest in hex):
 *   "running"                          the task is runnable (on a CPU or queued)
 *   "-1 0xSP 0xPC"                     blocked outside a syscall (stopped, page fault)
 *   "NR 0xA0 .. 0xA5 0xSP 0xPC"        inside syscall NR with its six arguments
 */
#ifndef PROBE_SYSCALL_H
#define PROBE_SYSCALL_H

#include <stdint.h>
#include <sys/types.h>

enum probe_sc_state {
	PROBE_SC_RUNNING = 1,    /* "running" */
	PROBE_SC_IN_SYSCALL,     /* nr, args, sp, pc valid */
	PROBE_SC_NOT_IN_SYSCALL, /* "-1": sp, pc valid */
	PROBE_SC_GONE,           /* the task exited (ESRCH, ENOENT, empty, or a zombie) */
	PROBE_SC_NO_ACCESS,      /* EACCES / EPERM: see probe_no_access_text() */
};

struct probe_sc_sample {
	enum probe_sc_state state;
	long     nr;      /* syscall number of the running architecture; -1 unless IN_SYSCALL */
	uint64_t args[6]; /* raw argument registers; 0 unless IN_SYSCALL */
	uint64_t sp, pc;  /* user stack and program counter; 0 when RUNNING/GONE/NO_ACCESS */
};

/* An open probe on one task; embedded by the caller (_open/_close). */
struct probe_syscall {
	int   fd;  /* the syscall file, or -1 when it could not be opened */
	pid_t pid; /* thread group id */
	pid_t tid; /* task id */
	int   err; /* why fd is -1: -ESRCH, -EACCES, ... (0 when open) */
	uint64_t serial; /* unique per open, never reused: lets a batch tell a
	                  * re-opened probe from the file it registered even when
	                  * the fd number (or the struct's address) comes back */
	uint32_t fdb;    /* its entry in the fd budget (probe_fdbudget.h), 0 none:
	                  * the budget may close fd, and the next sample reopens it */
};

/* Opens <root>/PID/task/TID/syscall. Always fills p, so that a task that is
 * gone or not accessible can still be sampled (it reports GONE / NO_ACCESS).
 * Returns 0, or the -errno of the open (also kept in p->err). */
int probe_syscall_open(struct probe_syscall *p, pid_t pid, pid_t tid);

/* Closes the file; p may be sampled again only after another open. */
void probe_syscall_close(struct probe_syscall *p);

/* One sample: pread + parse, no allocation. GONE and NO_ACCESS are states,
 * not errors. Returns 0, -EINVAL when the content is malformed, or another
 * -errno from pread. */
int probe_syscall_sample(struct probe_syscall *p, struct probe_sc_sample *out);

/* Parses len bytes of syscall-file text (need not be NUL-terminated).
 * len == 0 means GONE. Returns 0 or -EINVAL. */
int probe_syscall_parse(const char *buf, size_t len, struct probe_sc_sample *out);

/*
 * A sample parked in a futex wait, any flags: PROBE_FUTEX_WAIT (FUTEX_WAIT:
 * a glibc mutex, or musl's condvar) or PROBE_FUTEX_WAIT_BITSET (glibc's
 * condvar, semaphores, joins), and the wait's pool key in *key; else 0.
 * The key is the futex
 * address with its low three bits cleared, because a glibc condition
 * variable's waiters sleep on one of two words 4 bytes apart. glibc 2.36's
 * struct __pthread_cond_s (sysdeps/nptl/bits/thread-shared-types.h) is
 *   __wseq (8) __g1_start (8) __g_refs[2] (8) __g_size[2] (8)
 *   __g1_orig_size (4) __wrefs (4) __g_signals[2] (8)
 * and pthread_cond_wait blocks in FUTEX_WAIT_BITSET on __g_signals[g] for
 * its group g (0 or 1): offsets 40 and 44 of an 8-aligned object, so both
 * groups' waiters share addr & ~7 and no other condvar's word can.
 * musl waits on one word, libuv's uv_cond_wait is pthread_cond_wait.
 */
enum { PROBE_FUTEX_WAIT = 1, PROBE_FUTEX_WAIT_BITSET };
int probe_sc_futex_wait(const struct probe_sc_sample *s, uint64_t *key);

/* Maps the -errno of an open or a read to GONE / NO_ACCESS, or 0 when the
 * error is neither. */
enum probe_sc_state probe_sc_state_of_error(int err);

/* The one text to show for NO_ACCESS: what is wrong and how to fix it. */
const char *probe_no_access_text(void);

#endif /* PROBE_SYSCALL_H */
