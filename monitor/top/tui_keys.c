/*
 * tui_keys.c — the key bindings, expanded once from TUI_KEYS: the
 * dispatcher's lookup and the help screen read the same array, and a test
 * checks docs/usage.md against it, so the three cannot drift apart.
 */
#include "top/tui_int.h"

#include <stdio.h>
#include <string.h>

const struct tui_key tui_keys[] = {
#define TUI_X_KEY(act, label, desc, k1, k2, k3) { TUI_##act, label, desc, { k1, k2, k3 } },
	TUI_KEYS(TUI_X_KEY)
#undef TUI_X_KEY
};
const size_t tui_nkeys = sizeof(tui_keys) / sizeof(tui_keys[0]);

enum tui_action tui_key_action(int ch)
{
	if (ch == 0)
		return TUI_NONE;
	for (size_t i = 0; i < tui_nkeys; i++)
		for (int k = 0; k < 3; k++)
			if (tui_keys[i].codes[k] == ch)
				return tui_keys[i].action;
	return TUI_NONE;
}

/* Line i of the help text into buf; returns 0 past the end. */
static int help_line(int i, char *buf, size_t n, int *bold)
{
	*bold = 0;
	if (i == 0) {
		*bold = 1;
		snprintf(buf, n, "Keys");
		return 1;
	}
	if (--i < (int)tui_nkeys) {
		snprintf(buf, n, "  %-10s %s", tui_keys[i].label, tui_keys[i].desc);
		return 1;
	}
	i -= (int)tui_nkeys;
	if (i == 0) {
		buf[0] = '\0';
		return 1;
	}
	if (i == 1) {
		*bold = 1;
		snprintf(buf, n, "Columns (colours: idle < 10%% red, < 30%% yellow, else green; dim: exited)");
		return 1;
	}
	i -= 2;
	if (i < TUI_NCOLS) {
		snprintf(buf, n, "  %-11s %s", tui_columns[i].title, tui_columns[i].desc);
		return 1;
	}
	return 0;
}

int tui_help_lines(void)
{
	return 1 + (int)tui_nkeys + 2 + TUI_NCOLS;
}

void tui_draw_help(struct tui *t, int y, int h)
{
	char buf[256];
	int bold, max = tui_help_lines() - h;
	/* scrolled by the movement keys when the screen is too short */
	if (t->help_top > max)
		t->help_top = max;
	if (t->help_top < 0)
		t->help_top = 0;
	for (int r = 0; r < h && help_line(t->help_top + r, buf, sizeof(buf), &bold); r++) {
		if (bold)
			attron(A_BOLD);
		mvprintw(y + r, 0, "%.*s", COLS, buf);
		if (bold)
			attroff(A_BOLD);
	}
}
