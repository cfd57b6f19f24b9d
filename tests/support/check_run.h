/*
 * check_run.h — `loopstat check` run end to end for the check suites: the
 * command, the workers they judge, and the --json report read back.
 */
#ifndef TESTS_CHECK_RUN_H
#define TESTS_CHECK_RUN_H

#include <json-c/json.h>
#include <sys/types.h>

/* `loopstat check ARGS` through sh (within 35 s); stderr joins stdout when
 * both is set; *ms, if not NULL, is how long it ran. Its exit status. */
int ck_check(const char *args, int both, char **out, long long *ms);
/* n such checks at once (sampling the same workers side by side, as n
 * users would); outs[i] and rcs[i] are args[i]'s. */
void ck_check_all(int n, const char *const args[], int both, char **outs, int *rcs);

/* examples/duty_cycle idle that share of the time for 30 s; extra1 and
 * extra2 (may be NULL) are passed on, and with them --plain. */
pid_t ck_duty(const char *idle, const char *extra1, const char *extra2);

/* A fiberloop worker whose fiber hogs the loop 1.2 s at a time. */
pid_t ck_stalled(void);

/* Member key of o; fails the test if there is none. */
json_object *ck_get(json_object *o, const char *key);
/* The result of (pid, threshold), any pid if 0; fails the test if none. */
json_object *ck_result(json_object *root, pid_t pid, const char *threshold);
/* Expects that result's verdict (cr_expect: the test goes on). */
void ck_expect_verdict(json_object *root, pid_t pid, const char *threshold, const char *verdict);
/* out parsed as JSON; fails the test if it is not. */
json_object *ck_parse(const char *out);

#endif /* TESTS_CHECK_RUN_H */
