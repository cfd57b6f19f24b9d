/*
 * tui_detail.c — one worker in full: where its time goes (idle, running,
 * blocked, other as bars), the syscalls it blocks in with their fd
 * targets, its idle% history, fiber and stall, the runtime counters, and
 * the run's breakdown by (class, syscall, fd, call site, fiber) with the
 * fibers' shares — what `loopstat profile` splits further by stack.
 */
#include "top/tui_int.h"
#include "model/limit.h"
#include "model/stall_group.h"
#include "util/textsafe.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
	metric_format(num, sizeof(num), METRIC_PCT, pct, 0);
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

/* Every metric placed on `line` (tui_metrics[]), as its detail text. */
static const char *metric_line(const struct worker_view *w, enum tui_line line)
{
	static char buf[256];
	size_t len = 0;
	buf[0] = '\0';
	for (int i = 0; i < METRIC_NWORKER; i++) {
		const struct metric *m = &metric_worker[i];
		char val[32], part[96];
		if (tui_metrics[i].line != line || len >= sizeof(buf))
			continue;
		/* the cpu line leaves out what this worker has not (a quota, a
		 * cgroup), the limit line the limits that do not hold */
		double v = metric_value(m, w);
		if (((line == TUI_LINE_CPU || line == TUI_LINE_LISTEN || line == TUI_LINE_POOL) && isnan(v)) ||
		    (line == TUI_LINE_LIMIT && !(v > 0)))
			continue;
		tui_fmt_metric(val, sizeof(val), m, w, 0);
		snprintf(part, sizeof(part), tui_metrics[i].detail, val);
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", len && part[0] != ' ' ? "  " : "", part);
	}
	return buf;
}

static int draw_identity(const struct tui *t, const struct worker_view *w, int y)
{
	char name[PROBE_COMM_LEN], tag[LOOPSTAT_TAG_LEN];
	snprintf(name, sizeof(name), "%s", w->name);
	snprintf(tag, sizeof(tag), "%s", w->tag);
	mvprintw(y++, 0, "worker pid %d tid %d  %s", (int)w->pid, (int)w->tid, textsafe(name));
	if (w->tag[0])
		printw("  tag %s", textsafe(tag));
	printw("  backend %s  %s", w->backend ? w->backend : "-",
	       w->instrumented ? "instrumented" : "not instrumented");
	if (w->gone)
		printw("  (exited)");
	if (w->thread_name[0] && strcmp(w->thread_name, w->name) != 0) {
		snprintf(name, sizeof(name), "%s", w->thread_name);
		printw("  thread %s", textsafe(name));
	}
	printw("  role %s", w->role ? w->role : "unknown");
	for (int i = 0; i < w->nhelpers; i++)
		printw(i ? ", %d" : "  helper loops folded in: tid %d", (int)w->helpers[i]);
	mvprintw(y++, 0, "%s over %.1f s  loop poll: %s", metric_line(w, TUI_LINE_IDENTITY), t->m.window_s,
		 w->loop_basis[0] ? w->loop_basis : "-");
	if (w->no_access) {
		printw("  /proc refused access: figures are incomplete");
		mvprintw(y++, 0, "%.*s", COLS, w->access_text);
	}
	return y;
}

/* The bars' colours: idle by its threshold, blocked red, other dim. */
static int bar_attr(const struct tui *t, const struct worker_view *w, int metric)
{
	switch (metric) {
	case METRIC_W_idle_pct:    return tui_idle_attr(t, w->idle_pct);
	case METRIC_W_blocked_pct: return t->color ? COLOR_PAIR(TUI_PAIR_RED) : 0;
	case METRIC_W_other_pct:   return A_DIM;
	default:                   return 0;
	}
}

/* A scheduler's threads, a line of "tid name busy%" cells: its capacity's
 * parts, as list --json's members. */
static void draw_members(const struct worker_view *w, int *y)
{
	if (!w->nmembers)
		return;
	mvprintw((*y)++, 2, "%d threads' capacity (%s); its threads, busy over the run:", w->threads, w->threads_from);
	move(*y, 4);
	for (int i = 0; i < w->nmembers; i++) {
		const struct member_view *m = &w->members[i];
		char busy[16];
		if (isnan(m->busy_pct))
			snprintf(busy, sizeof(busy), "-");
		else
			snprintf(busy, sizeof(busy), "%.0f%%", m->busy_pct);
		printw("%d %s%s  ", (int)m->tid, busy, m->worker ? "" : " (blocking pool)");
	}
	(*y)++;
}

