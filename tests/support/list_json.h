/*
 * list_json.h — `loopstat list --json` of real processes, and reading its
 * fields, for the suites that judge real workers by it.
 */
#ifndef TESTS_LIST_JSON_H
#define TESTS_LIST_JSON_H

#include <json-c/json.h>
#include <sys/types.h>

/* Runs `loopstat list -p pids --duration duration --json` (within 30 s)
 * and parses its output; fails the test unless it exits 0 with JSON. The
 * caller puts the document. */
json_object *tj_list(const char *pids, const char *duration);
/* tj_list with the command other (argv, a path first) run beside it,
 * within the same 30 s: its output (caller frees) and exit status. */
json_object *tj_list_beside(const char *pids, const char *duration, char *const other[], char **other_out,
			    int *other_rc);

/* tj_list of the one process pid. */
json_object *tj_list_pid(pid_t pid, const char *duration);
/* Runs `loopstat list --json --duration duration` with the further
 * arguments (NULL-terminated; a NULL first one: none) within timeout_ms;
 * fails the test unless it exits 0 with JSON. The caller puts it. */
json_object *tj_list_with(int timeout_ms, const char *duration, ...);

/* The worker of process pid whose thread is tid (0: its first); fails the
 * test when there is none. Borrowed from doc. */
json_object *tj_worker(json_object *doc, pid_t pid, pid_t tid);
/* The same, NULL when there is none. */
json_object *tj_find(json_object *doc, pid_t pid, pid_t tid);
/* The rows of pid of kind (NULL: any kind), up to cap of them into rows;
 * how many. */
int tj_rows(json_object *doc, pid_t pid, const char *kind, json_object **rows, int cap);
/* The member of a scheduler row w whose thread is tid, NULL when none;
 * fails the test when w has no members array. */
json_object *tj_member(json_object *w, pid_t tid);
/* The pools array of worker w; fails the test when there is none. */
json_object *tj_pools(json_object *w);

/* Field key of o; fails the test when it is missing. Borrowed. */
json_object *tj_get(json_object *o, const char *key);

/* A number field; NaN when missing or null. */
double tj_num(json_object *o, const char *key);

/* 1 when the field is there and null ("none"), 0 when it holds a value
 * or is missing: a dropped field must not pass for "none". */
int tj_null(json_object *o, const char *key);

/* A string field; "(null)" when missing or null. Borrowed. */
const char *tj_str(json_object *o, const char *key);

/* 1 when one of a stall's frames (list's "stalls") contains needle. */
int tj_has_frame(json_object *stall, const char *needle);

#endif /* TESTS_LIST_JSON_H */
