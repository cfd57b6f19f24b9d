/*
 * check_verdict.h — three verdicts per worker × threshold, and the exit
 * code of a whole check.
 *
 * pass:         the whole 95% interval is on the good side of the limit
 * fail:         the whole interval is on the bad side
 * inconclusive: the interval straddles the limit (sample longer), or the
 *               samples cannot resolve the figure (estimate.unresolved)
 * nothing:      no samples for this threshold: never a pass (k6 #1346)
 * With point_estimate the estimate alone is compared (weaker: noise near
 * the limit flips it). A relative threshold is judged on the interval of
 * value − coef·baseline against its offset (est_diff).
 */
#ifndef LOOPSTAT_CHECK_VERDICT_H
#define LOOPSTAT_CHECK_VERDICT_H

#include <sys/types.h>

#include "check/check_expr.h"
#include "model/estimate.h"
#include "loopstat_shm.h"
#include "probe_stat.h"

enum check_verdict { CHECK_PASS, CHECK_FAIL, CHECK_INCONCLUSIVE, CHECK_NOTHING };

/* The verdict of `x op limit` for an estimate of x. */
enum check_verdict check_decide(enum check_op op, const struct estimate *e, double limit, int point_estimate);

/* "pass", "fail", "inconclusive", "nothing" (JSON and TAP use these words). */
const char *check_verdict_str(enum check_verdict v);

/*
 * How far a share of wall time (a "%" row) moves between two runs of the
 * same program beyond each run's own interval, as a standard deviation
 * per run, in points: measured (docs/performance.md, "diff") from runs of
 * one duty cycle on one machine, whose run means spread by more than their
 * batch-means intervals say (CPU contention, placement, the run's start).
 * A run cannot see this in its own seconds, which share its environment.
 * The default of --run-sd: a machine's own is `make bench B=diff`'s
 * diff_run_sd_apart.
 */
#define CHECK_RUN_SD_PTS 1.0
#define CHECK_RUN_SD_MAX 50.0

struct metric;
/* The run-to-run standard deviation of metric m given a share's, pts:
 * pts for a share, 0 for the rest (not measured) and for NULL. */
double check_run_sd(const struct metric *m, double pts);

/* The change a − coef·b of metric m between two runs: est_diff_runs with
 * m's run-to-run spread (pts for a share), as check --baseline and diff
 * judge it. */
int check_runs_diff(const struct metric *m, const struct estimate *a, const struct estimate *b, double coef,
		    double pts, struct estimate *out);

/* --run-sd PTS, for check and diff alike: 0, or -1 with msg filled. */
int check_set_run_sd(const char *arg, double *pts, char *msg, size_t len);

/* One worker × threshold, as every report writes it. */
struct check_result {
	pid_t    pid, tid;
	char     process[PROBE_COMM_LEN];    /* comm */
	char     tag[LOOPSTAT_TAG_LEN];      /* thread tag, "" if none */
	const struct check_threshold *threshold;   /* borrowed */
	struct estimate value;         /* the metric over the run */
	struct estimate baseline;      /* relative thresholds: the baseline's; .ok = 0 otherwise */
	struct estimate judged;        /* what was compared: value, or value − coef·baseline */
	double   limit;                      /* what judged was compared with: the limit, or the offset */
	double   abs_limit;                  /* the limit in the metric's unit (coef·baseline + offset) */
	enum check_verdict verdict;
	double   time_s;                     /* seconds sampled for it */
	int      gone;                       /* the worker exited before the end: judged on what was measured */
};

/*
 * Judges value (and baseline, for a relative threshold; NULL otherwise) and
 * fills r's estimates, limits and verdict; the worker fields are the caller's.
 * A relative threshold without a usable baseline is "nothing"; with one,
 * the difference counts run_sd (check_runs_diff). Returns r->verdict.
 */
enum check_verdict check_result_judge(struct check_result *r, const struct check_threshold *t,
				      const struct estimate *value, const struct estimate *baseline,
				      int point_estimate, double run_sd);

struct check_tally {
	unsigned passed, failed, inconclusive, nothing;
};

void check_tally_add(struct check_tally *t, enum check_verdict v);
void check_tally_results(struct check_tally *t, const struct check_result *r, size_t n);

/*
 * The exit code (exitcodes.h): any fail → EXIT_FAIL; else any nothing (or
 * no result at all) → EXIT_NOTHING; else any inconclusive → EXIT_INCONCLUSIVE,
 * or EXIT_FAIL when inconclusive_fail; else EXIT_OK. A definite regression
 * outranks a partly broken setup, which outranks a verdict still open.
 */
int check_exit_code(const struct check_tally *t, int inconclusive_fail);

#endif /* LOOPSTAT_CHECK_VERDICT_H */
