/*
 * tui_input.c — the dashboard's state and what each key does to it. No
 * terminal I/O here, so the tests drive it with key codes directly.
 */
#include "top/tui_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const double delays[] = { 0.5, 1, 2, 5 };

void tui_state_init(struct tui *t, struct feed *s, const struct tui_opts *o)
{
	memset(t, 0, sizeof(*t));
	t->s = s;
	t->delay_s = o && o->delay_s > 0 ? o->delay_s : TUI_DEFAULT_DELAY_S;
	t->window_s = o && o->window_s > 0 ? o->window_s : TUI_DEFAULT_WINDOW_S;
	t->color = !(o && o->no_color) && !getenv("NO_COLOR");
	t->targeted = o && o->targeted;
	t->sort_col = TUI_COL_IDLE;
	t->rate_hz = s ? feed_rate(s) : MODEL_FEED_DEFAULT_HZ;
	if (gethostname(t->host, sizeof(t->host)) < 0)
		snprintf(t->host, sizeof(t->host), "?");
	t->host[sizeof(t->host) - 1] = '\0';
}

void tui_state_done(struct tui *t)
{
	model_done(&t->m);
	free(t->rows);
	t->rows = NULL;
	t->nrows = t->rows_cap = 0;
	stall_groups_done(&t->dstalls);
}

int tui_refresh_model(struct tui *t)
{
	struct model m = { 0 };
	int err = t->s ? feed_now(t->s, t->window_s, 1, &m) : -EINVAL;
	if (err < 0) {
		snprintf(t->msg, sizeof(t->msg), "taking the model: %s", strerror(-err));
		return err;
	}
	model_done(&t->m);
	t->m = m;
	t->rate_hz = m.rate_hz;
	return tui_rows_update(t);
}

static void set_rate(struct tui *t, double factor)
{
	double hz = t->rate_hz * factor;
	hz = hz < TUI_MIN_RATE_HZ ? TUI_MIN_RATE_HZ : hz > TUI_MAX_RATE_HZ ? TUI_MAX_RATE_HZ : hz;
	t->rate_hz = hz;
	if (t->s && feed_set_rate(t->s, hz) == -ENOTSUP) {
		snprintf(t->msg, sizeof(t->msg), "a replay keeps its recorded rate");
		return;
	}
	snprintf(t->msg, sizeof(t->msg), "sampling at %.0f Hz", hz);
}

static void next_delay(struct tui *t)
{
	size_t n = sizeof(delays) / sizeof(delays[0]), i;
	for (i = 0; i < n && delays[i] <= t->delay_s + 1e-9; i++)
		;
	t->delay_s = delays[i % n];
	snprintf(t->msg, sizeof(t->msg), "refreshing every %g s", t->delay_s);
}

/* Typing a filter: the table follows each keystroke. */
static void edit_filter(struct tui *t, int ch)
{
	size_t len = strlen(t->filter);
	if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
		t->editing = 0;
	} else if (ch == TUI_KEY_ESC) {
		t->editing = 0;
		t->filter[0] = '\0';
	} else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (len)
			t->filter[len - 1] = '\0';
	} else if (ch >= 0 && ch < 256 && isprint(ch) && len + 1 < sizeof(t->filter)) {
		t->filter[len] = (char)ch;
		t->filter[len + 1] = '\0';
	} else {
		return;
	}
	tui_rows_update(t);
}

static void move_sel(struct tui *t, enum tui_action a)
{
	long page = LINES > 8 ? LINES - 6 : 1;
	switch (a) {
	case TUI_UP:   tui_select(t, -1); break;
	case TUI_DOWN: tui_select(t, 1); break;
	case TUI_PGUP: tui_select(t, -page); break;
	case TUI_PGDN: tui_select(t, page); break;
	case TUI_HOME: tui_select(t, -(long)t->nrows); break;
	case TUI_END:  tui_select(t, (long)t->nrows); break;
	default: break;
	}
}

static void scroll_help(struct tui *t, enum tui_action a)
{
	int page = LINES > 4 ? LINES - 4 : 1;
	switch (a) {
	case TUI_UP:   t->help_top -= 1; break;
	case TUI_DOWN: t->help_top += 1; break;
	case TUI_PGUP: t->help_top -= page; break;
	case TUI_PGDN: t->help_top += page; break;
	case TUI_HOME: t->help_top = 0; break;
	case TUI_END:  t->help_top = tui_help_lines(); break;
	default: break;
	}
	/* tui_draw_help clamps to what the screen can show */
	if (t->help_top < 0)
		t->help_top = 0;
}

static void set_sort(struct tui *t, int col)
{
	t->sort_col = (col + TUI_NCOLS) % TUI_NCOLS;
	t->sort_rev = 0;
	tui_rows_update(t);
}

int tui_handle_key(struct tui *t, int ch)
{
	if (t->editing) {
		edit_filter(t, ch);
		return 0;
	}
	enum tui_action a = tui_key_action(ch);
	if (a != TUI_NONE)
		t->msg[0] = '\0';
	switch (a) {
	case TUI_QUIT:
		if (t->mode == TUI_MODE_TABLE)
			return 1;
		t->mode = TUI_MODE_TABLE;
		break;
	case TUI_CLEAR:
		if (t->mode != TUI_MODE_TABLE)
			t->mode = TUI_MODE_TABLE;
		else if (t->filter[0]) {
			t->filter[0] = '\0';
			tui_rows_update(t);
		}
		break;
	case TUI_HELP:
		t->mode = t->mode == TUI_MODE_HELP ? TUI_MODE_TABLE : TUI_MODE_HELP;
		break;
	case TUI_UP: case TUI_DOWN: case TUI_PGUP: case TUI_PGDN: case TUI_HOME: case TUI_END:
		if (t->mode == TUI_MODE_TABLE)
			move_sel(t, a);
		else if (t->mode == TUI_MODE_HELP)
			scroll_help(t, a);
		break;
	case TUI_SORT:       set_sort(t, t->sort_col + 1); break;
	case TUI_SORT_LEFT:  set_sort(t, t->sort_col - 1); break;
	case TUI_SORT_RIGHT: set_sort(t, t->sort_col + 1); break;
	case TUI_REVERSE:
		t->sort_rev = !t->sort_rev;
		tui_rows_update(t);
		break;
	case TUI_FILTER:
		t->mode = TUI_MODE_TABLE;
		t->editing = 1;
		break;
	case TUI_THREADS:
		t->all_threads = !t->all_threads;
		if (t->s && feed_set_all_threads(t->s, t->all_threads) == 0)
			tui_refresh_model(t);
		break;
	case TUI_SERVICES:
		t->by_service = !t->by_service;
		break;
	case TUI_DETAIL:
		if (t->mode == TUI_MODE_TABLE && t->nrows > 0 && !t->by_service) {
			tui_select(t, 0);
			t->mode = TUI_MODE_DETAIL;
			t->dstall_pid = t->dstall_tid = 0;   /* its stalls by stack start afresh */
		}
		break;
	case TUI_PAUSE:
		t->paused = !t->paused;
		if (t->s)
			feed_set_paused(t->s, t->paused);
		break;
	case TUI_FASTER: set_rate(t, 1.5); break;
	case TUI_SLOWER: set_rate(t, 1 / 1.5); break;
	case TUI_DELAY:  next_delay(t); break;
	case TUI_NONE:   break;
	}
	return 0;
}
