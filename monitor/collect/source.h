/*
 * source.h — where the per-thread figures come from: the live /proc
 * sampler (source_proc_open), a replayed recording (replay.h), and next
 * kernel tracepoints or a pooled runtime's readings. The feed (model/feed.h)
 * drives any of them the same way and never names one; a new source is one
 * file set that fills a struct source (docs/design.md, "Sources").
 *
 * What a source must provide, per thread and per period (one second of a
 * struct series, collect/series.h), through snapshot():
 *   class times   samples or exact counts of poll / running / blocked /
 *                 other (series_bucket.n; exact sources count ns or events
 *                 and say so in caps), blocked ones keyed by (syscall, fd)
 *   cpu wait      schedstat's run and wait clocks (series_bucket.sched)
 *   spans         busy spans, leaving the poll to re-entering it (lag bins)
 *   events        the runtime's counters where it publishes them (shm)
 *   stalls        a thread out of its poll past --stall-ms (series_stall)
 * and the snapshot's identity of each thread (pid, tid, name, service).
 */
#ifndef LOOPSTAT_SOURCE_H
#define LOOPSTAT_SOURCE_H

#include <stdint.h>

#include "collect/sampler.h"
#include "collect/snapshot.h"

/* What a source's counts are (source_ops.caps). */
#define SOURCE_SAMPLED 0u   /* class counts are samples: intervals are estimated (batch means) */
#define SOURCE_EXACT   1u   /* class counts are measured exactly: the interval is the measurement's */
#define SOURCE_RECORDED 2u  /* a recording: time is the recording's, advanced by the feed */

struct source_ops {
	const char *name;                                  /* "proc", "replay", ... (header, JSON) */
	unsigned caps;                                     /* SOURCE_* */
	/* as sampler_snapshot() */
	int    (*snapshot)(void *impl, double window_s, int with_history, struct snapshot *snap);
	double (*rate)(void *impl);
	void   (*set_rate)(void *impl, double hz);         /* NULL: the rate is fixed (a recording) */
	void   (*set_paused)(void *impl, int paused);
	void   (*set_all_threads)(void *impl, int on);     /* NULL: not supported */
	/* NULL: live, the wall clock. A recording: its clock in *unix_s, which
	 * stops at its end; returns 1 once the replay has reached it. */
	int    (*clock)(void *impl, double *unix_s);
	/* SOURCE_RECORDED: feeds everything up to t_ns (its clock) and pins
	 * the clock there; returns 1 once t_ns is past the recording's end. */
	int    (*advance)(void *impl, uint64_t t_ns);
	uint64_t (*start_ns)(void *impl);                  /* SOURCE_RECORDED: its first reading */
	int    (*truncated)(void *impl);                   /* SOURCE_RECORDED: 1 when cut short (no end record) */
	void   (*stop)(void *impl);                        /* stops measuring; snapshots stay readable. NULL: none */
	void   (*destroy)(void *impl);                     /* NULL: impl is borrowed */
};

struct source {
	const struct source_ops *ops;
	void *impl;                      /* owned when ops->destroy, else borrowed */
};

/* What a live source is asked to measure: the feed's options. */
struct source_conf {
	const struct targets *targets;   /* borrowed; outlives the source */
	double rate_hz;                  /* 0: the default */
	double precision_pts;            /* sampler_opts.precision_pts */
	int    all_threads;              /* also threads never seen polling */
	size_t max_workers;              /* 0: the default */
	double stall_ms;                 /* sampler_opts.stall_ms */
	void (*on_sample)(void *arg, const struct sampler_event *ev);   /* sampler_opts.on_sample */
	void  *on_sample_arg;
	void (*on_stall)(void *arg, const struct sampler_stall_event *ev);
};

/* The live /proc sampler on c's targets, started. 0 or -errno. */
int  source_proc_open(const struct source_conf *c, struct source *src);

/* A source reading the live sampler s (borrowed: tests, benches). */
void source_sampler(struct source *src, struct sampler *s);

/* Stops and frees an owned source; a borrowed one is left alone. */
void source_close(struct source *src);

#endif /* LOOPSTAT_SOURCE_H */
