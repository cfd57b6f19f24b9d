/*
 * exitcodes.h — the exit codes every loopstat command uses (design.md,
 * "one exit-code table"). Scripts and CI gates test these numbers, so they
 * never change meaning. Names avoid <stdlib.h>'s EXIT_SUCCESS/EXIT_FAILURE.
 * Plain macros (not an enum) so an identical older `#define EXIT_USAGE 2`
 * elsewhere stays legal while the commands move over to this header.
 */
#ifndef LOOPSTAT_EXITCODES_H
#define LOOPSTAT_EXITCODES_H

#define EXIT_OK           0   /* done; for check: every threshold passed */
#define EXIT_FAIL         1   /* a check threshold failed (or was inconclusive under --inconclusive=fail) */
#define EXIT_USAGE        2   /* usage or configuration error, found before any sampling */
#define EXIT_INCONCLUSIVE 3   /* check: some threshold undecided, none failed */
#define EXIT_NOTHING      4   /* nothing to measure: no worker, target gone, zero samples */
#define EXIT_ACCESS       5   /* access refused; the message says how to fix it */
#define EXIT_DEFERRED     75  /* export: points spooled for the next run (sysexits' EX_TEMPFAIL) */

#endif /* LOOPSTAT_EXITCODES_H */
