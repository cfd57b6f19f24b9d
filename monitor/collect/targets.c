/*
 * targets.c — parsing and matching -p / -n / -u / -s.
 */
#include "collect/targets.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void targets_init(struct targets *t)
{
	t->npids = 0;
	t->has_re = 0;
	/* LOOPSTAT_DISCOVER=instrumented makes --instrumented the default (hosts
	 * where sweeping is unwanted; the test suites, which measure their own
	 * workers among the host's) */
	const char *d = getenv("LOOPSTAT_DISCOVER");
	t->instrumented_only = d && strcmp(d, "instrumented") == 0;
	t->has_uid = 0;
	t->has_service = 0;
}

void targets_done(struct targets *t)
{
	if (t->has_re)
		probe_matcher_done(&t->matcher);
	if (t->has_service)
		probe_matcher_done(&t->service);
	t->has_re = t->has_service = 0;
}

/* Digits only: strtol alone would take " 1" and "+1" and refuse "1 ". */
static int parse_pid(const char *p, const char **end, long *out)
{
	long v = 0;
	const char *q = p;
	for (; *q >= '0' && *q <= '9'; q++) {
		v = v * 10 + (*q - '0');
		if (v > INT_MAX)
			return -ERANGE;
	}
	*end = q;
	*out = v;
	return q == p || v == 0 ? -EINVAL : 0;
}

int targets_add_pids(struct targets *t, const char *arg, char *msg, size_t msglen)
{
	const char *p = arg;
	for (;;) {
		const char *end;
		long v;
		if (parse_pid(p, &end, &v) < 0 || (*end && *end != ',')) {
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
	char why[128];
	if (t->has_re)
		probe_matcher_done(&t->matcher);
	t->has_re = 0;
	if (probe_matcher_init_why(&t->matcher, re, PROBE_MATCH_COMM, why, sizeof(why)) < 0) {
		snprintf(msg, msglen, "invalid regex '%s': %s", re, why);
		return -EINVAL;
	}
	t->has_re = 1;
	return 0;
}

int targets_set_user(struct targets *t, const char *user, char *msg, size_t msglen)
{
	const char *end;
	long v;
	struct passwd *pw = getpwnam(user);
	if (pw) {
		t->uid = pw->pw_uid;
	} else if (parse_pid(user, &end, &v) == 0 && !*end) {
		t->uid = (uid_t)v;
	} else if (strcmp(user, "0") == 0) {
		t->uid = 0;
	} else {
		snprintf(msg, msglen, "no user '%s' (a user name or a uid)", user);
		return -EINVAL;
	}
	t->has_uid = 1;
	return 0;
}

int targets_set_service(struct targets *t, const char *re, char *msg, size_t msglen)
{
	char why[128];
	if (t->has_service)
		probe_matcher_done(&t->service);
	t->has_service = 0;
	if (probe_matcher_init_why(&t->service, re, PROBE_MATCH_COMM, why, sizeof(why)) < 0) {
		snprintf(msg, msglen, "invalid service regex '%s': %s", re, why);
		return -EINVAL;
	}
	t->has_service = 1;
	return 0;
}

int targets_all(const struct targets *t)
{
	return t->npids == 0 && !t->has_re;
}

int targets_host(const struct targets *t)
{
	return targets_all(t) && !t->instrumented_only;
}

int targets_narrow(const struct targets *t, uid_t uid, const char *service)
{
	if (t->has_uid && uid != t->uid)
		return 0;
	return !t->has_service || (service && regexec(&t->service.re, service, 0, NULL, 0) == 0);
}

int targets_match(const struct targets *t, pid_t pid, const char *name)
{
	if (targets_all(t))
		return 1;
	for (size_t i = 0; i < t->npids; i++)
		if (t->pids[i] == pid)
			return 1;
	return t->has_re && name && regexec(&t->matcher.re, name, 0, NULL, 0) == 0;
}
