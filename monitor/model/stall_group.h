/*
 * stall_group.h — stalls captured, deduplicated by stack: one group per
 * state, syscall and frames, with its count, first and last time, worst
 * duration and the CPU wait around its stalls. report (from a recording's
 * stall records) and top (from a worker's last stalls) group alike, so a
 * hundred stalls of one stack are one line in both.
 */
#ifndef LOOPSTAT_STALL_GROUP_H
#define LOOPSTAT_STALL_GROUP_H

#include <stddef.h>
#include <stdint.h>

#define STALL_GROUP_MAX 1024     /* groups kept; stalls of other stacks are counted apart */
#define STALL_GROUP_SHOWN_FRAMES 6   /* the innermost frames a group keeps as text */
#define STALL_GROUP_LABEL_MAX 640    /* a label is cut to this (a frame label's length) */

/* One stall, as either view has it (strings borrowed, NULL: none). */
struct stall_in {
	const char *state;           /* "running", "blocked", "other" */
	const char *thread, *syscall, *target, *fiber;   /* thread NULL: not in the group's head */
	const char *const *frames;   /* innermost first */
	int      nframes;
	uint64_t t_ns;               /* when captured */
	uint64_t dur_ns;             /* out of the poll when captured (or its whole span, when known) */
};

struct stall_group {
	uint64_t key;                /* the stack's hash: state, syscall and every frame */
	char    *head;               /* owned: "state  thread  syscall target fiber" of its first stall */
	char    *frames;             /* owned: its innermost STALL_GROUP_SHOWN_FRAMES frames, a line each,
				      * each indented by 6 spaces */
	uint64_t count, first_ns, last_ns;
	uint64_t worst_ns;           /* the longest (an ended stall's whole length, else as captured) */
	uint64_t ended, ended_ns;    /* stalls whose end was seen, and their time */
	uint64_t waited, wait_ns;    /* of those, with a CPU wait measured, and its sum */
	uint64_t around_ns;          /* the time between the readings it was measured over */
};

struct stall_groups {
	struct stall_group *g;       /* owned; n in the order first seen */
	size_t   n, cap;
	uint64_t total, unkept;      /* stalls added; of stacks past STALL_GROUP_MAX */
};

void stall_groups_init(struct stall_groups *s);
void stall_groups_done(struct stall_groups *s);

/* A stall: its stack's group, made at the first; returns the group's
 * index, -1 past STALL_GROUP_MAX (counted), or -ENOMEM. */
int  stall_groups_add(struct stall_groups *s, const struct stall_in *in);

/* The stall of group g ended dur_ns after it began; wait_ns of CPU wait
 * in the around_ns between the readings around it (wait_ns < 0: not
 * measured). */
void stall_groups_end(struct stall_groups *s, int g, uint64_t dur_ns, int64_t wait_ns, uint64_t around_ns);

/* The groups, the most frequent first (then the worst): a copy the
 * caller frees (its strings still s's), NULL when out of memory. */
struct stall_group *stall_groups_sorted(const struct stall_groups *s);

/* The CPU wait's share of the readings' time around a group's stalls, in
 * percent; NaN when not measured. */
double stall_group_wait_pct(const struct stall_group *g);

#endif /* LOOPSTAT_STALL_GROUP_H */
