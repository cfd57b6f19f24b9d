/*
 * profile_out.h — the outputs of `loopstat profile`, all written from one
 * struct profile_tree:
 *
 *   text        the report a person reads: shares of each thread's samples
 *               with 95% intervals, sorted by share (profile_out.c)
 *   folded      "thread;state;syscall;target;frame;frame count" lines for
 *               flamegraph.pl and speedscope's importer (profile_out.c)
 *   json        version 1: the whole tree as a flat node list (profile_out.c)
 *   speedscope  speedscope's own file format, one sampled profile per
 *               thread (or per fiber tag) (profile_out_speedscope.c)
 *   svg         a self-contained interactive flame graph (profile_out_svg.c)
 *   pprof       pprof's profile.proto, gzipped, for go tool pprof, Pyroscope
 *               and Parca: the folded paths as stacks, in samples and wall
 *               nanoseconds (profile_out_pprof.c)
 *
 * Writers sort the tree (profile_tree_sort) and return 0, -ENOMEM, or
 * the stream's error (-ENOSPC...; -EIO when its cause is unknown).
 */
#ifndef LOOPSTAT_PROFILE_OUT_H
#define LOOPSTAT_PROFILE_OUT_H

#include <stddef.h>
#include <stdio.h>

#include "profile/profile_tree.h"

/* What the profile covers; every field may be 0/NULL. */
struct profile_meta {
	const char *title;     /* e.g. "pid 1234 (worker)"; NULL: "loopstat profile" */
	double rate_hz;        /* target sampling rate */
	double duration_s;     /* wall time sampled */
	int    threads;        /* text and svg: every thread apart (--threads), not identical ones merged */
	double start_unix;     /* pprof: when sampling began, seconds since the epoch (0: unknown) */
	/* svg: a frame's fill and a note after its share, when it returns 1
	 * (diff colours what changed); NULL or 0: the profile's own palette */
	int  (*svg_fill)(void *arg, const struct profile_node *n, char *fill, size_t fill_len, char *note,
			 size_t note_len);
	void  *svg_arg;
};

struct profile_text_opts {
	double min_pct;        /* rows below this share are left out (0: all) */
	int    max_frames;     /* stack frames shown under a target (0: all) */
};

#define PROFILE_TEXT_DEFAULTS { .min_pct = 0.5, .max_frames = 8 }

/* The formats, in the order --help lists them: enum name, --format name. */
#define PROFILE_FORMATS(X) \
	X(TEXT, "text") X(FOLDED, "folded") X(SPEEDSCOPE, "speedscope") X(SVG, "svg") X(JSON, "json") \
	X(PPROF, "pprof")
/* The same list as options' help and messages print it (a test checks it
 * against the table and docs/usage.md). */
#define PROFILE_FORMAT_LIST "text (default), folded, speedscope, svg, json or pprof"

enum profile_format {
#define PROFILE_FMT_X(e, name) PROFILE_FMT_##e,
	PROFILE_FORMATS(PROFILE_FMT_X)
#undef PROFILE_FMT_X
	PROFILE_NFORMATS
};

/* A name of PROFILE_FORMATS → *fmt. Returns 0 or -EINVAL. */
int profile_format_parse(const char *name, enum profile_format *fmt);
/* fmt's --format name; NULL when out of range. */
const char *profile_format_name(enum profile_format fmt);

/* Dispatches to one writer; opts may be NULL (defaults). */
int profile_write(FILE *out, enum profile_format fmt, struct profile_tree *t,
		  const struct profile_meta *meta, const struct profile_text_opts *opts);

int profile_write_text(FILE *out, struct profile_tree *t, const struct profile_meta *meta,
		       const struct profile_text_opts *opts);
int profile_write_folded(FILE *out, struct profile_tree *t);
int profile_write_json(FILE *out, struct profile_tree *t, const struct profile_meta *meta);
int profile_write_speedscope(FILE *out, struct profile_tree *t, const struct profile_meta *meta);
int profile_write_svg(FILE *out, struct profile_tree *t, const struct profile_meta *meta);
int profile_write_pprof(FILE *out, struct profile_tree *t, const struct profile_meta *meta);

/* A thread node's service where it says more than the thread's own name
 * (a unit, a container, another process name), else NULL. */
const char *profile_thread_service(const struct profile_node *n);
/* Its title where a name is all there is room for (speedscope's profile
 * names): its label, and "(service S)" when profile_thread_service has one. */
void profile_thread_title(const struct profile_node *n, char *buf, size_t len);

/* What a writer returns once it has written everything: flushes out and
 * gives 0, or its error (the cause of the first failed write, -EIO when
 * it is unknown). */
int profile_out_result(FILE *out);

#endif /* LOOPSTAT_PROFILE_OUT_H */
