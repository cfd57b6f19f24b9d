/*
 * tui_int.h — what the dashboard's files share: the screen state, the key
 * binding table (which also generates the help screen and is checked
 * against docs/usage.md), the column table, and the drawing entry points.
 * Private to monitor/tui*.c and their tests.
 */
#ifndef LOOPSTAT_TUI_INT_H
#define LOOPSTAT_TUI_INT_H

#include <curses.h>
#include <stddef.h>
#include <sys/types.h>

#include "model/metric.h"
#include "model/model.h"
#include "model/stall_group.h"
#include "model/feed.h"
#include "top/tui.h"

#define TUI_KEY_ESC 27

/*
 * Every key binding, once: action, label (help screen and docs/usage.md),
 * description, and up to three key codes (0: none). Add a key here and the
 * help screen, the dispatcher and the docs test all see it.
 */
#define TUI_KEYS(X) \
	X(QUIT,       "q",          "quit; in the detail or help view: back",               'q', 'Q', 0) \
	X(HELP,       "h or ?",     "show or close this help",                              'h', '?', 0) \
	X(UP,         "Up or k",    "select the previous worker",                           KEY_UP, 'k', 0) \
	X(DOWN,       "Down or j",  "select the next worker",                               KEY_DOWN, 'j', 0) \
	X(PGUP,       "PgUp",       "one page up",                                          KEY_PPAGE, 0, 0) \
	X(PGDN,       "PgDn",       "one page down",                                        KEY_NPAGE, 0, 0) \
	X(HOME,       "Home or g",  "first worker",                                         KEY_HOME, 'g', 0) \
	X(END,        "End or G",   "last worker",                                          KEY_END, 'G', 0) \
	X(SORT,       "s",          "sort by the next column",                              's', 0, 0) \
	X(SORT_LEFT,  "<",          "move the sort column left",                            '<', 0, 0) \
	X(SORT_RIGHT, ">",          "move the sort column right",                           '>', 0, 0) \
	X(REVERSE,    "r",          "reverse the sort order",                               'r', 0, 0) \
	X(FILTER,     "/",          "filter by name, tag or pid (Enter keeps it, Esc clears it)", '/', 0, 0) \
	X(CLEAR,      "Esc",        "clear the filter; in the detail or help view: back",   TUI_KEY_ESC, 0, 0) \
	X(THREADS,    "t",          "show every thread, not only event-loop workers",       't', 0, 0) \
	X(SERVICES,   "S",          "group by service: a row per service, its workers rolled up", 'S', 0, 0) \
	X(DETAIL,     "Enter",      "open the selected worker's detail view",               '\n', '\r', KEY_ENTER) \
	X(PAUSE,      "Space",      "pause or resume sampling",                             ' ', 0, 0) \
	X(FASTER,     "+ or =",     "sample 1.5x faster (at most 10000 Hz, as -r)",                 '+', '=', 0) \
	X(SLOWER,     "-",          "sample 1.5x slower (at least 10 Hz)",                  '-', 0, 0) \
	X(DELAY,      "d",          "cycle the refresh delay: 0.5, 1, 2, 5 s",              'd', 0, 0)

enum tui_action {
	TUI_NONE = 0,
#define TUI_X_ENUM(act, label, desc, k1, k2, k3) TUI_##act,
	TUI_KEYS(TUI_X_ENUM)
#undef TUI_X_ENUM
};

struct tui_key {
	enum tui_action action;
	const char *label;
	const char *desc;
	int codes[3];
};

extern const struct tui_key tui_keys[];
extern const size_t tui_nkeys;

/* The action bound to an ncurses key code, TUI_NONE if none. */
enum tui_action tui_key_action(int ch);

/*
 * The table's columns: id, then for the identity columns (metric NONE) the
 * title, width, minimum width, drop order when the terminal is narrow (1
 * goes first, 0 never) and the help screen's line. A metric column names
 * its row of the metric table: tui_metrics[] gives its title, width (its
 * minimum too) and drop order, the row its help line, cell text, sort key
 * and direction. NAME and TOP-BLOCKER stretch (see tui_layout);
 * TOP-BLOCKER gives up its width first.
 */
