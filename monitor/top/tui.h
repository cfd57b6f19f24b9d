/*
 * tui.h — the live dashboard (`loopstat top`): a top-like ncursesw view of
 * the sampler's model. It only formats, sorts and filters model rows; all
 * figures come from the source's snapshots (the live sampler, or a
 * replayed recording).
 */
#ifndef LOOPSTAT_TUI_H
#define LOOPSTAT_TUI_H

#include "cli.h"
#include "model/feed.h"

#define TUI_DEFAULT_DELAY_S   1.0
#define TUI_DEFAULT_WINDOW_S  5.0   /* 500 samples at 100 Hz: idle% within ±4.4 points */
#define TUI_MIN_RATE_HZ       10.0
#define TUI_MAX_RATE_HZ       ((double)CLI_RATE_MAX) /* + goes as far as -r */

struct tui_opts {
	double delay_s;      /* seconds between screen refreshes; 0: default */
	double window_s;     /* seconds of samples each figure covers; 0: default */
	int    no_color;     /* --no-color; NO_COLOR in the environment also disables colours */
	int    targeted;     /* processes were named (-p, -n): the empty table says so */
};

/*
 * Runs the dashboard on the terminal until the user quits. Returns 0 after
 * 'q', the signal number when SIGINT, SIGTERM or SIGHUP stopped it (the
 * terminal is restored either way), or -errno when there is no terminal.
 */
int tui_run(struct feed *s, const struct tui_opts *o);

#endif /* LOOPSTAT_TUI_H */
