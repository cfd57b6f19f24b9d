/*
 * tui_table.c — the worker table: column layout for the terminal's width
 * (narrow terminals lose TOP-BLOCKER's width first, then whole columns in
 * a fixed order: LIMIT, the verdict, outlasts PEND, RUNQ, BACKEND and TID), one line per worker, colours by idle threshold.
 */
#include "top/tui_int.h"
#include "model/limit.h"
#include "util/textsafe.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct tui_column_info tui_columns[TUI_NCOLS] = {
#define METRIC_W_NONE (-1)
#define TUI_X_INFO(id, title, width, min, drop, metric, desc) { title, width, min, drop, METRIC_W_##metric, desc },
	TUI_COLUMNS(TUI_X_INFO)
#undef TUI_X_INFO
};

__attribute__((constructor)) static void columns_from_rows(void)
{
	for (int c = 0; c < TUI_NCOLS; c++) {
		struct tui_column_info *k = &tui_columns[c];
		if (k->metric < 0)
			continue;
		const struct tui_metric *l = &tui_metrics[k->metric];
		*k = (struct tui_column_info){ l->title, l->width, l->width, l->drop, k->metric, metric_worker[k->metric].desc };
	}
}

static int visible_total(const int w[TUI_NCOLS])
{
	int total = 0, n = 0;
	for (int c = 0; c < TUI_NCOLS; c++)
		if (w[c] > 0) {
			total += w[c];
			n++;
		}
	return total + (n > 0 ? n - 1 : 0);   /* one space between columns */
}

void tui_layout(int cols, int w[TUI_NCOLS])
{
	for (int c = 0; c < TUI_NCOLS; c++)
		w[c] = tui_columns[c].min;
	/* drop columns in their drop order until the minimum widths fit */
	for (int order = 1; visible_total(w) > cols; order++) {
		int dropped = 0;
		for (int c = 0; c < TUI_NCOLS; c++)
			if (tui_columns[c].drop == order) {
				w[c] = 0;
				dropped = 1;
			}
		if (!dropped && order > TUI_NCOLS)
			break;   /* only undroppable columns left: let them be cut */
	}
	/* share what is left: a readable NAME, then a readable TOP-BLOCKER,
	 * then NAME's full width; TOP-BLOCKER takes the rest */
	const struct { int col, upto; } grow[] = {
		{ TUI_COL_NAME, 12 },
		{ TUI_COL_BLOCKER, tui_columns[TUI_COL_BLOCKER].width },
		{ TUI_COL_NAME, tui_columns[TUI_COL_NAME].width },
		{ TUI_COL_BLOCKER, 34 },   /* a syscall, its share, an fd and most paths */
		{ TUI_COL_BLOCKER, 1 << 20 },
	};
	int extra = cols - visible_total(w);
	for (size_t i = 0; i < sizeof(grow) / sizeof(grow[0]) && extra > 0; i++) {
		int c = grow[i].col;
		if (w[c] == 0 || w[c] >= grow[i].upto)
			continue;
		int g = grow[i].upto - w[c];
		g = g < extra ? g : extra;
		w[c] += g;
		extra -= g;
	}
}

static int right_aligned(int c)
{
	return c != TUI_COL_NAME && c != TUI_COL_BACKEND && c != TUI_COL_BLOCKER;
}

/* Bytes of s that fill at most `cells` cells (one cell per code point). */
static size_t fit(const char *s, int cells)
{
	size_t i = 0;
	int used = 0;
	while (s[i]) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (used == cells)
				break;
			used++;
		}
		i++;
	}
	return i;
}

