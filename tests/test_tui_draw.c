/* The dashboard's layout, formatting, sorting, filtering, keys and drawing on a hand-filled model (no sampler). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/limit.h"
#include "support/support.h"
#include "top/tui_int.h"

static SCREEN *scr;
static FILE *out, *in;
static struct tui t;

/* A real ncurses screen writing to /dev/null: drawing code runs as in the
 * terminal and the test reads the cells back with mvinnstr. */
static void open_screen(int lines, int cols)
{
	out = fopen("/dev/null", "w");
	in = fopen("/dev/null", "r");
	cr_assert(out && in);
	scr = newterm("xterm", out, in);
	cr_assert(scr, "newterm(xterm) failed: is ncurses-term/terminfo installed?");
	resizeterm(lines, cols);
}

static void close_screen(void)
{
	if (scr) {
		endwin();
		delscreen(scr);
		scr = NULL;
	}
	if (out)
		fclose(out);
	if (in)
		fclose(in);
	out = in = NULL;
}

static void add_worker(struct model *m, pid_t pid, pid_t tid, const char *name, const char *tag,
		       double idle, double ops)
{
	m->workers = realloc(m->workers, (m->n + 1) * sizeof(*m->workers));
	struct worker_view *w = &m->workers[m->n++];
	memset(w, 0, sizeof(*w));
	w->pid = pid;
	w->tid = tid;
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->tag, sizeof(w->tag), "%s", tag);
	w->backend = "libev";
	w->instrumented = !isnan(ops);
	w->samples = 1000;
	w->idle_pct = idle;
	w->idle_ci95 = 2.5;
	w->blocked_pct = 100 - idle > 20 ? 20 : 100 - idle;
	w->running_pct = 100 - idle - w->blocked_pct;
	w->other_pct = 0;
	w->cpu_pct = w->running_pct;
	w->cpu_wait_pct = 1;
	w->quota_cpus = NAN;   /* no quota: not throttled */
	w->throttled_pct = 0;
	w->accept_queue = w->accept_queue_max = w->accept_queue_limit = NAN;   /* it does not listen */
	w->pool_threads = w->pool_busy_pct = NAN;   /* nor has a helper pool */
	w->limit_loop = model_limit_of(w, NULL, 0) == METRIC_LIMIT_LOOP;   /* as the model sets it */
	w->ops_per_s = ops;
	w->headroom_ops_per_s = NAN;
	w->self_idle_pct = NAN;
	w->nblocked_top = 1;
	snprintf(w->blocked_top[0].syscall, sizeof(w->blocked_top[0].syscall), "fsync");
	w->blocked_top[0].fd = 7;
	snprintf(w->blocked_top[0].target, sizeof(w->blocked_top[0].target), "/var/lib/data.db");
	w->blocked_top[0].pct = w->blocked_pct;
	for (int i = 0; i < 10; i++)
		w->idle_history[i] = (float)(i * 10);
	w->nhistory = 10;
	/* busy spans of about 1 ms, one in fifty of about 40 ms */
	w->lag_p50_ms = 1.1;
	w->lag_p99_ms = 41;
	w->lag_max_ms = 44;
	w->lag_octaves[3] = 49;
	w->lag_octaves[8] = 1;
	w->lag_exact = w->instrumented;
}

static void setup(void)
{
	struct tui_opts o = { .no_color = 0 };
	tui_state_init(&t, NULL, &o);
	t.utf8 = 0;
	add_worker(&t.m, 100, 100, "web", "", 50, 1000);
	add_worker(&t.m, 200, 201, "db", "writer", 5, 20000);
	add_worker(&t.m, 300, 300, "cache", "", 25, NAN);
	t.m.fleet.workers = 3;
	t.m.fleet.mean_idle_pct = 26.7;
	t.m.fleet.idle_pct_min = 2.5;
	t.m.fleet.ops_per_s = 21000;
	t.m.fleet.headroom_ops_per_s = 30000;
	t.m.rate_hz = 200;
	t.m.precision_pts = 2;
	t.rate_hz = 200;   /* as tui_refresh_model would set it */
	t.m.window_s = 5;
	cr_assert_eq(tui_rows_update(&t), 0);
}

static void teardown(void)
{
	close_screen();
	tui_state_done(&t);
}

