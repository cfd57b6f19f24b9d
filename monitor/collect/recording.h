/*
 * recording.h — one sample with everything already resolved to text
 * (thread, syscall, fd target, fiber, stack frames), and the recording file
 * that keeps a stream of them (`loopstat record`). profile's accumulator
 * (profile/profile_acc.h) turns a stream into a tree, the same code for a
 * live profile and for `loopstat report`, and `top --replay` reads the
 * same stream (replay.h).
 *
 * Recording format, version 1: UTF-8 text, one record a line, fields
 * separated by one space, strings interned once:
 *
 *   loopstat-record 1                       first line; other majors are refused
 *   m KEY VALUE...                          metadata: rate_hz, start_unix, host, title;
 *                                           duration_s comes last, after the events
 *   s ID TEXT                               string ID (1, 2, ... in order) is TEXT to the end of the line
 *   e T PID TID INST CLS NR FD RUN WAIT SP PC SW THREAD SYSCALL TARGET FIBER NFRAMES FRAME...
 *   k DUR T PID TID INST CLS ...            a stall caught (collect/sampler_stall.c): DUR ms out
 *                                           of the poll, then an e record's fields (CLS its state,
 *                                           FRAMES its stack); readers older than it skip it
 *   w PID TID SERVICE                       the thread's service from here on (string id: its
 *                                           systemd unit, container or process name), written
 *                                           before its first event and again when it changes;
 *                                           readers older than it skip it, and a thread without
 *                                           one (a recording older than it) has no service: its
 *                                           process name stands in, as it does live
 *   t T PID TID TEXT                        a flight recorder's trigger (loopstat record --ring):
 *                                           at T ns the worker PID/TID met TEXT (a threshold,
 *                                           or "SIGUSR2" for a dump on demand; PID 0 for none);
 *                                           readers older than it skip it
 *   l V T PID TID LIMIT READING             a flight recorder's limit reading: the worker's limit
 *                                           verdict over the second that began at T (model/limit.h;
 *                                           LIMIT none, loop, quota, cpu, backlog or pool) and the
 *                                           figure of the rule that decided it (quota: its
 *                                           throttled share, cpu: its CPU wait, loop and none: its
 *                                           idle share, pool: the pool's busy share, backlog: the
 *                                           accept queue), '-' when unknown. V is the line's own
 *                                           version (REC_LIMIT_VERSION): a reader skips a version
 *                                           it does not know, and readers older than it skip it
 *
 * e is one sample: T ns since the recording started, INST 1 for an
 * instrumented worker, CLS the sampler's class (enum probe_class, 1..4),
 * NR/FD the syscall and fd (-1 none), RUN/WAIT the thread's schedstat
 * totals (ns) at their last reading, SP/PC in hex, SW the runtime's switch
 * counter (0 when not instrumented), then string ids
 * (0: none) of the thread label, syscall name, fd target label, running
 * fiber's tag and NFRAMES frame labels, innermost first. Strings are
 * sanitised like tree labels (textsafe_label), so they hold no newline.
 * A reader hands every event its thread's service as the last "w" record
 * before it set it (rec_event.service).
 * Unknown record letters are skipped (newer minors may add some).
 */
#ifndef LOOPSTAT_RECORDING_H
#define LOOPSTAT_RECORDING_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "probe_classify.h"

#define REC_VERSION 1
#define REC_LABEL_MAX  640   /* a string is cut to this (at a character boundary), as tree labels */
#define REC_MAX_FRAMES 128   /* frames kept per event */

/* What a reader takes at most, so that a hostile or broken file costs
 * memory and time linear in its size: beyond these, rec_read returns
 * -E2BIG with the line. A written line is at most ~1.5 KB (128 frames of
 * 10-digit ids), a string REC_LABEL_MAX bytes. */
#define REC_MAX_LINE    8192
#define REC_MAX_STRINGS (1u << 20)
#define REC_MAX_THREADS (1u << 18)   /* threads given a service ("w") */
#define REC_MAX_TRIGGERS 16          /* triggers a reader keeps ("t"); more are counted */
#define REC_TRIGGER_LEN  128

struct rec_event {
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
	uint32_t stall_ms;           /* > 0: not a sample but a stall captured ("k"), this long out of the poll */
	const char *service;         /* the thread's service ("w"); NULL: not recorded (the name stands in) */
};

