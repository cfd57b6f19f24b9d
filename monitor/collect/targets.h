/*
 * targets.h — which processes the user asked for: -p PID[,PID...] and
 * -n REGEX (extended regex on the process name) name them (every thread of
 * theirs is sampled); without either, every event loop on the host is
 * found by a sweep, or with --instrumented only the segments' workers.
 * -u USER and -s SERVICE (a regex on the service) narrow any of these.
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
	int     instrumented_only;      /* --instrumented: no sweep of the host */
	int     all_roles;              /* --all: every loop, not only servers, without -p or -n */
	int     has_uid;                /* -u */
	uid_t   uid;
	int     has_service;            /* -s */
	struct probe_matcher service;   /* matched against the service's name */
};

void targets_init(struct targets *t);
void targets_done(struct targets *t);

/* Adds "PID[,PID...]". Returns 0 or -EINVAL (msg says why) / -E2BIG. */
int targets_add_pids(struct targets *t, const char *arg, char *msg, size_t msglen);

/* Sets the name filter. Returns 0 or -EINVAL with regerror's text in msg. */
int targets_set_regex(struct targets *t, const char *re, char *msg, size_t msglen);

/* Sets -u from a user name or a uid. Returns 0 or -EINVAL (msg says why). */
int targets_set_user(struct targets *t, const char *user, char *msg, size_t msglen);
/* Sets -s. Returns 0 or -EINVAL with regerror's text in msg. */
int targets_set_service(struct targets *t, const char *re, char *msg, size_t msglen);

/* 1 if nothing was asked for (everything matches) */
int targets_all(const struct targets *t);
/* 1 when every loop on the host is looked for: no -p, -n or --instrumented. */
int targets_host(const struct targets *t);
/* 1 when the process (its effective uid and service) passes -u and -s. */
int targets_narrow(const struct targets *t, uid_t uid, const char *service);

/* 1 if pid or name was asked for (either filter may select a process). */
int targets_match(const struct targets *t, pid_t pid, const char *name);

#endif /* LOOPSTAT_TARGETS_H */
