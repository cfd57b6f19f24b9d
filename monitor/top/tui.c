/*
 * tui.c — the dashboard's main loop: terminal setup and restore, a model
 * from the sampler once per refresh delay, keys in between, redraw on
 * resize. SIGINT, SIGTERM and SIGHUP end the loop through a flag, so the
 * terminal is always restored by the same endwin() as a normal quit.
 */
#include "top/tui_int.h"
#include "util/clock.h"

#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TUI_TICK_MS 100   /* key wait: bounds how late a refresh or a signal is seen */

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static double now_s(void)
{
	return (double)mono_ns() / 1e9;
}

void tui_draw(struct tui *t)
{
	erase();
	if (t->mode == TUI_MODE_HELP) {
		attron(A_BOLD);
		mvprintw(0, 0, "loopstat help");
		attroff(A_BOLD);
		tui_draw_help(t, 2, LINES - 3);
	} else {
		int y = tui_draw_header(t);
		if (t->mode == TUI_MODE_DETAIL)
			tui_draw_detail(t, y + 1, LINES - y - 2);
		else
			tui_draw_table(t, y, LINES - y - 1);
	}
	tui_draw_status(t);
}

static void setup_colors(struct tui *t)
{
	if (!t->color || !has_colors() || start_color() == ERR) {
		t->color = 0;
		return;
	}
	use_default_colors();
	init_pair(TUI_PAIR_RED, COLOR_RED, -1);
	init_pair(TUI_PAIR_YELLOW, COLOR_YELLOW, -1);
	init_pair(TUI_PAIR_GREEN, COLOR_GREEN, -1);
}

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

/* Handlers are set before newterm(): ncurses then leaves these signals to us. */
static void catch_signals(struct sigaction old[NSTOP])
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;   /* no SA_RESTART: the key wait returns at once */
	sigemptyset(&sa.sa_mask);
	stop_signal = 0;
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &sa, &old[i]);
}

static void restore_signals(const struct sigaction old[NSTOP])
{
	for (size_t i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &old[i], NULL);
}

static void loop(struct tui *t)
{
	double next = 0;
	while (!stop_signal) {
		double now = now_s();
		if (!t->paused && now >= next) {
			tui_refresh_model(t);
			next = now + t->delay_s;
		}
		tui_draw(t);
		refresh();
		int ch = getch();
		if (ch == ERR || ch == KEY_RESIZE)
			continue;   /* timeout, signal, or new size: LINES/COLS are already updated */
		double delay = t->delay_s;
		if (tui_handle_key(t, ch))
			break;
		if (t->delay_s != delay)
			next = now_s() + t->delay_s;
	}
}

int tui_run(struct feed *s, const struct tui_opts *o)
{
	struct tui t;
	struct sigaction old[NSTOP];

	/* without a terminal on both ends, keys never come and q cannot quit */
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return -ENOTTY;
	setlocale(LC_ALL, "");
	tui_state_init(&t, s, o);
	t.utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	catch_signals(old);
	SCREEN *scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		restore_signals(old);
		tui_state_done(&t);
		return -ENOTTY;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	set_escdelay(25);   /* Esc is a key here, not only the start of a sequence */
	timeout(TUI_TICK_MS);
	curs_set(0);
	setup_colors(&t);

	loop(&t);

	endwin();
	delscreen(scr);
	restore_signals(old);
	tui_state_done(&t);
	return stop_signal ? (int)stop_signal : 0;
}
