/*
 * tui_metrics.c — the dashboard's layout of the metric table's figures,
 * keyed by their ids: which are columns (title, width, drop order) and
 * which detail line shows each, with what text. The figures' rules stay in
 * model/metric_table.c, so a view's layout never changes what a figure is.
 */
#include "top/tui_int.h"

const struct tui_metric tui_metrics[METRIC_NWORKER] = {
	[METRIC_W_samples]                    = { .line = TUI_LINE_IDENTITY, .detail = "%s samples" },
	[METRIC_W_idle_pct]                   = { .title = "IDLE%", .width = 5, .line = TUI_LINE_BAR, .detail = "idle" },
	[METRIC_W_cpu_pct]                    = { .title = "CPU%", .width = 5, .drop = 7, .line = TUI_LINE_CPU, .detail = "cpu %s%%" },
	[METRIC_W_cpu_wait_pct]               = { .line = TUI_LINE_CPU, .detail = "waiting for a cpu %s%%" },
	[METRIC_W_running_pct]                = { .line = TUI_LINE_BAR, .detail = "running" },
	[METRIC_W_blocked_pct]                = { .title = "BLOCKED%", .width = 8, .drop = 8, .line = TUI_LINE_BAR, .detail = "blocked" },
	[METRIC_W_other_pct]                  = { .line = TUI_LINE_BAR, .detail = "other" },
	[METRIC_W_blocked_unkeyed_pct]        = { .line = TUI_LINE_BLOCKERS, .detail = "%s%% in syscalls and fds beyond the table's room" },
	[METRIC_W_ops_per_s]                  = { .title = "OPS/s", .width = 7, .drop = 9, .line = TUI_LINE_RATES, .detail = "ops/s %s" },
	[METRIC_W_switches_per_s]             = { .line = TUI_LINE_RATES, .detail = "switches/s %s" },
	[METRIC_W_polls_per_s]                = { .line = TUI_LINE_RATES, .detail = "polls/s %s" },
	[METRIC_W_completions_per_s]          = { .line = TUI_LINE_RATES, .detail = "completions/s %s" },
	[METRIC_W_runqueue_len]               = { .title = "RUNQ", .width = 4, .drop = 3, .line = TUI_LINE_QUEUES, .detail = "runqueue %s" },
	[METRIC_W_runqueue_max]               = { .line = TUI_LINE_QUEUES, .detail = " (max %s)" },
	[METRIC_W_pending_ops]                = { .title = "PEND", .width = 4, .drop = 2, .line = TUI_LINE_QUEUES, .detail = "pending ops %s" },
	[METRIC_W_fibers]                     = { .line = TUI_LINE_QUEUES, .detail = "fibers %s" },
	[METRIC_W_self_idle_pct]              = { .line = TUI_LINE_SELF, .detail = "self-measured idle %s%%" },
	[METRIC_W_self_report_disagreements]  = { .line = TUI_LINE_SELF, .detail = "self-report disagreements %s" },
	[METRIC_W_stall_ms]                   = { .title = "STALL", .width = 6, .drop = 10 },
	[METRIC_W_lag_p50_ms]                 = { .line = TUI_LINE_LAG, .detail = "p50 %s" },
	[METRIC_W_lag_p99_ms]                 = { .title = "LAG99", .width = 6, .drop = 1, .line = TUI_LINE_LAG, .detail = "p99 %s" },
	[METRIC_W_lag_max_ms]                 = { .line = TUI_LINE_LAG, .detail = "max %s" },
	[METRIC_W_stalls_captured]            = { .line = TUI_LINE_LAG, .detail = "stalls %s in the window" },
	[METRIC_W_headroom_ops_per_s]         = { .line = TUI_LINE_SELF, .detail = "headroom %s ops/s" },
	[METRIC_W_quota_cpus]                 = { .line = TUI_LINE_CPU, .detail = "quota %s cpus" },
	[METRIC_W_throttled_pct]              = { .line = TUI_LINE_CPU, .detail = "throttled %s%%" },
	[METRIC_W_accept_queue]               = { .line = TUI_LINE_LISTEN, .detail = "accept queue %s" },
	[METRIC_W_accept_queue_max]           = { .line = TUI_LINE_LISTEN, .detail = " (max %s)" },
	[METRIC_W_accept_queue_limit]         = { .line = TUI_LINE_LISTEN, .detail = " of %s" },
	[METRIC_W_pool_threads]               = { .line = TUI_LINE_POOL, .detail = "pool of %s threads" },
	[METRIC_W_pool_busy_pct]              = { .line = TUI_LINE_POOL, .detail = " busy %s%%" },
	[METRIC_W_limit_loop]                 = { .line = TUI_LINE_LIMIT, .detail = "limited by the loop" },
	[METRIC_W_limit_quota]                = { .line = TUI_LINE_LIMIT, .detail = "limited by its CPU quota" },
	[METRIC_W_limit_cpu]                  = { .line = TUI_LINE_LIMIT, .detail = "limited by waiting for a CPU" },
	[METRIC_W_limit_backlog]              = { .line = TUI_LINE_LIMIT, .detail = "limited by its listen backlog" },
	[METRIC_W_limit_pool]                 = { .line = TUI_LINE_LIMIT, .detail = "limited by its helper pool" },
};

const char *const tui_fleet_detail[METRIC_NFLEET] = {
	[METRIC_F_workers]             = "workers %s",
	[METRIC_F_mean_idle_pct]       = "mean idle %s%%",
	[METRIC_F_ops_per_s]           = "ops/s %s",
	[METRIC_F_headroom_ops_per_s]  = "headroom %s ops/s",
	[METRIC_F_idle_pct_min]        = "min idle %s%%",
};
