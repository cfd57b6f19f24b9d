/*
 * export_run.h — one `loopstat export` run after sampling: points → lines →
 * spool → every destination in parallel (each from its own cursor) →
 * self-report; plus the Prometheus textfile. cmd_export.c calls this once.
 */
#ifndef LOOPSTAT_EXPORT_RUN_H
#define LOOPSTAT_EXPORT_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "export/export_config.h"
#include "export/export_name.h"
#include "export/export_send.h"

struct export_dest_result {
	struct export_dest dest;
	int rc;                  /* 0: everything spooled for it was delivered; else -errno */
	int attempts;
	uint64_t sent;           /* new lines confirmed delivered this run */
	uint64_t resent;         /* lines of the last delivery sent again (export_spool.h: resend) */
	uint64_t expired;        /* lines that aged out or were trimmed before delivery */
	uint64_t pending;        /* lines still spooled for it after the run */
	int64_t oldest_unsent;   /* unix seconds of the oldest pending line, 0 if none */
	char why[256];           /* last failure, lowercase */
};

struct export_result {
	int exit_code;           /* EXIT_OK, EXIT_DEFERRED, EXIT_USAGE, EXIT_ACCESS, EXIT_FAIL */
	uint64_t lines;          /* lines made from the points */
	uint64_t nonfinite;      /* points skipped: NaN or infinite value */
	uint64_t too_long;       /* points skipped: name over the line bound */
	uint64_t spooled;        /* lines added to the spool (self-report included) */
	int64_t spool_bytes;     /* after the run */
	int ndest;
	struct export_dest_result dest[EXPORT_DEST_MAX];
};

/* What one run exports. */
struct export_input {
	const struct expo_point *pts;   /* borrowed; n may be 0: the spool is still flushed */
	size_t n;
	int64_t now;                      /* the run's unix time (--max-age, self-report stamps) */
	const char *host;                 /* names the self-report points (the points' own host otherwise) */
	uint64_t seconds_missed;          /* --resolution 1s: seconds nothing was sampled in (self-report) */
};

/* Refuses before sampling what export_run would refuse after it: the
 * textfile's directory and the spool (opened, locked, closed). EXIT_OK or
 * the exit code export_run would give, the reason said on log. */
int export_run_check(const struct export_opts *o, FILE *log);

/* Runs one export of in->pts. Prints --dry-run lines to out,
 * and at most one line per destination plus one per problem to log (cron
 * mails whatever is printed, so a clean run prints nothing). Returns
 * r->exit_code. Never blocks past lock_wait_s + timeout_s + 2 s (1 s for
 * the self-report pass, 1 s for the spool's bookkeeping: every read of the
 * spool gives up then); the budget starts once this run holds lock.send. */
int export_run(const struct export_opts *o, const struct export_input *in, FILE *out, FILE *log,
               struct export_result *r);

#endif /* LOOPSTAT_EXPORT_RUN_H */
