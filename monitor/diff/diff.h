/*
 * diff.h — `loopstat diff A B`: what changed between two runs.
 *
 * A run is a recording (loopstat record), replayed through the feed as
 * check replays one, or a `list --json` / `check --json` document. Each
 * becomes units: every worker, and every service rolled up. Pids change
 * between runs, so units pair by service, name, runtime, role and thread
 * tag (a field one side does not know matches any), the k-th of a key in
 * A with the k-th in B. Each metric's change B − A gets its 95% interval
 * from check_runs_diff (Welch with the run-to-run spread, as
 * `check --baseline` judges) and a verdict.
 */
#ifndef LOOPSTAT_DIFF_H
#define LOOPSTAT_DIFF_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "check/check_expr.h"
#include "check/check_verdict.h"
#include "model/estimate.h"
#include "model/metric.h"

#define DIFF_WORD_LEN 64

/* A worker, or a service's workers pooled (eval.h's pooling). */
struct diff_unit {
	int      is_service;
	char     service[PROBE_SERVICE_LEN];  /* "" unknown */
	char     name[DIFF_WORD_LEN];         /* process name; "" for a service */
	char     runtime[DIFF_WORD_LEN];      /* "" unknown */
	char     role[DIFF_WORD_LEN];         /* "" unknown */
	char     tag[DIFF_WORD_LEN];
	pid_t    pid, tid;                    /* 0 for a service or when not known */
	struct estimate est[METRIC_NWORKER];  /* .ok 0: not measured */
};

struct diff_run {
	const char *path;                     /* borrowed */
	int      recording;                   /* a recording: it has a profile */
	struct diff_unit *u;                  /* owned */
	size_t   n;
};

/* Reads path (a recording, or list/check --json). Returns -1, or an exit
 * code after a message: EXIT_USAGE for a file that is none of them or is
 * malformed, EXIT_NOTHING for one with no worker, EXIT_FAIL otherwise. */
int  diff_run_load(struct diff_run *r, const char *path);
void diff_run_done(struct diff_run *r);

/* The JSON half of diff_run_load: 0, or -EINVAL with why filled. */
int  diff_json_load(struct diff_run *r, const char *path, char *why, size_t len);

enum diff_verdict { DIFF_SAME, DIFF_WORSE, DIFF_BETTER, DIFF_UNKNOWN };
const char *diff_verdict_str(enum diff_verdict v);

/* The verdict of a change d of metric m: worse when its whole interval is
 * on the busier side (the metric table's sort direction), better on the
 * other, same when it holds 0; unknown without an interval (a maximum is
 * one observation, a side unmeasured). */
enum diff_verdict diff_judge(const struct metric *m, const struct estimate *d);

struct diff_pair;
struct diff_fail_on {
	const struct check_threshold *t;      /* borrowed */
	const struct diff_pair *pair;         /* the pair judged */
	enum check_verdict v;                 /* CHECK_PASS: the condition holds: a regression */
};

/* One metric of a pair. */
struct diff_row {
	const struct metric *m;
	struct estimate change;               /* B − A */
	enum diff_verdict verdict;
};

/* A unit of A paired with one of B (either NULL: only in the other). */
struct diff_pair {
	const struct diff_unit *a, *b;
	struct diff_row rows[METRIC_NWORKER];
	size_t nrows;
};

struct diff_result {
	double   run_sd;                      /* points per run in a share's change (check_runs_diff) */
	struct diff_pair *p;                  /* owned */
	size_t   n, matched;
	struct check_tally fail_on;           /* --fail-on verdicts over every matched pair */
	struct diff_fail_on *hits;            /* owned: each pair × threshold, in order */
	size_t   nhits;
};

/* Pairs a's units with b's and judges every metric and --fail-on
 * threshold (set may be empty), a share's change with run_sd points of
 * run-to-run spread per run. 0 or -ENOMEM. */
int  diff_compare(const struct diff_run *a, const struct diff_run *b, const struct check_set *set, double run_sd,
		  struct diff_result *out);
void diff_result_done(struct diff_result *r);

/* The metric rows a diff shows and --fail-on may name: check's. */
const struct check_metric *diff_metrics(size_t *n);

/* Text and JSON reports of a result; 0 or the stream's -errno. */
int  diff_write_text(FILE *f, const struct diff_run *a, const struct diff_run *b, const struct diff_result *r,
		     const struct check_set *set);
struct json;
/* The "units" and "fail_on" members, into j's open object. */
void diff_write_json(struct json *j, const struct diff_result *r);

#endif /* LOOPSTAT_DIFF_H */
