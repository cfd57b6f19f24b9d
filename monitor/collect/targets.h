/*
 * targets.h — which processes the user asked for: -p PID[,PID...] and
 * -n REGEX (extended regex on the process name). No filter means all.
 */
#ifndef LOOPSTAT_TARGETS_H
#define LOOPSTAT_TARGETS_H

#include <stddef.h>
#include <sys/types.h>

#include "probe_discover.h"

#define TARGETS_MAX_PIDS 4096

struct targets {
	pid_t   pids[TARGETS_MAX_PIDS];
	size_t  npids;
	struct probe_matcher matcher;   /* compiled pattern, matched against comm */
	int     has_re;
};

void targets_init(struct targets *t);
void targets_done(struct targets *t);

/* Adds "PID[,PID...]". Returns 0 or -EINVAL (msg says why) / -E2BIG. */
int targets_add_pids(struct targets *t, const char *arg, char *msg, size_t msglen);

/* Sets the name filter. Returns 0 or -EINVAL with regerror's text in msg. */
int targets_set_regex(struct targets *t, const char *re, char *msg, size_t msglen);

/* 1 if nothing was asked for (everything matches) */
int targets_all(const struct targets *t);

/* 1 if pid or name was asked for (either filter may select a process). */
int targets_match(const struct targets *t, pid_t pid, const char *name);

#endif /* LOOPSTAT_TARGETS_H */
