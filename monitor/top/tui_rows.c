/*
 * tui_rows.c — which model rows the table shows and in what order: the
 * filter (substring of name, tag or pid), the sort column, and a selection
 * that follows its worker (pid, tid) across refreshes and re-sorts.
 */
#include "top/tui_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tui_row_matches(const struct worker_view *w, const char *filter)
{
	char pid[16];
	if (!filter[0])
		return 1;
	snprintf(pid, sizeof(pid), "%d", (int)w->pid);
	return strstr(w->name, filter) || strstr(w->tag, filter) || strstr(pid, filter);
}

/* Busiest first is what a capacity view is for: the metric table says
 * which way each figure grows busier (idle ascends, load descends). */
static int natural_desc(int col)
{
	if (col == TUI_COL_BLOCKER)
		return 1;
	return tui_columns[col].metric >= 0 && metric_worker[tui_columns[col].metric].sort_desc;
}

static double num_key(const struct worker_view *w, int col)
{
	if (tui_columns[col].metric >= 0)
		return metric_value(&metric_worker[tui_columns[col].metric], w);
	switch (col) {
	case TUI_COL_PID:     return w->pid;
	case TUI_COL_TID:     return w->tid;
	case TUI_COL_BLOCKER: return w->nblocked_top > 0 ? w->blocked_top[0].pct : NAN;
	default:              return NAN;
	}
}

static int cmp_ids(const struct worker_view *a, const struct worker_view *b)
{
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return (a->tid > b->tid) - (a->tid < b->tid);
}

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
	const struct tui *t = arg;
	const struct worker_view *a = &t->m.workers[*(const size_t *)pa];
	const struct worker_view *b = &t->m.workers[*(const size_t *)pb];
	int col = t->sort_col, c = 0;
	int desc = natural_desc(col) ^ t->sort_rev;

	if (col == TUI_COL_NAME) {
		c = strcmp(a->name, b->name);
	} else if (col == TUI_COL_BACKEND) {
		c = strcmp(a->backend ? a->backend : "", b->backend ? b->backend : "");
	} else {
		double x = num_key(a, col), y = num_key(b, col);
		/* unknown figures go last whichever the direction */
		if (isnan(x) || isnan(y))
			return isnan(x) && isnan(y) ? cmp_ids(a, b) : isnan(x) ? 1 : -1;
		c = (x > y) - (x < y);
	}
	if (desc)
		c = -c;
	return c ? c : cmp_ids(a, b);
}

int tui_rows_update(struct tui *t)
{
	if (t->m.n > t->rows_cap) {
		size_t *r = realloc(t->rows, t->m.n * sizeof(*r));
		if (!r)
			return -ENOMEM;
		t->rows = r;
		t->rows_cap = t->m.n;
	}
	t->nrows = 0;
	for (size_t i = 0; i < t->m.n; i++)
		if (tui_row_matches(&t->m.workers[i], t->filter))
			t->rows[t->nrows++] = i;
	if (t->nrows > 1)   /* rows is NULL while the model is empty */
		qsort_r(t->rows, t->nrows, sizeof(*t->rows), cmp_rows, t);

	/* keep the selection on its worker; if it went, keep the position */
	for (size_t r = 0; r < t->nrows; r++) {
		const struct worker_view *w = &t->m.workers[t->rows[r]];
		if (w->pid == t->sel_pid && w->tid == t->sel_tid) {
			t->sel = r;
			return 0;
		}
	}
	/* the detail view shows "gone" rather than switch to another worker */
	if (t->mode == TUI_MODE_DETAIL) {
		t->sel = t->nrows && t->sel >= t->nrows ? t->nrows - 1 : t->sel;
		return 0;
	}
	tui_select(t, 0);
	return 0;
}

void tui_select(struct tui *t, long delta)
{
	long sel = (long)t->sel + delta;
	if (t->nrows == 0) {
		t->sel = 0;
		return;
	}
	if (sel < 0)
		sel = 0;
	if (sel >= (long)t->nrows)
		sel = (long)t->nrows - 1;
	t->sel = (size_t)sel;
	const struct worker_view *w = &t->m.workers[t->rows[t->sel]];
	t->sel_pid = w->pid;
	t->sel_tid = w->tid;
}

const struct worker_view *tui_selected(const struct tui *t)
{
	if (t->nrows == 0)
		return NULL;
	for (size_t i = 0; i < t->m.n; i++)
		if (t->m.workers[i].pid == t->sel_pid && t->m.workers[i].tid == t->sel_tid)
			return &t->m.workers[i];
	return NULL;
}
