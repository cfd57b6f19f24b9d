/*
 * exitcodes.h — the exit codes every loopstat command uses (design.md, "one exit-code table").
 */
#ifndef LOOPSTAT_EXITCODES_H
#define LOOPSTAT_EXITCODES_H

#define EXIT_OK           0  /* all good */
#define EXIT_FAIL         1  /* a check threshold failed */
#define EXIT_USAGE        2  /* usage or configuration error */
#define EXIT_INCONCLUSIVE 3  /* check inconclusive */
#define EXIT_NOTHING      4  /* nothing to measure: no worker, target gone, too few samples */
#define EXIT_ACCESS       5  /* access refused (the message says how to fix it) */
#define EXIT_DEFERRED     75 /* export deferred: points spooled for the next run (EX_TEMPFAIL) */

#endif /* LOOPSTAT_EXITCODES_H */
