/*
 * targets.c — parsing and matching -p / -n.
 */
#include "targets.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void targets_init(struct targets *t)
{
	t->npids = 0;
	t->has_re = 0;
	t->pattern[0] = '\0';
}

void targets_done(struct targets *t)
{
	if (t->has_re)
		regfree(&t->name_re);
	t->has_re = 0;
}

int targets_add_pids(struct targets *t, const char *arg, char *msg, size_t msglen)
{
	const char *p = arg;
	for (;;) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (end == p || errno || v <= 0 || v > INT_MAX || (*end && *end != ',')) {
			snprintf(msg, msglen, "invalid pid list '%s': expected PID[,PID...]", arg);
			return -EINVAL;
		}
		if (t->npids == TARGETS_MAX_PIDS) {
			snprintf(msg, msglen, "too many pids (at most %d)", TARGETS_MAX_PIDS);
			return -E2BIG;
		}
		t->pids[t->npids++] = (pid_t)v;
		if (!*end)
			return 0;
		p = end + 1;
	}
}

int targets_set_regex(struct targets *t, const char *re, char *msg, size_t msglen)
{
	targets_done(t);
	if (strlen(re) >= sizeof(t->pattern)) {
		snprintf(msg, msglen, "regex too long (at most %zu bytes)", sizeof(t->pattern) - 1);
		return -EINVAL;
	}
	int rc = regcomp(&t->name_re, re, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char why[128];
		regerror(rc, &t->name_re, why, sizeof(why));
		snprintf(msg, msglen, "invalid regex '%s': %s", re, why);
		return -EINVAL;
	}
	t->has_re = 1;
	snprintf(t->pattern, sizeof(t->pattern), "%s", re);
	return 0;
}

int targets_all(const struct targets *t)
{
	return t->npids == 0 && !t->has_re;
}

int targets_match(const struct targets *t, pid_t pid, const char *name)
{
	if (targets_all(t))
		return 1;
	for (size_t i = 0; i < t->npids; i++)
		if (t->pids[i] == pid)
			return 1;
	return t->has_re && name && regexec(&t->name_re, name, 0, NULL, 0) == 0;
}