#define TUI_COLUMNS(X) \
	X(PID,      "PID",          7,  7, 0, NONE,         "process id") \
	X(TID,      "TID",          7,  7, 5, NONE,         "thread id (the worker is one thread)") \
	X(NAME,     "NAME",        16, 12, 0, NONE,         "process name, /thread tag if it has one") \
	X(BACKEND,  "BACKEND",      8,  8, 4, NONE,         "event-loop backend: io_uring, libev, none (not on the runtime)") \
	X(IDLE,     NULL,           0,  0, 0, idle_pct,     NULL) \
	X(CPU,      NULL,           0,  0, 0, cpu_pct,      NULL) \
	X(BLOCKED,  NULL,           0,  0, 0, blocked_pct,  NULL) \
	X(BLOCKER,  "TOP-BLOCKER", 24,  8, 1, NONE,         "the syscall blocked in most, its share, fd and target") \
	X(OPS,      NULL,           0,  0, 0, ops_per_s,    NULL) \
	X(RUNQ,     NULL,           0,  0, 0, runqueue_len, NULL) \
	X(PEND,     NULL,           0,  0, 0, pending_ops,  NULL) \
	X(STALL,    NULL,           0,  0, 0, stall_ms,     NULL) \
	X(LAG,      NULL,           0,  0, 0, lag_p99_ms,   NULL) \
	X(LIMIT,    "LIMIT",        7,  7, 6, NONE,         "what limits the worker: loop, quota, cpu, pool, backlog or none (the detail view says why)")

/* The detail view's lines a figure may be shown on. */
enum tui_line {
	TUI_LINE_NONE,     /* shown elsewhere (a table column, another's interval) */
	TUI_LINE_IDENTITY, /* the line under the worker's identity */
	TUI_LINE_BAR,      /* "Where the time goes", as a bar */
	TUI_LINE_CPU,      /* the cpu line under the bars */
	TUI_LINE_RATES,    /* runtime: ops/s, switches/s ... */
	TUI_LINE_QUEUES,   /* runtime: runqueue, pending ops, fibers */
	TUI_LINE_SELF,     /* runtime: self-measured idle, headroom */
	TUI_LINE_BLOCKERS, /* under the "Blocked in" list, when not 0 */
	TUI_LINE_LISTEN,   /* under the cpu line: the listen backlog, for a worker that listens */
	TUI_LINE_POOL,     /* under that: the busiest helper pool, for a process that has one */
	TUI_LINE_LIMIT,    /* under those: the limit that holds (1), with its reason */
	TUI_LINE_LAG,      /* "Busy spans", above their histogram */
};

/*
 * How the dashboard shows each figure of the metric table, keyed by its id
 * (tui_metrics.c): the metric table says what a figure is, this where it
 * goes. A figure with a title is a column when TUI_COLUMNS names it.
 */
struct tui_metric {
	const char *title;       /* column title, NULL when not a column */
	int width;               /* column width, cells */
	int drop;                /* drop order on a narrow terminal: 1 goes first, 0 never */
	enum tui_line line;      /* the detail line that shows it */
	const char *detail;      /* its text there ("%s": the formatted value), NULL if none; parts of a
	                          * line are joined by two spaces, a part starting with one is glued on */
};
extern const struct tui_metric tui_metrics[METRIC_NWORKER];

/* Each fleet row's part of the fleet line ("%s": the formatted value). */
extern const char *const tui_fleet_detail[METRIC_NFLEET];

enum tui_column {
#define TUI_X_COL(id, title, width, min, drop, metric, desc) TUI_COL_##id,
	TUI_COLUMNS(TUI_X_COL)
#undef TUI_X_COL
	TUI_NCOLS
};

struct tui_column_info {
	const char *title;
	int width, min, drop;
	int metric;          /* enum worker_metric, -1 for none */
	const char *desc;
};
/* Filled before main (tui_table.c): a metric column's fields are its row's. */
extern struct tui_column_info tui_columns[TUI_NCOLS];

