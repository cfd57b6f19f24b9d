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
 *
 * Writers sort the tree (profile_tree_sort) and return 0, -ENOMEM, or
 * the stream's error (-ENOSPC...; -EIO when its cause is unknown).
 */
#ifndef LOOPSTAT_PROFILE_OUT_H
#define LOOPSTAT_PROFILE_OUT_H

#include <stdio.h>

#include "profile/profile_tree.h"

/* What the profile covers; every field may be 0/NULL. */
struct profile_meta {
	const char *title;     /* e.g. "pid 1234 (worker)"; NULL: "loopstat profile" */
	double rate_hz;        /* target sampling rate */
	double duration_s;     /* wall time sampled */
	int    threads;        /* text and svg: every thread apart (--threads), not identical ones merged */
};

struct profile_text_opts {
	double min_pct;        /* rows below this share are left out (0: all) */
	int    max_frames;     /* stack frames shown under a target (0: all) */
};

#define PROFILE_TEXT_DEFAULTS { .min_pct = 0.5, .max_frames = 8 }

enum profile_format {
	PROFILE_FMT_TEXT = 0,
	PROFILE_FMT_FOLDED,
	PROFILE_FMT_SPEEDSCOPE,
	PROFILE_FMT_SVG,
	PROFILE_FMT_JSON,
};

/* "text", "folded", "speedscope", "svg", "json" → *fmt. Returns 0 or -EINVAL. */
int profile_format_parse(const char *name, enum profile_format *fmt);

/* Dispatches to one writer; opts may be NULL (defaults). */
int profile_write(FILE *out, enum profile_format fmt, struct profile_tree *t,
		  const struct profile_meta *meta, const struct profile_text_opts *opts);

int profile_write_text(FILE *out, struct profile_tree *t, const struct profile_meta *meta,
		       const struct profile_text_opts *opts);
int profile_write_folded(FILE *out, struct profile_tree *t);
int profile_write_json(FILE *out, struct profile_tree *t, const struct profile_meta *meta);
int profile_write_speedscope(FILE *out, struct profile_tree *t, const struct profile_meta *meta);
int profile_write_svg(FILE *out, struct profile_tree *t, const struct profile_meta *meta);

#endif /* LOOPSTAT_PROFILE_OUT_H */
