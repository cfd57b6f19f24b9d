/*
 * check_baseline.h — a previous `loopstat check --json` result, read back
 * (json-c) for relative thresholds (`idle_pct>=baseline-5`): each result's
 * estimate, found by metric, filter, process and tag (pids change between
 * runs; the threshold's limit may change too).
 */
#ifndef LOOPSTAT_CHECK_BASELINE_H
#define LOOPSTAT_CHECK_BASELINE_H

#include <stddef.h>

#include "check/check_expr.h"
#include "model/estimate.h"

struct check_baseline_row {
	char     metric[64];
	char     filter[CHECK_FILTERS * 2 * CHECK_FILTER_LEN];  /* "key=value,..." in threshold order */
	char     process[64];
	char     tag[64];
	struct estimate est;
};

struct check_baseline {
	struct check_baseline_row *v;   /* owned */
	size_t n;
};

/* Reads a --json file. Returns 0, or -errno / -EINVAL with err filled
 * ("FILE: not a loopstat check --json result: ..."). */
int  check_baseline_read(struct check_baseline *b, const char *path, char *err, size_t errlen);
void check_baseline_done(struct check_baseline *b);

/* The baseline of threshold t for a worker (process, tag); NULL if the
 * file has none. */
const struct estimate *check_baseline_find(const struct check_baseline *b, const struct check_threshold *t,
						  const char *process, const char *tag);

#endif /* LOOPSTAT_CHECK_BASELINE_H */
