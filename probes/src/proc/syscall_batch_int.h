/*
 * syscall_batch_int.h — the batch's state, shared by the sampling code
 * (syscall_batch.c) and the io-wq thread accounting (syscall_batch_iowq.c).
 */
#ifndef PROBE_SYSCALL_BATCH_INT_H
#define PROBE_SYSCALL_BATCH_INT_H

#include "probe_syscall_batch.h"

#include <liburing.h>
#include <sys/types.h>

#define IOWQ_TRACK_MAX 64

struct iowq_seen {
	pid_t    tid;
	uint64_t cpu_ns; /* its thread CPU clock when last read */
};

struct probe_sc_batch {
	struct io_uring ring;
	int       ring_ok;     /* 1, or the -errno that ruled the ring out */
	int       leak_bufs;   /* reads may still land in bufs: never free them */
	unsigned  nfiles;      /* size of the registered file table (0: none yet) */
	uint64_t *reg_serial;  /* per table slot: serial of the probe whose file is there, 0: unknown */
	int      *upd;         /* scratch for table updates, nfiles long */
	unsigned  reg_used;    /* slots at and above this hold no file */
	char     *bufs;        /* cap read buffers of PROBE__SC_BUF_LEN bytes */
	size_t    cap;
	pid_t     submitter;   /* tid that last submitted: its io-wq does the reads */
	int       defer;       /* DEFER_TASKRUN ring: only its owner may submit */
	pid_t     owner;       /* the thread that enabled it (0: not yet) */
	uint64_t  sleep_per_read; /* ns to sleep per read before collecting (adaptive) */

	uint64_t  iowq_total;  /* ns, accumulated over io-wq threads seen */
	struct iowq_seen seen[IOWQ_TRACK_MAX];
	int       nseen;

	enum probe_sc_path path;      /* asked: AUTO, or forced */
	enum probe_sc_path last_path; /* what the last sample used */
	struct probe_sc_choice choice;
	probe_sc_cost_fn cost_fn;     /* tests: made-up costs instead of measured */
	void     *cost_arg;
};

/* One tick on path p (RING falls back to pread as it must), setting
 * last_path. syscall_batch.c. */
void probe__sc_batch_run(struct probe_sc_batch *b, enum probe_sc_path p, struct probe_syscall *const *probes,
			 size_t n, struct probe_sc_sample *out, int *rc);

#endif /* PROBE_SYSCALL_BATCH_INT_H */