TestSuite(tui_draw, .init = setup, .fini = teardown, .timeout = 10);

/* The text of screen line y, trailing blanks removed. */
static const char *line(int y)
{
	static char buf[512];
	mvinnstr(y, 0, buf, COLS < 511 ? COLS : 511);
	for (int i = (int)strlen(buf); i > 0 && buf[i - 1] == ' '; i--)
		buf[i - 1] = '\0';
	return buf;
}

/* The first screen line containing s, or -1. */
static int find_line(const char *s)
{
	for (int y = 0; y < LINES; y++)
		if (strstr(line(y), s))
			return y;
	return -1;
}

static const char *screen_text(void)
{
	static char all[64 * 1024];
	all[0] = '\0';
	for (int y = 0; y < LINES; y++) {
		strcat(all, line(y));
		strcat(all, "\n");
	}
	return all;
}

Test(tui_draw, layout_fits_every_width_and_drops_top_blocker_first)
{
	int w[TUI_NCOLS];
	for (int cols = 40; cols <= 300; cols++) {
		tui_layout(cols, w);
		int total = -1, shown = 0;
		for (int c = 0; c < TUI_NCOLS; c++)
			if (w[c]) {
				total += w[c] + 1;
				shown++;
			}
		cr_assert_leq(total, cols, "%d columns need %d cells", cols, total);
		cr_assert(w[TUI_COL_PID] && w[TUI_COL_NAME] && w[TUI_COL_IDLE], "%d cols lost a key column", cols);
		if (shown < TUI_NCOLS)
			cr_assert_eq(w[TUI_COL_BLOCKER], 0, "%d cols: TOP-BLOCKER goes first", cols);
	}
	/* the lag column goes with TOP-BLOCKER, then PEND, RUNQ and BACKEND;
	 * LIMIT, the verdict, outlasts them and TID: 80 cells hold the rest, with
	 * a readable NAME */
	tui_layout(80, w);
	for (int c = 0; c < TUI_NCOLS; c++)
		if (c != TUI_COL_BLOCKER && c != TUI_COL_LAG && c != TUI_COL_PEND && c != TUI_COL_RUNQ &&
		    c != TUI_COL_BACKEND)
			cr_assert_gt(w[c], 0, "80 cols keep %s", tui_columns[c].title);
	cr_assert_geq(w[TUI_COL_NAME], 12, "80 cols: NAME %d cells", w[TUI_COL_NAME]);
	tui_layout(64, w);
	cr_assert_gt(w[TUI_COL_LIMIT], 0, "64 cols keep LIMIT");
	cr_assert_eq(w[TUI_COL_TID], 0, "64 cols drop TID before LIMIT");
	tui_layout(107, w);
	for (int c = 0; c < TUI_NCOLS; c++)
		cr_assert_gt(w[c], 0, "107 cols show %s", tui_columns[c].title);
}

Test(tui_draw, formatting_helpers)
{
	char b[64];
	metric_format(b, sizeof(b), METRIC_PCT, NAN, 0);
	cr_assert_str_eq(b, "-");
	metric_format(b, sizeof(b), METRIC_PCT, 42.25, 0);
	cr_assert_str_eq(b, "42.2");
	metric_format(b, sizeof(b), METRIC_PER_S, 12345, 0);
	cr_assert_str_eq(b, "12.3k");
	metric_format(b, sizeof(b), METRIC_PER_S, 2.5e6, 0);
	cr_assert_str_eq(b, "2.5M");
	metric_format(b, sizeof(b), METRIC_PER_S, 950, 0);
	cr_assert_str_eq(b, "950");
	metric_format(b, sizeof(b), METRIC_MS, 0, 0);
	cr_assert_str_eq(b, "-");
	metric_format(b, sizeof(b), METRIC_MS, 1800, 0);
	cr_assert_str_eq(b, "1.8s");
	metric_format(b, sizeof(b), METRIC_MS, 250, 0);
	cr_assert_str_eq(b, "250ms");

	float hist[] = { 0, 12.5f, 50, NAN, 99, 100 };
	tui_sparkline(b, sizeof(b), hist, 6, 80, 0);
	cr_assert_str_eq(b, "_.= ##");
	tui_sparkline(b, sizeof(b), hist, 6, 2, 0);
	cr_assert_str_eq(b, "##", "only the newest values fit");
	tui_sparkline(b, sizeof(b), hist, 6, 3, 1);
	cr_assert_str_eq(b, " ██");
	tui_bar(b, sizeof(b), 50, 10, 0);
	cr_assert_str_eq(b, "#####");
	tui_bar(b, sizeof(b), 5, 10, 1);
	cr_assert_str_eq(b, "▌");
	tui_bar(b, sizeof(b), NAN, 10, 1);
	cr_assert_str_eq(b, "");
}