enum tui_mode { TUI_MODE_TABLE, TUI_MODE_DETAIL, TUI_MODE_HELP };

enum tui_pair { TUI_PAIR_RED = 1, TUI_PAIR_YELLOW, TUI_PAIR_GREEN };

#define TUI_FILTER_LEN 64

struct tui {
	struct feed *s;          /* borrowed; NULL in drawing tests */
	struct model m;                  /* latest model, owned */
	size_t *rows;                    /* owned: indices into m.workers, filtered and sorted */
	size_t nrows, rows_cap;
	size_t sel, top;                 /* selected row and first row shown */
	pid_t sel_pid, sel_tid;          /* the selected worker, kept across refreshes and sorts */
	int sort_col;                    /* enum tui_column */
	int sort_rev;                    /* reverse of the column's natural order */
	char filter[TUI_FILTER_LEN];
	int editing;                     /* typing a filter */
	enum tui_mode mode;
	int paused, all_threads;
	int by_service;                  /* the table shows services (S) */
	int targeted;                    /* the user named processes (-p, -n) */
	double delay_s, window_s;
	double rate_hz;                  /* as last set or read, for the header */
	int color, utf8;
	char host[64];
	char msg[96];                    /* one-shot status message */
	int help_top;                    /* first help line shown (the help scrolls) */
	/* the detail view's stalls by stack: every stall of the worker seen since
	 * the view opened on it (its stall_log holds the last few only); a pid
	 * of 0 starts them afresh */
	struct stall_groups dstalls;     /* owned */
	pid_t  dstall_pid, dstall_tid;
	double dstall_t;                 /* the newest stall added, seconds; its group, and its length then */
	int    dstall_g;
	double dstall_ms;
};

/* tui_rows.c: filtering, sorting, selection */
int  tui_rows_update(struct tui *t);          /* 0 or -ENOMEM */
int  tui_row_matches(const struct worker_view *w, const char *filter);
void tui_select(struct tui *t, long delta);    /* moves and clamps, keeps sel_pid/tid */
const struct worker_view *tui_selected(const struct tui *t);

/* tui_fmt.c: text helpers (pure, tested directly) */
void tui_fmt_blocker(char *buf, size_t n, const struct blocker_view *b);
/* a metric's value for a table cell (compact) or a detail line (counts in full), by its unit */
void tui_fmt_metric(char *buf, size_t n, const struct metric *m, const struct worker_view *w, int compact);
/* last `width` values of hist as block characters (UTF-8) or ASCII levels */
void tui_sparkline(char *buf, size_t n, const float *hist, int nhist, int width, int utf8);
/* a bar of pct% of width cells */
void tui_bar(char *buf, size_t n, double pct, int width, int utf8);
/* colour of an idle figure: red < 10, yellow < 30, else green; 0 when colours are off */
int  tui_idle_attr(const struct tui *t, double idle_pct);

/* Column widths for a screen `cols` wide; hidden columns get 0. */
void tui_layout(int cols, int widths[TUI_NCOLS]);

/* Drawing: each draws into stdscr of the current screen. */
int  tui_draw_header(struct tui *t);          /* returns the number of lines used */
void tui_draw_table(struct tui *t, int y, int h);
void tui_draw_detail(struct tui *t, int y, int h);
void tui_draw_help(struct tui *t, int y, int h);
int  tui_help_lines(void);
void tui_draw_status(struct tui *t);
void tui_draw(struct tui *t);                 /* the whole screen for the current mode */

/* tui_state_init / _done: state without a terminal (tests fill t->m by hand). */
void tui_state_init(struct tui *t, struct feed *s, const struct tui_opts *o);
void tui_state_done(struct tui *t);

/* Takes a new model from the source (t->s must be set). 0 or -errno. */
int  tui_refresh_model(struct tui *t);

/* Applies one key. Returns 1 when the dashboard should quit. */
int  tui_handle_key(struct tui *t, int ch);

#endif /* LOOPSTAT_TUI_INT_H */
