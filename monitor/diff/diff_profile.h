/*
 * diff_profile.h — a differential profile of two recordings: both are
 * accumulated as report does (profile_acc), threads labelled by name so
 * that the runs line up whatever their pids, and every frame's share of
 * its thread's samples is compared: the change with the 95% interval of
 * a difference of two proportions (est_share_diff, from each run's sample
 * counts, as profile's own ± is). Only frames whose interval excludes 0
 * are coloured and listed; the rest is noise and stays grey.
 *
 *   text    the frames changed beyond noise, largest change first
 *   folded  "path countA countB" of every stack (difffolded.pl's format,
 *           which flamegraph.pl draws; it colours noise too)
 *   svg     the after-run's flame graph (profile's writer), frames that
 *           grew red, shrank blue, in proportion to the change; noise grey
 */
#ifndef LOOPSTAT_DIFF_PROFILE_H
#define LOOPSTAT_DIFF_PROFILE_H

#include <stddef.h>
#include <stdio.h>

#include "model/estimate.h"
#include "profile/profile_tree.h"

struct profile_acc;

#define DIFF_PROFILE_FORMATS "text, folded or svg"

struct diff_frame {
	const struct profile_node *a, *b;   /* borrowed; either NULL: only in the other run */
	struct estimate change;             /* of the share of its thread, points (b − a) */
	double pa, pb;                      /* the shares, % (NaN: the thread is not in that run) */
	int    significant;                 /* the interval excludes 0 */
};

struct diff_profile {
	struct profile_acc *acc_a, *acc_b;  /* owned: they own the trees */
	struct profile_tree *ta, *tb;       /* borrowed from them */
	struct diff_frame *v;               /* owned; every frame below the threads */
	size_t n, cap;
	struct diff_frame **by_b;           /* owned; by b node id, NULL: none */
	size_t nb;
	size_t nsignificant;
	double duration_a, duration_b, rate_a, rate_b;
};

/* Reads both recordings and compares. Returns -1, or an exit code after
 * a message (EXIT_USAGE for a malformed file, EXIT_NOTHING without samples). */
int  diff_profile_load(struct diff_profile *d, const char *a, const char *b);
void diff_profile_done(struct diff_profile *d);

/* Writes fmt ("text", "folded", "svg"); 0 or -errno; -EINVAL: no such format. */
int  diff_profile_write(FILE *f, const char *fmt, struct diff_profile *d, const char *title);
/* 1 when fmt is one of them. */
int  diff_profile_format_ok(const char *fmt);

struct json;
/* "profile": the significant frames, into j's open object. */
void diff_profile_json(struct json *j, const struct diff_profile *d);

#endif /* LOOPSTAT_DIFF_PROFILE_H */