Test(tui_draw, idle_thresholds_pick_colours_unless_disabled)
{
	t.color = 1;
	cr_assert(tui_idle_attr(&t, 5) & COLOR_PAIR(TUI_PAIR_RED));
	cr_assert(tui_idle_attr(&t, 20) & COLOR_PAIR(TUI_PAIR_YELLOW));
	cr_assert(tui_idle_attr(&t, 30) & COLOR_PAIR(TUI_PAIR_GREEN));
	cr_assert_eq(tui_idle_attr(&t, NAN), 0);
	t.color = 0;
	cr_assert_eq(tui_idle_attr(&t, 5), 0);
	struct tui u;
	setenv("NO_COLOR", "1", 1);
	tui_state_init(&u, NULL, NULL);
	unsetenv("NO_COLOR");
	cr_assert_eq(u.color, 0, "NO_COLOR turns colours off");
	struct tui_opts o = { .no_color = 1 };
	tui_state_init(&u, NULL, &o);
	cr_assert_eq(u.color, 0, "--no-color turns colours off");
}

static pid_t row_pid(size_t r)
{
	return t.m.workers[t.rows[r]].pid;
}

Test(tui_draw, sorts_busiest_first_and_cycles_columns)
{
	cr_assert_eq(t.nrows, 3);
	cr_assert_eq(row_pid(0), 200, "least idle first");
	cr_assert_eq(row_pid(1), 300);
	cr_assert_eq(row_pid(2), 100);
	tui_handle_key(&t, 'r');
	cr_assert_eq(row_pid(0), 100, "reversed");
	/* '<' from IDLE% goes to BACKEND, then NAME */
	tui_handle_key(&t, '<');
	tui_handle_key(&t, '<');
	cr_assert_eq(t.sort_col, TUI_COL_NAME);
	cr_assert_eq(row_pid(0), 300, "cache < db < web");
	cr_assert_eq(row_pid(2), 100);
	tui_handle_key(&t, '>');
	tui_handle_key(&t, '>');
	tui_handle_key(&t, '>');
	tui_handle_key(&t, '>');
	tui_handle_key(&t, '>');
	tui_handle_key(&t, 's');
	cr_assert_eq(t.sort_col, TUI_COL_OPS);
	cr_assert_eq(row_pid(0), 200, "most ops first");
	cr_assert_eq(row_pid(2), 300, "unknown ops last");
	for (int i = 0; i < TUI_NCOLS; i++)
		tui_handle_key(&t, 's');
	cr_assert_eq(t.sort_col, TUI_COL_OPS, "s cycles through every column");
}

Test(tui_draw, filter_by_name_tag_or_pid_and_esc_clears)
{
	tui_handle_key(&t, '/');
	cr_assert(t.editing);
	tui_handle_key(&t, 'w');
	cr_assert_eq(t.nrows, 2, "web and db/writer match 'w'");
	tui_handle_key(&t, 'e');
	tui_handle_key(&t, 'b');
	cr_assert_eq(t.nrows, 1);
	cr_assert_eq(row_pid(0), 100);
	tui_handle_key(&t, KEY_BACKSPACE);
	tui_handle_key(&t, KEY_BACKSPACE);
	tui_handle_key(&t, 'r');
	cr_assert_eq(t.nrows, 1, "'wr' is in the tag 'writer'");
	cr_assert_eq(row_pid(0), 200);
	tui_handle_key(&t, '\r');
	cr_assert_not(t.editing);
	cr_assert_str_eq(t.filter, "wr");
	tui_handle_key(&t, TUI_KEY_ESC);
	cr_assert_eq(t.nrows, 3, "Esc clears the filter");
	tui_handle_key(&t, '/');
	tui_handle_key(&t, '3');
	tui_handle_key(&t, '0');
	cr_assert_eq(t.nrows, 1, "pid 300");
	tui_handle_key(&t, TUI_KEY_ESC);
	cr_assert_not(t.editing);
	cr_assert_eq(t.nrows, 3, "Esc while typing clears too");
}

