/*
 * check_report.h — what `loopstat check` writes from its results: the
 * closing line and a short table for people, JUnit XML for CI test
 * reports, TAP (13, or 14) for TAP harnesses, JSON (version 1) for scripts and as
 * the next run's --baseline. Every writer takes the same result array
 * (check_verdict.h) and never computes a verdict of its own.
 */
#ifndef LOOPSTAT_CHECK_REPORT_H
#define LOOPSTAT_CHECK_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "check/check_verdict.h"

struct check_run_info {
	const char *host;          /* uname nodename (borrowed) */
	const char *kernel;        /* uname release */
	const char *timestamp;     /* start, ISO 8601 UTC ("2026-12-01T20:00:00Z"); NULL to omit */
	double rate_hz;            /* sampling rate */
	double duration_s;         /* wall time sampled */
	int    inconclusive_fail;  /* --inconclusive=fail: inconclusive reported as a failure */
	int    point_estimate;     /* --point-estimate was in force */
	int    tap_version;        /* 13 (0 means 13: Test::Harness < 3.48, Debian 12's prove, rejects 14), or 14 */
};

/* "check: N passed, N failed, N inconclusive" (", N nothing to measure" when any). */
void check_report_summary(FILE *out, const struct check_result *r, size_t n);

/* Worker, threshold, value, interval, n_eff, verdict: one line each. */
void check_report_table(FILE *out, const struct check_result *r, size_t n);

/* JUnit XML: one <testcase> per result (name is the threshold, with
 * " (tid N)" added when one process has several workers); fail as
 * <failure>, nothing as <error>, inconclusive as <skipped> or, under
 * inconclusive_fail, <failure>. Returns 0 or -EIO. */
int check_report_junit(FILE *out, const struct check_run_info *info, const struct check_result *r, size_t n);

/* TAP: version line, plan, one test point per result with a YAML block;
 * inconclusive is `ok ... # SKIP` unless inconclusive_fail. Returns 0 or -EIO. */
int check_report_tap(FILE *out, const struct check_run_info *info, const struct check_result *r, size_t n);

/* `Bail out! reason` (a target vanished mid-check). */
void check_report_tap_bail(FILE *out, const char *reason);

/* {"version":1,"command":"check",...}: every field of every result, and
 * what a --baseline needs (value, se, df, n, n_eff). Returns 0 or -EIO. */
int check_report_json(FILE *out, const struct check_run_info *info, const struct check_result *r, size_t n);

/* internal to the check_report*.c files */
const char *check__worker(const struct check_result *r, char *buf, size_t len);
void check__describe(FILE *out, const struct check_result *r, const char *indent);

#endif /* LOOPSTAT_CHECK_REPORT_H */