static int draw_breakdown(const struct tui *t, const struct worker_view *w, int y)
{
	section(y++, "Where the time goes");
	for (int i = 0; i < METRIC_NWORKER; i++) {
		const struct metric *m = &metric_worker[i];
		if (tui_metrics[i].line != TUI_LINE_BAR)
			continue;
		double ci = m->interval ? metric_value(m->interval, w) : NAN;
		bar_line(t, y++, tui_metrics[i].detail, metric_value(m, w), ci, bar_attr(t, w, i));
	}
	mvprintw(y++, 2, "%s", metric_line(w, TUI_LINE_CPU));
	const char *listen = metric_line(w, TUI_LINE_LISTEN);
	if (listen[0])
		mvprintw(y++, 2, "%s", listen);
	const char *pool = metric_line(w, TUI_LINE_POOL);
	if (pool[0])   /* list --json's pools name its threads */
		mvprintw(y++, 2, "helper %s", pool);
	draw_members(w, &y);
	char why[320];   /* a quota verdict names its cgroup */
	const char *limit = metric_line(w, TUI_LINE_LIMIT);
	if (limit[0] && model_limit_of(w, why, sizeof(why)) > METRIC_LIMIT_NONE)   /* and what tripped it */
		mvprintw(y++, 2, "%s: %s", limit, why);
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
		char target[MODEL_TARGET_LEN];
		snprintf(target, sizeof(target), "%s", b->target);
		mvprintw(y++, 2, "%5.1f%%  %-16s %-6s %.*s", b->pct, b->syscall, fd,
			 COLS > 36 ? COLS - 36 : 0, textsafe(target));
	}
	/* what the table had no room for is said, not dropped */
	if (w->blocked_unkeyed_pct > 0 && y < end)
		mvprintw(y++, 2, "%s", metric_line(w, TUI_LINE_BLOCKERS));
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

/* The busy spans' figures and their histogram, one cell per octave. */
static int draw_lag(const struct tui *t, const struct worker_view *w, int y, int end)
{
	float cells[MODEL_LAG_OCTAVES];
	double top = 0;
	for (int i = 0; i < MODEL_LAG_OCTAVES; i++)
		top = w->lag_octaves[i] > top ? w->lag_octaves[i] : top;
	for (int i = 0; i < MODEL_LAG_OCTAVES; i++)   /* an octave with any span shows */
		cells[i] = w->lag_octaves[i] > 0 ? (float)(100 * w->lag_octaves[i] / top) : NAN;
	section(y++, "Busy spans ");
	printw("lag %s  (%s)", metric_line(w, TUI_LINE_LAG), w->lag_exact ? "exact: the runtime's" : "sampled");
	if (y < end) {
		char spark[4 * MODEL_LAG_OCTAVES + 1];
		tui_sparkline(spark, sizeof(spark), cells, MODEL_LAG_OCTAVES, MODEL_LAG_OCTAVES, t->utf8);
		mvprintw(y++, 2, "%.2fms |%s| %.1fs+", ldexp(1, MODEL_LAG_SHIFT) / 1e6, top > 0 ? spark : "",
			 ldexp(1, MODEL_LAG_SHIFT + MODEL_LAG_OCTAVES - 1) / 1e9);
	}
	if (w->lag_why[0] && y < end)   /* the model's own words: why a figure above is "-" */
		mvprintw(y++, 2, "unresolved %.*s", COLS > 14 ? COLS - 14 : 0, w->lag_why);
	return y;
}

/* A stall of the worker's log into the view's groups. */
static int add_stall(struct tui *t, const struct stall_view *s)
{
	const char *frames[SERIES_STALL_FRAMES];
	for (int f = 0; f < s->nframes && f < SERIES_STALL_FRAMES; f++)
		frames[f] = s->frames[f];
	char where[MODEL_TARGET_LEN + 16];
	if (s->fd >= 0)
		snprintf(where, sizeof(where), "fd %d %s", s->fd, s->target);
	else
		snprintf(where, sizeof(where), "%s", s->target);
	struct stall_in in = { .state = s->state, .syscall = s->syscall, .target = where, .fiber = s->fiber,
			       .frames = frames, .nframes = s->nframes, .t_ns = (uint64_t)(s->t_s * 1e9),
			       .dur_ns = (uint64_t)(s->dur_ms * 1e6) };
	return stall_groups_add(&t->dstalls, &in);
}

/* The worker's stalls since the view opened on it: its log holds the
 * last few, newest first; each is added once, and the newest's whole
 * length once its span ends. */
static void gather_stalls(struct tui *t, const struct worker_view *w)
{
	if (w->pid != t->dstall_pid || w->tid != t->dstall_tid) {
		stall_groups_done(&t->dstalls);
		t->dstall_pid = w->pid;
		t->dstall_tid = w->tid;
		t->dstall_t = -1;
		t->dstall_g = -1;
	}
	for (int i = w->nstall_log - 1; i >= 0; i--) {
		const struct stall_view *s = &w->stall_log[i];
		if (s->t_s == t->dstall_t && s->dur_ms > t->dstall_ms) {
			stall_groups_end(&t->dstalls, t->dstall_g, (uint64_t)(s->dur_ms * 1e6), -1, 0);
			t->dstall_ms = s->dur_ms;
		}
		if (s->t_s <= t->dstall_t)
			continue;
		t->dstall_g = add_stall(t, s);
		t->dstall_t = s->t_s;
		t->dstall_ms = s->dur_ms;
	}
}

/* The stalls captured, grouped by stack as report groups them (one line
 * per stack: count, first, last, worst), the most frequent first, each
 * with its innermost frames. */
