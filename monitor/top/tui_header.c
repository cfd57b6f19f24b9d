/*
 * tui_header.c — the lines around the table: host, time, sampling rate and
 * fleet totals with the fleet idle sparkline at the top; key hints, the
 * filter being typed or a one-shot message at the bottom.
 */
#include "top/tui_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void fmt_secs(char *buf, size_t n, double s)
{
	snprintf(buf, n, s < 1 ? "%.1f" : "%.0f", s);
}

int tui_draw_header(struct tui *t)
{
	const struct fleet_view *f = &t->m.fleet;
	char now[16], delay[16], win[16];
	time_t tt = time(NULL);
	double unix_s;
	/* a replay shows its recording's clock, stopped at its end */
	int ended = t->s ? feed_clock(t->s, &unix_s) : 0;
	if (t->s)
		tt = (time_t)unix_s;
	struct tm tm;
	localtime_r(&tt, &tm);
	strftime(now, sizeof(now), "%H:%M:%S", &tm);
	fmt_secs(delay, sizeof(delay), t->delay_s);
	fmt_secs(win, sizeof(win), t->window_s);

	/* the rate the user set with + and -, the precision the figures were sampled at */
	struct model at = t->m;
	at.rate_hz = t->rate_hz;
	char how[64];
	model_sampling_text(&at, how, sizeof(how));
	mvprintw(0, 0, "loopstat  %s  %s  rate %s  window %s s  refresh %s s", t->host, now, how, win, delay);
	/* the kernel's exact counts, or why auto could not have them */
	if (strcmp(t->m.source, "bpf") == 0)
		printw("  source bpf");
	else if (t->m.source_why[0])
		printw("  source proc (%s)", t->m.source_why);
	if (t->paused || ended) {
		attron(A_BOLD | A_REVERSE);
		printw(ended ? "  REPLAY ENDED " : "  PAUSED ");
		attroff(A_BOLD | A_REVERSE);
	}

	/* the fleet line: every fleet row's part that some worker measured
	 * (an unknown one is left out, not shown as "-"), mean idle in its colour */
	int a = tui_idle_attr(t, f->workers ? f->mean_idle_pct : NAN);
	move(1, 0);
	for (int i = 0; i < METRIC_NFLEET; i++) {
		const struct metric *m = &metric_fleet[i];
		double x = f->workers || i == METRIC_F_workers ? metric_value(m, f) : NAN;
		if (isnan(x))
			continue;
		char val[32], part[64];
		metric_format(val, sizeof(val), m->unit, x, 0);
		snprintf(part, sizeof(part), tui_fleet_detail[i], val);
		if (i)
			printw("  ");
		if (i != METRIC_F_mean_idle_pct) {
			printw("%s", part);
			continue;
		}
		const char *v = strstr(part, val);   /* the value alone is coloured */
		printw("%.*s", (int)(v - part), part);
		attron(a | A_BOLD);
		printw("%s", v);
		attroff(a | A_BOLD);
	}

	/* the sparkline takes what is left of its line: one cell per second */
	char label[48], spark[4 * MODEL_HISTORY + 1];
	snprintf(label, sizeof(label), "fleet idle%% (%d s) ", f->nhistory < COLS ? f->nhistory : COLS);
	int width = COLS - (int)strlen(label) - 1;
	tui_sparkline(spark, sizeof(spark), f->idle_history, f->nhistory, width, t->utf8);
	mvprintw(2, 0, "%s", label);
	attron(a);
	printw("%s", spark);
	attroff(a);

	mvprintw(3, 0, "sort %s%s  threads: %s", tui_columns[t->sort_col].title,
		 t->sort_rev ? " (reversed)" : "", t->all_threads ? "all" : t->m.servers_only ? "servers" : "event-loop workers");
	char left[160];
	if (*model_left_out_text(&t->m, left, sizeof(left)))
		printw("  %s", left);
	if (t->filter[0])
		printw("  filter \"%s\" (%zu of %zu)", t->filter, t->nrows, t->m.n);
	if (t->m.swept)
		printw("  swept %u processes, %u threads: %u loops", t->m.sweep.procs, t->m.sweep.threads,
		       t->m.sweep.loops);
	if (t->m.swept && t->m.sweep.ignored_access)
		printw("  ignored: %u process%s (permission)", t->m.sweep.ignored_access,
		       t->m.sweep.ignored_access == 1 ? "" : "es");
	if (t->m.ignored)
		printw("  %u threads ignored (limit: --max-workers)", t->m.ignored);
	if (t->m.nrefused)
		printw("  access refused: %u process%s (loopstat list says why)", t->m.nrefused,
		       t->m.nrefused == 1 ? "" : "es");
	return 4;
}

void tui_draw_status(struct tui *t)
{
	int y = LINES - 1;
	move(y, 0);
	clrtoeol();
	if (t->editing) {
		mvprintw(y, 0, "filter: %s", t->filter);
		curs_set(1);
		return;
	}
	curs_set(0);
	if (t->msg[0]) {
		mvprintw(y, 0, "%.*s", COLS - 1, t->msg);
		return;
	}
	static const char table_hints[] =
		"q quit  ? help  Enter detail  / filter  s sort  t threads  space pause  +/- rate  d delay";
	static const char detail_hints[] = "q/Esc back  ? help";
	static const char help_hints[] = "q/Esc back  Up/Down/PgUp/PgDn scroll";
	const char *h = t->mode == TUI_MODE_TABLE ? table_hints
		      : t->mode == TUI_MODE_HELP ? help_hints : detail_hints;
	attron(A_DIM);
	mvprintw(y, 0, "%.*s", COLS - 1, h);
	attroff(A_DIM);
}
