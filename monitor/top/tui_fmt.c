/*
 * tui_fmt.c — the dashboard's text helpers: figures to short strings,
 * sparklines and bars. Pure functions of their arguments, so the tests
 * check them without a terminal. NaN (unknown) always prints as "-".
 */
#include "top/tui_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* "read fd 5 pipe:[123] 40%": most telling first, so truncation keeps it. */
void tui_fmt_blocker(char *buf, size_t n, const struct blocker_view *b)
{
	if (b->fd >= 0 && b->target[0])
		snprintf(buf, n, "%s %.0f%% fd %d %s", b->syscall, b->pct, b->fd, b->target);
	else if (b->fd >= 0)
		snprintf(buf, n, "%s %.0f%% fd %d", b->syscall, b->pct, b->fd);
	else
		snprintf(buf, n, "%s %.0f%%", b->syscall, b->pct);
}

void tui_fmt_metric(char *buf, size_t n, const struct metric *m, const struct worker_view *w, int compact)
{
	metric_format(buf, n, m->unit, metric_applies(m, w) ? metric_value(m, w) : NAN, compact);
}

static const char *const spark_utf8[8] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
static const char spark_ascii[8] = { '_', '.', ',', '-', '=', '+', '*', '#' };

static void append(char *buf, size_t n, size_t *len, const char *s)
{
	size_t l = strlen(s);
	if (*len + l + 1 > n)
		return;
	memcpy(buf + *len, s, l + 1);
	*len += l;
}

void tui_sparkline(char *buf, size_t n, const float *hist, int nhist, int width, int utf8)
{
	size_t len = 0;
	if (n == 0)
		return;
	buf[0] = '\0';
	int first = nhist > width ? nhist - width : 0;
	for (int i = first; i < nhist; i++) {
		float v = hist[i];
		char one[2] = { ' ', '\0' };
		const char *cell = one;
		if (!isnan(v)) {
			int lvl = (int)(v / 100.0f * 8.0f);
			lvl = lvl < 0 ? 0 : lvl > 7 ? 7 : lvl;
			if (utf8)
				cell = spark_utf8[lvl];
			else
				one[0] = spark_ascii[lvl];
		}
		append(buf, n, &len, cell);
	}
}

static const char *const bar_part[8] = { "", "▏", "▎", "▍", "▌", "▋", "▊", "▉" };

void tui_bar(char *buf, size_t n, double pct, int width, int utf8)
{
	size_t len = 0;
	if (n == 0)
		return;
	buf[0] = '\0';
	if (isnan(pct) || width <= 0)
		return;
	pct = pct < 0 ? 0 : pct > 100 ? 100 : pct;
	int eighths = (int)(pct / 100.0 * width * 8 + 0.5);
	for (int i = 0; i < eighths / 8; i++)
		append(buf, n, &len, utf8 ? "█" : "#");
	if (eighths % 8 && utf8)
		append(buf, n, &len, bar_part[eighths % 8]);
	else if (eighths % 8 >= 4)
		append(buf, n, &len, "#");
}

int tui_idle_attr(const struct tui *t, double idle_pct)
{
	if (!t->color || isnan(idle_pct))
		return 0;
	if (idle_pct < 10)
		return COLOR_PAIR(TUI_PAIR_RED) | A_BOLD;
	if (idle_pct < 30)
		return COLOR_PAIR(TUI_PAIR_YELLOW);
	return COLOR_PAIR(TUI_PAIR_GREEN);
}
