/*
 * profile_tree.h — where a worker's wall time goes: weighted samples
 * aggregated into a trie that every profile output walks.
 *
 * A sample's path from the root is
 *   thread → [fiber] → state → [syscall] → [target] → frames...
 * where fiber is a level only in a tree made with PROFILE_TREE_BY_FIBER,
 * syscall and target only when the sample has them, and frames are the
 * user stack innermost first (the wrapper, then its caller, ...), so that
 * under a syscall and fd the first level is the call site that blocked.
 *
 * Every sampled instant lands in exactly one state, so the states of a
 * thread sum to its samples. Labels are sanitised on insert (no ';', no
 * control characters, valid UTF-8) so every format can print them as they
 * are. Counts are integers (samples, or any integer weight).
 *
 * Not locked: one writer (the sampler), outputs read it afterwards.
 */
#ifndef LOOPSTAT_PROFILE_TREE_H
#define LOOPSTAT_PROFILE_TREE_H

#include <stddef.h>
#include <stdint.h>

enum profile_state {
	PROFILE_IDLE = 0,   /* in the loop's own poll: spare capacity */
	PROFILE_ON_CPU,     /* running on a CPU */
	PROFILE_CPU_WAIT,   /* runnable, waiting for a CPU (schedstat run_delay) */
	PROFILE_BLOCKED,    /* in any other syscall (or off-CPU outside one) */
	PROFILE_NSTATES,
};

enum profile_level {
	PROFILE_L_ROOT = 0,
	PROFILE_L_THREAD,
	PROFILE_L_FIBER,
	PROFILE_L_STATE,
	PROFILE_L_SYSCALL,
	PROFILE_L_TARGET,
	PROFILE_L_FRAME,
};

#define PROFILE_TREE_BY_FIBER 1u /* a fiber level under each thread */

#define PROFILE_LABEL_MAX 640 /* a whole frame label (PROBE_UNWIND_LABEL_LEN); longer ones are cut (at a character boundary) */
#define PROFILE_MAX_FRAMES 128 /* frames kept per sample; deeper ones are dropped */
#define PROFILE_MAX_PATH  (5 + PROFILE_MAX_FRAMES) /* nodes below the root on one path */
#define PROFILE_TREE_MAX_NODES (1u << 20)          /* a tree refuses to grow past this (-E2BIG) */

struct profile_sample {
	const char *thread;          /* thread label, e.g. "1234/1240 worker"; required */
	enum profile_state state;
	const char *syscall;         /* syscall name, NULL or "" when none */
	const char *target;          /* fd target text ("fd 7 pipe:[123]"), NULL or "" when none */
	const char *const *frames;   /* frame labels, innermost first; may be NULL if nframes is 0 */
	int nframes;
	const char *fiber;           /* running fiber's tag: NULL none running or not instrumented
	                              * (label "[no fiber]"), "" untagged ("[untagged]") */
	const char *service;         /* the thread's service; NULL: unknown (it keeps the one it had) */
};

struct profile_node {
	char    *label;              /* sanitised, owned */
	char    *service;            /* thread nodes: the last sample's service, sanitised, owned;
	                              * NULL unknown, or threads of several merged */
	enum profile_level level;
	uint64_t count;              /* samples through this node (inclusive) */
	uint64_t self;               /* samples whose path ends here */
	uint64_t running;            /* of count, those on a CPU or waiting for one */
	uint64_t busy_ns, span_ns;   /* thread nodes: schedstat's runnable time over span_ns of
	                              * wall time (span 0: unknown), summed over merged threads */
	struct profile_node *parent; /* NULL for the root */
	struct profile_node *child;  /* first child; sorted by count after profile_tree_sort */
	struct profile_node *next;   /* next sibling */
	struct profile_node *last;   /* last child: new children go after it */
	size_t   id;                 /* creation order, root = 0 */
};

struct profile_tree;

/* flags: PROFILE_TREE_BY_FIBER or 0. Returns NULL with errno set. */
struct profile_tree *profile_tree_new(unsigned flags);
void profile_tree_delete(struct profile_tree *t);

/* Adds one sample of the given weight. Returns 0, -EINVAL (no thread,
 * bad state, weight 0), -ENOMEM or -E2BIG (PROFILE_TREE_MAX_NODES
 * reached); the tree is unchanged then. */
int profile_tree_add(struct profile_tree *t, const struct profile_sample *s, uint64_t weight);

/* The root (label "all"); its count is every sample. Borrowed. */
const struct profile_node *profile_tree_root(const struct profile_tree *t);
size_t profile_tree_nodes(const struct profile_tree *t);   /* including the root */
unsigned profile_tree_flags(const struct profile_tree *t);
/* Deepest level below the root (thread = 1). */
int profile_tree_depth(const struct profile_tree *t);

/* Orders every node's children by count, largest first (ties by label),
 * which is how every output shows them. Idempotent. */
void profile_tree_sort(struct profile_tree *t);

/* Samples of the thread n belongs to (the root's count for the root). */
uint64_t profile_node_basis(const struct profile_node *n);

/* n's share of its thread's wall time, in percent, with the half-width of
 * its 95% interval in *ci95 (points; may be NULL); NaN on no samples. With
 * the thread's runnable share known (profile_tree_runnable), it is list's
 * split of the same samples (model_split_share_pct); else n's share of the
 * thread's samples, with Wilson's interval. A thread's own share is of
 * all samples. */
double profile_node_share(const struct profile_node *n, double *ci95);

/* The wall time each of n's samples stands for, in samples: with the
 * thread's runnable share known, the split's weight of n's kind (running
 * or off the CPU), so that weighted samples give profile_node_share's
 * shares and, with samples of both kinds, the thread's still sum to its
 * count; else 1. Nodes
 * at the state level and below (1 above). */
double profile_node_weight(const struct profile_node *n);

/* Thread thread (its label as added) was runnable busy_ns of span_ns of
 * wall time, by schedstat: added to what it has (threads pooled under one
 * label add up). 0, or -ENOENT when the tree has no such thread. */
int profile_tree_runnable(struct profile_tree *t, const char *thread, uint64_t busy_ns, uint64_t span_ns);

/* Threads whose trees are the same (the same paths, shares within what
 * sampling explains) become one node labelled "3 threads: name, ... (pid
 * tids)", their counts summed, so its shares are the threads' mean. Redis'
 * bio threads or a pool of workers then print once. 0 or -ENOMEM (the
 * tree is unchanged then). */
int profile_tree_merge_threads(struct profile_tree *t);

/* A thread node's service: the one its samples named, else the name in
 * its label ("PID/TID name"), as a worker without a unit or container is
 * its own service; NULL for merged threads of several services. */
const char *profile_node_service(const struct profile_node *n);

/* "idle", "on cpu", "waiting for cpu", "blocked". Static. */
const char *profile_state_name(enum profile_state s);
/* "thread", "fiber", "state", "syscall", "target", "frame" ("all" for the root). */
const char *profile_level_name(enum profile_level l);


#endif /* LOOPSTAT_PROFILE_TREE_H */
