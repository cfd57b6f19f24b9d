/*
 * profile_rec.h — one profile sample with everything already resolved to
 * text (thread, syscall, fd target, fiber, stack frames), the recording
 * file that keeps a stream of them (`loopstat record`), and the
 * accumulator that turns a stream into a struct profile_tree — the same
 * code for a live profile and for `loopstat report`, so both give the
 * same report from the same samples.
 *
 * Recording format, version 1: UTF-8 text, one record a line, fields
 * separated by one space, strings interned once:
 *
 *   loopstat-record 1                       first line; other majors are refused
 *   m KEY VALUE...                          metadata: rate_hz, start_unix, host, title;
 *                                           duration_s comes last, after the events
 *   s ID TEXT                               string ID (1, 2, ... in order) is TEXT to the end of the line
 *   e T PID TID INST CLS NR FD RUN WAIT SP PC SW THREAD SYSCALL TARGET FIBER NFRAMES FRAME...
 *
 * e is one sample: T ns since the recording started, INST 1 for an
 * instrumented worker, CLS the sampler's class (enum probe_class, 1..4),
 * NR/FD the syscall and fd (-1 none), RUN/WAIT the thread's schedstat
 * totals (ns) at their last reading, SP/PC in hex, SW the runtime's switch
 * counter (0 when not instrumented), then string ids
 * (0: none) of the thread label, syscall name, fd target label, running
 * fiber's tag and NFRAMES frame labels, innermost first. Strings are
 * sanitised like tree labels (profile_sanitize), so they hold no newline.
 * Unknown record letters are skipped (newer minors may add some).
 */
#ifndef LOOPSTAT_PROFILE_REC_H
#define LOOPSTAT_PROFILE_REC_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "probe_classify.h"
#include "profile_tree.h"

#define PROFILE_REC_VERSION 1

struct profile_event {
	uint64_t t_ns;               /* since sampling started */
	pid_t    pid, tid;
	int      instrumented;
	enum probe_class cls;        /* POLL, RUNNING, BLOCKED or OTHER */
	long     nr;                 /* syscall, -1 none */
	int      fd;                 /* its fd argument, -1 none */
	uint64_t run_ns, wait_ns;    /* schedstat totals at their last reading (0 before one) */
	uint64_t sp, pc;
	uint64_t switches;           /* the slot's switch counter, 0 if not instrumented */
	const char *thread;          /* "PID/TID name"; required */
	const char *syscall;         /* NULL: none */
	const char *target;          /* the tree's target label, NULL: none */
	const char *fiber;           /* NULL: not instrumented */
	const char *const *frames;
	int      nframes;
};

struct profile_rec_meta {
	double   rate_hz;
	double   start_unix;         /* wall clock at the start, seconds */
	double   duration_s;         /* wall time sampled (written at the end; 0 if cut short) */
	char     host[64];
	char     title[128];
};

/* ---- writing ---- */
struct profile_rec_writer;

/* Starts a recording on f (borrowed; the caller closes it) with its header. */
struct profile_rec_writer *profile_rec_writer_new(FILE *f, const struct profile_rec_meta *meta);
/* Appends one event. 0, -ENOMEM or -EIO. */
int  profile_rec_write(struct profile_rec_writer *w, const struct profile_event *ev);
/* Writes the trailer (duration_s, in ms precision), flushes; returns 0 or
 * -EIO when any write failed. Frees w. */
int  profile_rec_writer_end(struct profile_rec_writer *w, double duration_s);

/* ---- reading ---- */
/* Calls fn for every event of the recording on f, in order, after filling
 * *meta from the header. Returns 0, -EPROTO (not a recording, a newer
 * major, a malformed line: *line says which), -ENOMEM, or what fn returned
 * when it was < 0 (which stops the read). */
int  profile_rec_read(FILE *f, struct profile_rec_meta *meta, int (*fn)(void *arg, const struct profile_event *ev),
		      void *arg, long *line);

/* ---- the accumulator: events -> tree ---- */
struct profile_acc;

/* The tree is split by fiber when the first event is of an instrumented worker. */
#define PROFILE_ACC_AUTO_FIBER 0x100u

/* flags as profile_tree_new's, or PROFILE_ACC_AUTO_FIBER. NULL with errno set. */
struct profile_acc *profile_acc_new(unsigned flags);
void profile_acc_delete(struct profile_acc *a);

/*
 * Adds one event: POLL is idle, BLOCKED and OTHER blocked, RUNNING on CPU
 * or waiting for one. A RUNNING sample is held until its thread's next
 * schedstat reading and then split between the two in the ratio of that
 * interval's Δrun_delay to Δsum_exec_runtime (spread evenly, deterministic).
 * 0, -EINVAL or -ENOMEM.
 */
int  profile_acc_add(struct profile_acc *a, const struct profile_event *ev);

/* Settles the held samples (with their thread's last ratio) and returns
 * the tree, still owned by a. */
struct profile_tree *profile_acc_finish(struct profile_acc *a);

/* The stall lint, per thread and fiber tag: the longest stretch the
 * runtime's switch counter stood still while the thread was seen outside
 * its poll (tokio-console's "never yielded"), from the first to the last
 * sample of it, attributed to the fiber running at its start. */
struct profile_stall {
	const char *thread;          /* borrowed from the accumulator */
	const char *fiber;           /* "" untagged */
	uint64_t longest_ns;
	uint64_t runs;               /* stretches seen */
};
/* Up to max stalls, longest first; returns how many there are. */
int  profile_acc_stalls(const struct profile_acc *a, struct profile_stall *out, int max);
/* "longest run without a switch" lines for the text report (none when no
 * worker was instrumented). 0 or -EIO. */
int  profile_acc_write_stalls(const struct profile_acc *a, FILE *f);

/* Samples added, and the first and last t_ns seen. */
uint64_t profile_acc_samples(const struct profile_acc *a, uint64_t *first_ns, uint64_t *last_ns);

#endif /* LOOPSTAT_PROFILE_REC_H */