static int cells_of(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Writes s in a field of width cells at (y, x), padded and aligned. */
static void put_field(int y, int x, const char *s, int width, int right, int attr)
{
	size_t len = fit(s, width);
	char tmp[512];
	snprintf(tmp, sizeof(tmp), "%.*s", (int)len, s);
	int pad = width - cells_of(tmp);
	if (attr)
		attron(attr);
	mvprintw(y, x, "%*s%s%*s", right ? pad : 0, "", tmp, right ? 0 : pad, "");
	if (attr)
		attroff(attr);
}

static void cell_text(const struct worker_view *w, int c, char *buf, size_t n)
{
	if (tui_columns[c].metric >= 0) {
		tui_fmt_metric(buf, n, &metric_worker[tui_columns[c].metric], w, 1);
		return;
	}
	switch (c) {
	case TUI_COL_PID:  snprintf(buf, n, "%d", (int)w->pid); return;
	case TUI_COL_TID:  snprintf(buf, n, "%d", (int)w->tid); return;
	case TUI_COL_NAME:
		model_worker_name(w, buf, n);
		textsafe(buf);
		return;
	case TUI_COL_BACKEND: snprintf(buf, n, "%s", w->backend ? w->backend : "-"); return;
	case TUI_COL_LIMIT: {
		int l = model_limit_of(w, NULL, 0);
		snprintf(buf, n, "%s", l < 0 ? "-" : model_limit_name((enum metric_limit)l));
		return;
	}
	case TUI_COL_BLOCKER:
		if (w->no_access)
			snprintf(buf, n, "(no access)");
		else if (w->nblocked_top > 0)
			tui_fmt_blocker(buf, n, &w->blocked_top[0]);
		else
			snprintf(buf, n, "-");
		return;
	}
	buf[0] = '\0';
}

static int cell_attr(const struct tui *t, const struct worker_view *w, int c)
{
	if (c == TUI_COL_IDLE)
		return tui_idle_attr(t, w->idle_pct);
	if (c == TUI_COL_STALL && w->instrumented && w->stall_ms > 0)
		return t->color ? COLOR_PAIR(TUI_PAIR_RED) | A_BOLD : A_BOLD;
	return 0;
}

static void draw_titles(const struct tui *t, int y, const int w[TUI_NCOLS])
{
	int x = 0;
	attron(A_REVERSE);
	mvhline(y, 0, ' ', COLS);
	for (int c = 0; c < TUI_NCOLS; c++) {
		if (!w[c])
			continue;
		put_field(y, x, tui_columns[c].title, w[c], right_aligned(c),
			  c == t->sort_col ? A_BOLD | A_UNDERLINE : 0);
		x += w[c] + 1;
	}
	attroff(A_REVERSE);
}

static void draw_row(const struct tui *t, int y, const struct worker_view *wv, int selected,
		     const int w[TUI_NCOLS])
{
	char buf[256];
	int base = (selected ? A_REVERSE : 0) | (wv->gone ? A_DIM : 0);
	int x = 0;
	if (base)
		attron(base);
	mvhline(y, 0, ' ', COLS);
	for (int c = 0; c < TUI_NCOLS; c++) {
		if (!w[c])
			continue;
		cell_text(wv, c, buf, sizeof(buf));
		/* a selected or gone row keeps its look; colour would hide it */
		put_field(y, x, buf, w[c], right_aligned(c), base ? 0 : cell_attr(t, wv, c));
		x += w[c] + 1;
	}
	if (base)
		attroff(base);
}

static void keep_selection_visible(struct tui *t, int rows)
{
	if (rows <= 0)
		return;
	if (t->sel < t->top)
		t->top = t->sel;
	if (t->sel >= t->top + (size_t)rows)
		t->top = t->sel - (size_t)rows + 1;
	/* after a shrink or filter, do not leave empty lines below the last row */
	if (t->nrows >= (size_t)rows && t->top > t->nrows - (size_t)rows)
		t->top = t->nrows - (size_t)rows;
	if (t->nrows < (size_t)rows)
		t->top = 0;
}

/* The service view: the fleet rows of the metric table per service, as
 * list --by service prints them. */
static void draw_services(struct tui *t, int y, int h)
{
	char cell[64], name[PROBE_SERVICE_LEN];
	attron(A_REVERSE);
	mvprintw(y, 0, "%-32s", "SERVICE");
	for (int i = 0; i < METRIC_NFLEET; i++)
		printw(" %18s", metric_fleet[i].name);
	clrtoeol();
	attroff(A_REVERSE);
	for (int r = 0; r < h - 1 && (size_t)r < t->m.nservices; r++) {
		const struct service_view *sv = &t->m.services[r];
		esc_copy(name, 33, &esc_term, sv->name, SIZE_MAX, NULL);
		mvprintw(y + 1 + r, 0, "%-32s", name);
		for (int i = 0; i < METRIC_NFLEET; i++) {
			metric_format(cell, sizeof(cell), metric_fleet[i].unit, metric_value(&metric_fleet[i], &sv->f), 1);
			printw(" %18s", cell);
		}
	}
	if (!t->m.nservices && h > 1)
		mvprintw(y + 1, 0, "no event-loop workers found (yet)");
}

void tui_draw_table(struct tui *t, int y, int h)
{
	int w[TUI_NCOLS];
	if (h < 1)
		return;
	if (t->by_service) {
		draw_services(t, y, h);
		return;
	}
	tui_layout(COLS, w);
	draw_titles(t, y, w);
	int rows = h - 1;
	keep_selection_visible(t, rows);
	if (t->nrows == 0 && rows > 0) {
		if (t->m.n)
			mvprintw(y + 1, 0, "no worker matches the filter");
		else if (t->m.nrefused)
			mvprintw(y + 1, 0, "access refused: %.*s", COLS > 16 ? COLS - 16 : 0, t->m.refused[0].text);
		else if (t->targeted)
			mvprintw(y + 1, 0, "no event-loop workers found (yet) among the named processes: t lists all their threads");
		else
			mvprintw(y + 1, 0, "no event-loop workers found (yet): start one, or use -p PID / -n REGEX");
		return;
	}
	for (int r = 0; r < rows && t->top + (size_t)r < t->nrows; r++) {
		size_t i = t->top + (size_t)r;
		draw_row(t, y + 1 + r, &t->m.workers[t->rows[i]], i == t->sel, w);
	}
}