Test(tui_draw, selection_follows_its_worker_and_modes_switch)
{
	open_screen(24, 80);
	tui_handle_key(&t, KEY_DOWN);
	cr_assert_eq(t.sel_pid, 300);
	tui_handle_key(&t, 'r');
	cr_assert_eq(row_pid(t.sel), 300, "still on pid 300 after a re-sort");
	tui_handle_key(&t, KEY_END);
	tui_handle_key(&t, KEY_UP);
	tui_handle_key(&t, KEY_HOME);
	cr_assert_eq(t.sel, 0);
	cr_assert_eq(tui_handle_key(&t, '\r'), 0);
	cr_assert_eq(t.mode, TUI_MODE_DETAIL);
	cr_assert_eq(tui_handle_key(&t, 'q'), 0, "q in the detail view goes back");
	cr_assert_eq(t.mode, TUI_MODE_TABLE);
	tui_handle_key(&t, '?');
	cr_assert_eq(t.mode, TUI_MODE_HELP);
	tui_handle_key(&t, TUI_KEY_ESC);
	cr_assert_eq(t.mode, TUI_MODE_TABLE);
	tui_handle_key(&t, 'd');
	cr_assert_float_eq(t.delay_s, 2, 1e-9);
	tui_handle_key(&t, 'd');
	tui_handle_key(&t, 'd');
	cr_assert_float_eq(t.delay_s, 0.5, 1e-9, "5 s wraps to 0.5 s");
	t.rate_hz = 9000;
	tui_handle_key(&t, '+');
	cr_assert_float_eq(t.rate_hz, CLI_RATE_MAX, 1e-9, "rate capped where -r caps it");
	tui_handle_key(&t, '-');
	cr_assert_float_eq(t.rate_hz, CLI_RATE_MAX / 1.5, 1e-6);
	tui_handle_key(&t, ' ');
	cr_assert(t.paused);
	cr_assert_eq(tui_handle_key(&t, 'q'), 1, "q in the table quits");
}

Test(tui_draw, table_at_80x24)
{
	open_screen(24, 80);
	t.m.workers[0].gone = 1;
	tui_draw(&t);
	const char *all = screen_text();
	int title = find_line("PID");
	cr_assert_geq(title, 0, "%s", all);
	cr_assert(strstr(line(title), "IDLE%") && strstr(line(title), "STALL"), "%s", all);
	cr_assert_null(strstr(line(title), "TOP-BLOCKER"), "no room for TOP-BLOCKER at 80: %s", all);
	cr_assert(strstr(line(title + 1), " 200 ") && strstr(line(title + 1), "db/writer"), "%s", all);
	cr_assert(strstr(line(title + 1), "20.0k"), "%s", all);
	cr_assert(strstr(line(title + 3), " 100 "), "%s", all);
	cr_assert(strstr(all, "workers 3") && strstr(all, "mean idle 26.7%"), "%s", all);
	cr_assert(strstr(all, "ops/s 21.0k") && strstr(all, "headroom 30.0k"), "%s", all);
	cr_assert(strstr(all, "rate 200 Hz"), "%s", all);
	/* the gone worker's row is dim, the selected one reversed */
	cr_assert(mvinch(title + 3, 2) & A_DIM);
	cr_assert(mvinch(title + 1, 2) & A_REVERSE);
}

/* 136 cells: the columns' widths (the lag's and LIMIT's included) and the
 * blocker's 31 characters */
Test(tui_draw, table_at_136_shows_the_top_blocker_and_colours_idle)
{
	open_screen(30, 136);
	tui_handle_key(&t, KEY_DOWN);   /* keep the colour check off the selected row */
	tui_handle_key(&t, KEY_DOWN);
	tui_draw(&t);
	const char *all = screen_text();
	int y = find_line("db/writer");
	cr_assert_geq(y, 0, "%s", all);
	cr_assert(strstr(line(y), "fsync 20% fd 7 /var/lib/data.db"), "%s", all);
	const char *l = line(y);
	int x = (int)(strstr(l, " 5.0") - l) + 1;
	chtype c = mvinch(y, x);
	cr_assert_eq(PAIR_NUMBER(c & A_COLOR), TUI_PAIR_RED, "idle 5%% is red (pair %d)", (int)PAIR_NUMBER(c));
}

