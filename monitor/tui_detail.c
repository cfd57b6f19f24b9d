/*
 * tui_detail.c — one worker in full: where its time goes (idle, running,
 * blocked, other as bars), the syscalls it blocks in with their fd
 * targets, its idle% history, fiber and stall, and the runtime counters.
 */
#include "tui_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void section(int y, const char *title)
{
	attron(A_BOLD);
	mvprintw(y, 0, "%s", title);
	attroff(A_BOLD);
}

static void bar_line(const struct tui *t, int y, const char *label, double pct, double ci, int attr)
{
	char num[16], bar[8 * 128 + 1];
	int width = COLS - 30;
	width = width > 100 ? 100 : width;
	tui_fmt_pct(num, sizeof(num), pct);
	mvprintw(y, 2, "%-9s %6s%%", label, num);
	if (!isnan(ci) && ci > 0)
		printw(" %s%-4.1f ", t->utf8 ? "±" : "+-", ci);
	else
		printw("%*s", t->utf8 ? 7 : 8, "");   /* as wide as the interval, so bars line up */
	tui_bar(bar, sizeof(bar), pct, width, t->utf8);
	attron(attr);
	printw("%s", bar);
	attroff(attr);
}

static int draw_identity(const struct tui *t, const struct worker_view *w, int y)
{
	mvprintw(y++, 0, "worker pid %d tid %d  %s", (int)w->pid, (int)w->tid, w->name);
	if (w->tag[0])
		printw("  tag %s", w->tag);
	printw("  backend %s  %s", w->backend ? w->backend : "-",
	       w->instrumented ? "instrumented" : "not instrumented");
	if (w->gone)
		printw("  (exited)");
	mvprintw(y++, 0, "%llu samples over %.1f s", (unsigned long long)w->samples, t->m.window_s);
	if (w->no_access)
		printw("  /proc refused access: figures are incomplete");
	return y;
}

static int draw_breakdown(const struct tui *t, const struct worker_view *w, int y)
{
	char cpu[16], wait[16];
	int red = t->color ? COLOR_PAIR(TUI_PAIR_RED) : 0;
	section(y++, "Where the time goes");
	bar_line(t, y++, "idle", w->idle_pct, w->idle_ci95, tui_idle_attr(t, w->idle_pct));
	bar_line(t, y++, "running", w->running_pct, NAN, 0);
	bar_line(t, y++, "blocked", w->blocked_pct, NAN, red);
	bar_line(t, y++, "other", w->other_pct, NAN, A_DIM);
	tui_fmt_pct(cpu, sizeof(cpu), w->cpu_pct);
	tui_fmt_pct(wait, sizeof(wait), w->cpu_wait_pct);
	mvprintw(y++, 2, "cpu %s%%  waiting for a cpu %s%%", cpu, wait);
	return y;
}

static int draw_blockers(const struct worker_view *w, int y, int end)
{
	section(y++, "Blocked in");
	if (w->nblocked_top == 0 && y < end)
		mvprintw(y++, 2, "no blocking syscall seen in the window");
	for (int i = 0; i < w->nblocked_top && y < end; i++) {
		const struct blocker_view *b = &w->blocked_top[i];
		char fd[16] = "";
		if (b->fd >= 0)
			snprintf(fd, sizeof(fd), "fd %d", b->fd);
		mvprintw(y++, 2, "%5.1f%%  %-16s %-6s %.*s", b->pct, b->syscall, fd,
			 COLS > 36 ? COLS - 36 : 0, b->target);
	}
	return y;
}

static int draw_history(const struct tui *t, const struct worker_view *w, int y)
{
	char spark[4 * MODEL_HISTORY + 1], label[40];
	snprintf(label, sizeof(label), "idle%% history (%d s) ", w->nhistory < COLS ? w->nhistory : COLS);
	tui_sparkline(spark, sizeof(spark), w->idle_history, w->nhistory, COLS - (int)strlen(label) - 1,
		      t->utf8);
	section(y, label);
	printw("%s", spark);
	return y + 1;
}

static int draw_runtime(const struct worker_view *w, int y, int end)
{
	char ops[16], sw[16], polls[16], comp[16], idle[16], head[16], stall[16];
	if (!w->instrumented) {
		if (y < end)
			mvprintw(y++, 0, "not on the loopstat runtime: no fiber or counter figures");
		return y;
	}
	tui_fmt_stall(stall, sizeof(stall), w->stall_ms);
	if (y < end) {
		if (w->stall_ms > 0)
			mvprintw(y++, 0, "STALLED %s in fiber %s", stall, w->fiber_tag[0] ? w->fiber_tag : "(untagged)");
		else
			mvprintw(y++, 0, "fiber %s  not stalled",
				 w->fiber_tag[0] ? w->fiber_tag : "(untagged or none running)");
	}
	tui_fmt_rate(ops, sizeof(ops), w->ops_per_s);
	tui_fmt_rate(sw, sizeof(sw), w->switches_per_s);
	tui_fmt_rate(polls, sizeof(polls), w->polls_per_s);
	tui_fmt_rate(comp, sizeof(comp), w->completions_per_s);
	tui_fmt_pct(idle, sizeof(idle), w->self_idle_pct);
	tui_fmt_rate(head, sizeof(head), w->headroom_ops_per_s);
	if (y < end)
		mvprintw(y++, 0, "ops/s %s  switches/s %s  polls/s %s  completions/s %s", ops, sw, polls, comp);
	if (y < end)
		mvprintw(y++, 0, "runqueue %llu (max %llu)  pending ops %llu  fibers %llu",
			 (unsigned long long)w->runqueue_len, (unsigned long long)w->runqueue_max,
			 (unsigned long long)w->pending_ops, (unsigned long long)w->fibers);
	if (y < end)
		mvprintw(y++, 0, "self-measured idle %s%%  headroom %s ops/s", idle, head);
	return y;
}

void tui_draw_detail(struct tui *t, int y, int h)
{
	const struct worker_view *w = tui_selected(t);
	int end = y + h;
	if (!w) {
		mvprintw(y, 0, "worker pid %d tid %d is gone; q or Esc goes back", (int)t->sel_pid,
			 (int)t->sel_tid);
		return;
	}
	/* fixed parts first; the lists get what is left */
	y = draw_identity(t, w, y);
	y = draw_breakdown(t, w, y);
	if (y < end)
		y = draw_history(t, w, y);
	if (y < end)
		y = draw_runtime(w, y, end);
	if (y < end - 1)
		y = draw_blockers(w, y, end);
}