static int draw_stalls(struct tui *t, const struct worker_view *w, int y, int end)
{
	gather_stalls(t, w);
	char title[160];
	snprintf(title, sizeof(title), "Stalls by stack (%llu seen since this view opened: count, first .. last, worst; "
		 "seconds since sampling began)", (unsigned long long)t->dstalls.total);
	section(y++, title);
	struct stall_group *v = stall_groups_sorted(&t->dstalls);
	for (size_t i = 0; v && i < t->dstalls.n && y < end; i++) {
		const struct stall_group *g = &v[i];
		mvprintw(y++, 2, "%3llux  %8.1fs .. %8.1fs  worst %.0f ms  %s", (unsigned long long)g->count,
			 (double)g->first_ns / 1e9, (double)g->last_ns / 1e9, (double)g->worst_ns / 1e6, g->head);
		/* its innermost frames, as report shows them (six spaces in) */
		int nf = 0;
		for (const char *l = g->frames; *l && nf < 3 && y < end; nf++) {
			size_t n = strcspn(l, "\n");
			mvprintw(y++, 4, "%.*s", (int)n - 6 > 0 ? (int)n - 6 : 0, n > 6 ? l + 6 : l);
			l += n + (l[n] == '\n');
		}
	}
	/* the newest stall's reason for having no stack */
	if (w->nstall_log && w->stall_log[0].why[0] && y < end)
		mvprintw(y++, 4, "no stack: %.*s", COLS > 16 ? COLS - 16 : 0, w->stall_log[0].why);
	free(v);
	return y;
}

static int draw_runtime(const struct worker_view *w, int y, int end)
{
	static const enum tui_line lines[] = { TUI_LINE_RATES, TUI_LINE_QUEUES, TUI_LINE_SELF };
	char stall[16], fiber[LOOPSTAT_TAG_LEN];
	if (!w->instrumented) {
		if (y < end)
			mvprintw(y++, 0, "not on the loopstat runtime: no fiber or counter figures");
		return y;
	}
	metric_format(stall, sizeof(stall), METRIC_MS, w->stall_ms, 0);
	snprintf(fiber, sizeof(fiber), "%s", w->fiber_tag);
	textsafe(fiber);
	if (y < end) {
		if (w->stall_ms > 0)
			mvprintw(y++, 0, "STALLED %s in fiber %s", stall, fiber[0] ? fiber : "(untagged)");
		else
			mvprintw(y++, 0, "fiber %s  not stalled", fiber[0] ? fiber : "(untagged or none running)");
	}
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]) && y < end; i++)
		mvprintw(y++, 0, "%s", metric_line(w, lines[i]));
	return y;
}

/* The fibers' shares of the run, summed over the keys: one line. */
static int draw_fibers(const struct worker_view *w, int y)
{
	char names[MODEL_KEYS][LOOPSTAT_TAG_LEN];
	double pct[MODEL_KEYS];
	int n = 0;
	for (int i = 0; i < w->nkeys; i++) {
		int k = 0;
		while (k < n && strcmp(names[k], w->keys[i].fiber) != 0)
			k++;
		if (k == n) {
			snprintf(names[n], sizeof(names[n]), "%s", w->keys[i].fiber);
			pct[n++] = 0;
		}
		pct[k] += w->keys[i].pct;
	}
	mvprintw(y, 2, "fibers");
	for (int k = 0; k < n; k++)
		printw("  %s %.1f%%", names[k][0] ? textsafe(names[k]) : "(none or untagged)", pct[k]);
	return y + 1;
}

static int draw_keys(const struct worker_view *w, int y, int end)
{
	section(y++, "Since start: class, syscall, fd, call site (pc), fiber");
	for (int i = 0; i < w->nkeys && y < end; i++) {
		const struct key_view *k = &w->keys[i];
		char fd[16] = "", pc[24] = "", fiber[LOOPSTAT_TAG_LEN + 8] = "", target[MODEL_TARGET_LEN];
		if (k->fd >= 0)
			snprintf(fd, sizeof(fd), "fd %d", k->fd);
		if (k->pc)
			snprintf(pc, sizeof(pc), "0x%llx", (unsigned long long)k->pc);
		if (k->fiber[0])
			snprintf(fiber, sizeof(fiber), "%s", k->fiber);
		snprintf(target, sizeof(target), "%s", k->target);
		mvprintw(y++, 2, "%5.1f%%  %-8s %-16s %-6s %-14s %-12s %.*s", k->pct, k->cls, k->syscall, fd, pc,
			 textsafe(fiber), COLS > 74 ? COLS - 74 : 0, textsafe(target));
	}
	if (w->keys_unkeyed_pct > 0 && y < end)
		mvprintw(y++, 2, "%.1f%% in keys beyond the table's room", w->keys_unkeyed_pct);
	if (w->instrumented && w->nkeys > 0 && y < end)
		y = draw_fibers(w, y);
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
		y = draw_lag(t, w, y, end);
	if (y < end)
		y = draw_runtime(w, y, end);
	if (y < end - 1)
		y = draw_blockers(w, y, end);
	if (w->nstall_log > 0 && y < end - 1)
		y = draw_stalls(t, w, y, end);
	if (w->nkeys > 0 && y < end - 1)
		y = draw_keys(w, y, end);
}