/* The fleet line leaves out what no worker measured, rather than "-". */
Test(tui_draw, fleet_line_leaves_out_unknown_figures)
{
	open_screen(24, 100);
	t.m.fleet.ops_per_s = t.m.fleet.headroom_ops_per_s = NAN;
	tui_draw(&t);
	const char *l = line(1);
	cr_assert(strstr(l, "workers 3") && strstr(l, "mean idle 26.7%"), "%s", l);
	cr_assert_null(strstr(l, "ops/s"), "unknown ops/s shown: %s", l);
	cr_assert_null(strstr(l, " - "), "a '-' in the fleet line: %s", l);
}

Test(tui_draw, many_rows_scroll_with_the_selection)
{
	for (int i = 0; i < 60; i++)
		add_worker(&t.m, 1000 + i, 1000 + i, "many", "", 60 + i * 0.1, 1);
	tui_rows_update(&t);
	open_screen(24, 80);
	tui_handle_key(&t, KEY_END);
	tui_draw(&t);
	cr_assert_geq(find_line("1059"), 0, "last row visible after End:\n%s", screen_text());
	cr_assert_lt(find_line("db/writer"), 0, "first row scrolled away");
	tui_handle_key(&t, KEY_PPAGE);
	tui_handle_key(&t, KEY_HOME);
	tui_draw(&t);
	cr_assert_geq(find_line("db/writer"), 0, "%s", screen_text());
}

Test(tui_draw, detail_view_shows_breakdown_blockers_and_stall)
{
	open_screen(30, 100);
	t.m.workers[1].stall_ms = 1800;
	snprintf(t.m.workers[1].fiber_tag, sizeof(t.m.workers[1].fiber_tag), "handler");
	tui_handle_key(&t, '\r');   /* pid 200 is first: least idle */
	tui_draw(&t);
	const char *all = screen_text();
	cr_assert(strstr(all, "worker pid 200 tid 201"), "%s", all);
	cr_assert(strstr(all, "blocked") && strstr(all, "running") && strstr(all, "idle"), "%s", all);
	cr_assert(strstr(all, "fsync") && strstr(all, "fd 7") && strstr(all, "/var/lib/data.db"), "%s", all);
	cr_assert(strstr(all, "STALLED 1.8s in fiber handler"), "%s", all);
	cr_assert(strstr(all, "idle% history"), "%s", all);
	/* the worker leaves the model: the view says so rather than switch */
	t.m.n = 1;
	tui_rows_update(&t);
	tui_draw(&t);
	all = screen_text();
	cr_assert(strstr(all, "pid 200 tid 201 is gone"), "%s", all);
}

static void fsync_stall(struct stall_view *s, double t_s, double dur_ms)
{
	*s = (struct stall_view){ .t_s = t_s, .dur_ms = dur_ms, .ended = 1, .state = "blocked", .fd = 7,
				  .stack_from = "syscall", .nframes = 2 };
	snprintf(s->syscall, sizeof(s->syscall), "fsync");
	snprintf(s->target, sizeof(s->target), "/var/lib/data.db");
	snprintf(s->frames[0], sizeof(s->frames[0]), "libc.so.6`fsync");
	snprintf(s->frames[1], sizeof(s->frames[1]), "db`flush_wal");
}

/* The captured stalls, grouped by stack as report groups them: one line
 * per stack with count, first .. last and worst, the most frequent first,
 * then its innermost frames; every stall seen since the view opened, the
 * log's last few at each refresh. */
