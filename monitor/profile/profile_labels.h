/*
 * profile_labels.h — a tree's distinct labels, each once, numbered in the
 * order first seen: speedscope's shared frames and pprof's functions.
 * Labels are borrowed from the tree, which must outlive the table.
 */
#ifndef LOOPSTAT_PROFILE_LABELS_H
#define LOOPSTAT_PROFILE_LABELS_H

#include <stddef.h>

struct profile_labels {
	const char **label; /* by index; borrowed */
	size_t n;
	long *slot;         /* hash slot → index, -1 empty */
	size_t mask;
};

/* Room for up to max distinct labels (a tree's node count). 0 or -ENOMEM. */
int profile_labels_init(struct profile_labels *l, size_t max);
void profile_labels_done(struct profile_labels *l);

/* label's index, adding it if it is new (at most max labels). */
long profile_labels_index(struct profile_labels *l, const char *label);

#endif /* LOOPSTAT_PROFILE_LABELS_H */
