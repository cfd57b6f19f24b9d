/*
 * profile_acc.h — the accumulator that turns a stream of recorded samples
 * (collect/recording.h) into a struct profile_tree: the same code for a
 * live profile and for `loopstat report`, so both give the same report
 * from the same samples.
 */
#ifndef LOOPSTAT_PROFILE_ACC_H
#define LOOPSTAT_PROFILE_ACC_H

#include <stdint.h>
#include <stdio.h>

#include "collect/recording.h"
#include "profile/profile_tree.h"

_Static_assert(REC_LABEL_MAX == PROFILE_LABEL_MAX && REC_MAX_FRAMES == PROFILE_MAX_FRAMES,
	       "a recorded event is what a profile sample holds");

/* ---- the accumulator: events -> tree ---- */
struct profile_acc;

/* The tree is split by fiber when the first event is of an instrumented worker. */
#define PROFILE_ACC_AUTO_FIBER 0x100u

/* Threads one accumulator takes: a recording naming more is refused (-E2BIG). */
#define PROFILE_ACC_MAX_THREADS (1u << 18)
_Static_assert(REC_MAX_THREADS == PROFILE_ACC_MAX_THREADS, "report's message names one thread cap");

/* Threads are labelled by their name alone ("PID/TID " dropped), so two
 * runs' trees line up whatever their pids (diff); same-named threads pool. */
#define PROFILE_ACC_BY_NAME 0x200u

/* flags as profile_tree_new's, or PROFILE_ACC_AUTO_FIBER, PROFILE_ACC_BY_NAME. NULL with errno set. */
struct profile_acc *profile_acc_new(unsigned flags);
void profile_acc_delete(struct profile_acc *a);

/*
 * Adds one event: POLL is idle, BLOCKED and OTHER blocked, RUNNING on CPU
 * or waiting for one. A RUNNING sample is held until its thread's next
 * schedstat reading and then split between the two in the ratio of that
 * interval's Δrun_delay to Δsum_exec_runtime (spread evenly, deterministic).
 * 0, -EINVAL, -ENOMEM, or -E2BIG past PROFILE_ACC_MAX_THREADS threads or
 * PROFILE_TREE_MAX_NODES nodes.
 */
int  profile_acc_add(struct profile_acc *a, const struct rec_event *ev);

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

/* Every event of the recording on f into a: rec_read's returns and
 * *meta, *line (report and diff read a file the same way). */
int  profile_acc_read(struct profile_acc *a, FILE *f, struct rec_meta *meta, long *line);

/* Samples added, and the first and last t_ns seen. */
uint64_t profile_acc_samples(const struct profile_acc *a, uint64_t *first_ns, uint64_t *last_ns);

#endif /* LOOPSTAT_PROFILE_ACC_H */