Test(tui_draw, detail_view_groups_the_stalls_by_stack)
{
	open_screen(40, 110);
	struct worker_view *w = &t.m.workers[1];
	/* newest first: two of one stack around one of another */
	fsync_stall(&w->stall_log[0], 20.0, 410);
	w->stall_log[1] = (struct stall_view){ .t_s = 15.5, .dur_ms = 150, .ended = 1, .state = "running", .fd = -1,
					       .stack_from = "perf", .nframes = 1 };
	snprintf(w->stall_log[1].frames[0], sizeof(w->stall_log[1].frames[0]), "app`parse_json");
	fsync_stall(&w->stall_log[2], 12.5, 230);
	w->nstall_log = 3;
	tui_handle_key(&t, '\r');
	tui_draw(&t);
	const char *all = screen_text();
	cr_assert(strstr(all, "Stalls by stack"), "%s", all);
	int two = find_line("  2x      12.5s ..     20.0s  worst 410 ms  blocked   fsync  fd 7 /var/lib/data.db");
	int one = find_line("  1x      15.5s ..     15.5s  worst 150 ms  running");
	cr_assert_geq(two, 0, "the fsync stack once, counted twice:\n%s", all);
	cr_assert_gt(one, two, "the other stack after it:\n%s", all);
	cr_assert_eq(find_line("    libc.so.6`fsync"), two + 1, "its innermost frame under it:\n%s", all);
	cr_assert_eq(find_line("    db`flush_wal"), two + 2, "%s", all);
	cr_assert_eq(find_line("    app`parse_json"), one + 1, "%s", all);

	/* a refresh: the log's oldest fell out, a newer fsync stall came in, not
	 * yet over; the view keeps what it saw: three of that stack */
	w->stall_log[2] = w->stall_log[1];
	w->stall_log[1] = w->stall_log[0];
	fsync_stall(&w->stall_log[0], 31.0, 120);
	w->stall_log[0].ended = 0;
	tui_draw(&t);
	all = screen_text();
	cr_assert_geq(find_line("  3x      12.5s ..     31.0s  worst 410 ms  blocked"), 0, "%s", all);
	cr_assert_geq(find_line("  1x      15.5s ..     15.5s  worst 150 ms  running"), 0, "counted once: %s", all);
	cr_assert(strstr(all, "Stalls by stack (4 seen since this view opened"), "%s", all);
	/* its span ended 900 ms out of the poll: the worst is its whole length */
	w->stall_log[0].dur_ms = 900;
	w->stall_log[0].ended = 1;
	tui_draw(&t);
	cr_assert_geq(find_line("  3x      12.5s ..     31.0s  worst 900 ms  blocked"), 0, "%s", screen_text());
	/* back to the table and in again: afresh, from the log */
	tui_handle_key(&t, 'q');
	tui_handle_key(&t, '\r');
	tui_draw(&t);
	cr_assert_geq(find_line("  2x      20.0s ..     31.0s  worst 900 ms  blocked"), 0, "%s", screen_text());
}

Test(tui_draw, help_lists_every_key_and_scrolls)
{
	open_screen(24, 80);
	tui_handle_key(&t, '?');
	tui_draw(&t);
	const char *all = screen_text();
	cr_assert(strstr(all, "Keys"), "%s", all);
	for (size_t i = 0; i < tui_nkeys && i < 15; i++)
		cr_assert(strstr(all, tui_keys[i].desc), "help shows '%s':\n%s", tui_keys[i].desc, all);
	tui_handle_key(&t, KEY_END);
	tui_draw(&t);
	all = screen_text();
	cr_assert(strstr(all, "STALL "), "scrolled to the columns:\n%s", all);
}

Test(tui_draw, detail_of_an_uninstrumented_worker_and_the_ascii_header)
{
	open_screen(24, 80);
	struct worker_view *w = &t.m.workers[2];   /* cache: no ops, so not instrumented */
	w->no_access = 1;
	w->nblocked_top = 0;
	w->backend = "none";
	t.m.fleet.nhistory = 3;
	t.m.fleet.idle_history[0] = 0;
	t.m.fleet.idle_history[1] = 50;
	t.m.fleet.idle_history[2] = 100;
	tui_handle_key(&t, KEY_DOWN);
	cr_assert_eq(t.sel_pid, 300);
	tui_handle_key(&t, '\r');
	tui_draw(&t);
	const char *all = screen_text();
	cr_assert(strstr(all, "fleet idle% (3 s) _=#"), "ASCII sparkline:\n%s", all);
	cr_assert(strstr(all, "not instrumented"), "%s", all);
	cr_assert(strstr(all, "/proc refused access"), "%s", all);
	cr_assert(strstr(all, "not on the loopstat runtime"), "%s", all);
	cr_assert(strstr(all, "no blocking syscall seen"), "%s", all);
	cr_assert(strstr(all, "+-2.5"), "ASCII interval:\n%s", all);
}