/* A flight recorder's trigger ("t"). */
struct rec_trigger {
	uint64_t t_ns;               /* on the events' clock */
	pid_t    pid, tid;           /* the worker that met it; 0: none (a dump on demand) */
	char     text[REC_TRIGGER_LEN]; /* the threshold as written, or "SIGUSR2" */
};

/* A limit reading ("l"). */
#define REC_LIMIT_VERSION 1
#define REC_LIMIT_LEN     16         /* the verdict's word, with its NUL */
#define REC_MAX_LIMITS    64         /* (worker, verdict) tallies a reader keeps; more are counted */
struct rec_limit {
	uint64_t t_ns;               /* the second's start, on the events' clock */
	pid_t    pid, tid;
	char     limit[REC_LIMIT_LEN]; /* "quota": lowercase letters */
	double   reading;            /* the deciding rule's figure; NaN: unknown */
};

/* A reader's tally of one worker's seconds under one verdict. */
struct rec_limit_tally {
	pid_t    pid, tid;
	char     limit[REC_LIMIT_LEN];
	unsigned seconds;            /* lines read */
	unsigned nread;              /* of those with a reading */
	double   reading_sum, reading_max;
	uint64_t first_ns, last_ns;
};

struct rec_meta {
	double   rate_hz;
	double   start_unix;         /* wall clock at the start, seconds */
	double   duration_s;         /* wall time sampled (written at the end; 0 if cut short) */
	char     host[64];
	char     title[128];
	/* set by rec_read: the file ends without its trailer (a signal, a full
	 * disk); its complete records were read, a partial last line skipped */
	int      cut;
	uint64_t last_t_ns;          /* the last event's time */
	/* a flight recorder's dump: what triggered it (the first REC_MAX_TRIGGERS) */
	struct rec_trigger triggers[REC_MAX_TRIGGERS];
	unsigned ntriggers;          /* kept in triggers[] */
	unsigned triggers_seen;      /* in the file, kept or not */
	double   ring_s;             /* the span the ring held before the first trigger; 0: not a dump */
	/* its limit readings ("l"), tallied per worker and verdict in the order first seen */
	struct rec_limit_tally limits[REC_MAX_LIMITS];
	unsigned nlimits;            /* kept in limits[] */
	unsigned limits_seen;        /* lines of a known version, kept or not */
	unsigned limits_unkept;      /* of those, of tallies past REC_MAX_LIMITS */
};

/* ---- writing ---- */
struct rec_writer;

/* Starts a recording on f (borrowed; the caller closes it) with its header. */
struct rec_writer *rec_writer_new(FILE *f, const struct rec_meta *meta);
/* Appends one event. 0, -ENOMEM, or the first failed write's -errno
 * (-ENOSPC...; -EIO when the cause is unknown). */
int  rec_write(struct rec_writer *w, const struct rec_event *ev);
/* Appends a trigger record ("t"); returns as rec_write. */
int  rec_write_trigger(struct rec_writer *w, const struct rec_trigger *t);
/* Appends a limit reading ("l"); -EINVAL for a verdict that is not a
 * lowercase word, else as rec_write. */
int  rec_write_limit(struct rec_writer *w, const struct rec_limit *l);
/* Appends metadata "m KEY VALUE" (a number, %.3f); returns as rec_write. */
int  rec_write_meta(struct rec_writer *w, const char *key, double value);
/* Writes the trailer (duration_s, in ms precision), flushes; returns 0 or
 * the first failed write's -errno, as rec_write. Frees w. */
int  rec_writer_end(struct rec_writer *w, double duration_s);

/* ---- reading ---- */
/* Calls fn for every event of the recording on f, in order, after filling
 * *meta from the header. Returns 0, -EPROTO (not a recording, a newer
 * major, a malformed line: *line says which), -EILSEQ (a NUL byte in
 * line *line), -E2BIG (past a REC_MAX_
 * cap, *line says where), -ENOMEM, or what fn returned when it was < 0
 * (which stops the read). A recording cut short reads as
 * far as its last complete line, with meta->cut set. */
int  rec_read(FILE *f, struct rec_meta *meta, int (*fn)(void *arg, const struct rec_event *ev),
		      void *arg, long *line);

/* What a format error of rec_read (-EPROTO, -EILSEQ) means, for a
 * "FILE:LINE: ..." message; NULL for any other error. */
const char *rec_format_error(int err);

#endif /* LOOPSTAT_RECORDING_H */