Test(tui_draw, empty_model_draws_a_hint)
{
	struct tui e;
	tui_state_init(&e, NULL, NULL);
	cr_assert_eq(tui_rows_update(&e), 0);
	cr_assert_eq(e.nrows, 0);
	open_screen(24, 80);
	tui_draw(&e);
	cr_assert_geq(find_line("no event-loop workers found"), 0, "%s", screen_text());
	cr_assert_eq(tui_handle_key(&e, '\r'), 0);
	cr_assert_eq(e.mode, TUI_MODE_TABLE, "no detail view without a worker");
	tui_handle_key(&e, KEY_DOWN);
	tui_handle_key(&e, 's');
	tui_state_done(&e);
}

/* The whole screen against a golden copy (the clock on line 0 masked), so
 * that views walking the metric table draw what they drew by hand. */
static void check_screen(const char *golden)
{
	char *all = strdup(screen_text());
	char *clock = strstr(all, ":") ? strchr(all, ':') - 2 : NULL;
	if (clock && clock < strchr(all, '\n'))
		memcpy(clock, "HH:MM:SS", 8);
	if (getenv("LOOPSTAT_GOLDEN_WRITE")) {
		FILE *g = fopen(golden, "w");
		fputs(all, g);
		fclose(g);
	}
	char *want = ts_read_file(golden);
	cr_assert_str_eq(all, want, "%s differs; got:\n%s", golden, all);
	free(want);
	free(all);
}

static void golden_model(void)
{
	snprintf(t.host, sizeof(t.host), "host");
	struct worker_view *w = &t.m.workers[1];   /* db/writer, instrumented */
	w->switches_per_s = 30000;
	w->polls_per_s = 1500;
	w->completions_per_s = 19000;
	w->runqueue_len = 4;
	w->runqueue_max = 12345;
	w->pending_ops = 8;
	w->fibers = 31;
	w->self_idle_pct = 6.5;
	w->headroom_ops_per_s = 21052.6;
	w->stall_ms = 0;
	snprintf(w->fiber_tag, sizeof(w->fiber_tag), "writer");
	snprintf(w->loop_basis, sizeof(w->loop_basis), "published wait fd");
	/* the run's breakdown: the detail view lists it and sums the fibers */
	static const struct key_view keys[] = {
		{ .cls = "running", .nr = -1, .fd = -1, .fiber = "writer", .pct = 60.0 },
		{ .cls = "blocked", .nr = 74, .syscall = "fsync", .fd = 7, .target = "/var/lib/data.db", .pc = 0x7f0011223344,
		  .fiber = "writer", .pct = 20.0 },
		{ .cls = "running", .nr = -1, .fd = -1, .fiber = "compactor", .pct = 15.0 },
		{ .cls = "idle", .nr = 232, .syscall = "epoll_wait", .fd = 5, .target = "anon_inode:[eventpoll]",
		  .pc = 0x7f0011220000, .pct = 5.0 },
	};
	memcpy(w->keys, keys, sizeof(keys));
	w->nkeys = 4;
	t.m.workers[0].stall_ms = 1800;
	t.m.workers[0].runqueue_len = 12000;
}

Test(tui_draw, table_screen_is_unchanged)
{
	golden_model();
	open_screen(30, 130);
	tui_draw(&t);
	check_screen("tests/golden/tui_table.txt");
}

Test(tui_draw, detail_screens_are_unchanged)
{
	golden_model();
	open_screen(30, 100);
	tui_handle_key(&t, KEY_DOWN);   /* sorted by idle: db first, then cache */
	tui_handle_key(&t, KEY_UP);
	tui_handle_key(&t, '\r');
	tui_draw(&t);
	check_screen("tests/golden/tui_detail_instrumented.txt");
	tui_handle_key(&t, 'q');
	tui_handle_key(&t, KEY_DOWN);
	tui_handle_key(&t, '\r');
	tui_draw(&t);
	check_screen("tests/golden/tui_detail_plain.txt");
}
