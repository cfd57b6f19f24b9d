/*
 * metric_table.c — the metric table's rows, one designated initializer per
 * figure id (metric_table.h), as htop's Process_fields[]: its unit, its
 * rule (the evaluator's kind and arg, model/eval.h), where it comes from,
 * JSON decimals, natural sort direction, interval and description. How a
 * view shows a figure is the view's own table keyed by the same ids.
 */
#include "model/metric.h"

#include <stddef.h>
#include <stdint.h>

/* A row's name is its field's in the view struct, so the two cannot
 * differ, and the field's C type is read off the field itself. */
#define METRIC_FIELD(view, id) \
	.name = #id, .offset = offsetof(struct view, id), \
	.type = _Generic(((struct view *)0)->id, double: METRIC_DOUBLE, uint64_t: METRIC_U64, unsigned: METRIC_UNSIGNED)
#define WORKER_FIELD(id) METRIC_FIELD(worker_view, id)
#define FLEET_FIELD(id)  METRIC_FIELD(fleet_view, id), .source = METRIC_FLEET

const struct metric metric_worker[METRIC_NWORKER] = {
	[METRIC_W_samples] = {
		WORKER_FIELD(samples), .unit = METRIC_COUNT,
		.kind = METRIC_TALLY, .arg = METRIC_ARG_SAMPLES, .source = METRIC_SAMPLED,
		.desc = "syscall samples taken",
	},
	[METRIC_W_idle_pct] = {
		WORKER_FIELD(idle_pct), .unit = METRIC_PCT,
		.kind = METRIC_SHARE, .arg = SERIES_POLL, .source = METRIC_SAMPLED,
		.decimals = 2, .interval = &metric_worker[METRIC_W_idle_ci95],
		.desc = "share of wall time in the loop's own poll: spare capacity",
	},
	[METRIC_W_idle_ci95] = {
		WORKER_FIELD(idle_ci95), .unit = METRIC_POINTS,
		.kind = METRIC_INTERVAL, .arg = SERIES_POLL, .source = METRIC_SAMPLED,
		.decimals = 2,
		.desc = "half-width of the 95% interval of idle_pct",
	},
	[METRIC_W_idle_lo] = {
		WORKER_FIELD(idle_lo), .unit = METRIC_PCT,
		.kind = METRIC_LOWER, .arg = SERIES_POLL, .source = METRIC_SAMPLED,
		.decimals = 2,
		.desc = "lower bound of the 95% interval of idle_pct: the one check judges with",
	},
	[METRIC_W_idle_hi] = {
		WORKER_FIELD(idle_hi), .unit = METRIC_PCT,
		.kind = METRIC_UPPER, .arg = SERIES_POLL, .source = METRIC_SAMPLED,
		.decimals = 2,
		.desc = "upper bound of the 95% interval of idle_pct: the one check judges with",
	},
	[METRIC_W_cpu_pct] = {
		WORKER_FIELD(cpu_pct), .unit = METRIC_PCT,
		.kind = METRIC_RATIO, .arg = METRIC_ARG_RUN, .source = METRIC_SCHED,
		.decimals = 2, .sort_desc = 1,
		.desc = "CPU time over wall time",
	},
	[METRIC_W_cpu_wait_pct] = {
		WORKER_FIELD(cpu_wait_pct), .unit = METRIC_PCT,
		.kind = METRIC_RATIO, .arg = METRIC_ARG_WAIT, .source = METRIC_SCHED,
		.decimals = 2, .sort_desc = 1,
		.desc = "time runnable but waiting for a CPU over wall time",
	},
	[METRIC_W_running_pct] = {
		WORKER_FIELD(running_pct), .unit = METRIC_PCT,
		.kind = METRIC_SHARE, .arg = SERIES_RUNNING, .source = METRIC_SAMPLED,
		.decimals = 2, .sort_desc = 1,
		.desc = "share of wall time runnable: on a CPU or waiting for one",
	},
	[METRIC_W_blocked_pct] = {
		WORKER_FIELD(blocked_pct), .unit = METRIC_PCT,
		.kind = METRIC_SHARE, .arg = SERIES_BLOCKED, .source = METRIC_SAMPLED,
		.decimals = 2, .sort_desc = 1,
		.desc = "share of wall time in any other syscall",
	},
	[METRIC_W_other_pct] = {
		WORKER_FIELD(other_pct), .unit = METRIC_PCT,
		.kind = METRIC_SHARE, .arg = SERIES_OTHER, .source = METRIC_SAMPLED,
		.decimals = 2, .sort_desc = 1,
		.desc = "share of wall time neither in a syscall nor runnable",
	},
	[METRIC_W_blocked_unkeyed_pct] = {
		WORKER_FIELD(blocked_unkeyed_pct), .unit = METRIC_PCT,
		.kind = METRIC_SHARE, .arg = METRIC_ARG_UNKEYED, .source = METRIC_SAMPLED,
		.decimals = 2, .sort_desc = 1,
		.desc = "share of wall time blocked in (syscall, fd) pairs the sampler had no room to tell apart",
	},
	[METRIC_W_ops_per_s] = {
		WORKER_FIELD(ops_per_s), .unit = METRIC_PER_S, .counts = "ops",
		.kind = METRIC_RATE, .arg = PROBE_SHM_ops, .source = METRIC_COUNTERS,
		.decimals = 2, .sort_desc = 1,
		.desc = "operations per second",
	},
	[METRIC_W_switches_per_s] = {
		WORKER_FIELD(switches_per_s), .unit = METRIC_PER_S, .counts = "switches",
		.kind = METRIC_RATE, .arg = PROBE_SHM_switches, .source = METRIC_COUNTERS,
		.decimals = 2, .sort_desc = 1,
		.desc = "fiber switches per second",
	},
	[METRIC_W_polls_per_s] = {
		WORKER_FIELD(polls_per_s), .unit = METRIC_PER_S, .counts = "polls",
		.kind = METRIC_RATE, .arg = PROBE_SHM_polls, .source = METRIC_COUNTERS,
		.decimals = 2, .sort_desc = 1,
		.desc = "backend polls per second",
	},
	[METRIC_W_completions_per_s] = {
		WORKER_FIELD(completions_per_s), .unit = METRIC_PER_S, .counts = "completions",
		.kind = METRIC_RATE, .arg = PROBE_SHM_completions, .source = METRIC_COUNTERS,
		.decimals = 2, .sort_desc = 1,
		.desc = "completions reaped per second",
	},
	[METRIC_W_runqueue_len] = {
		WORKER_FIELD(runqueue_len), .unit = METRIC_COUNT,
		.kind = METRIC_LEVEL, .arg = PROBE_SHM_runqueue_len, .source = METRIC_COUNTERS,
		.sort_desc = 1,
		.desc = "fibers ready to run, as last read",
	},
	[METRIC_W_runqueue_max] = {
		WORKER_FIELD(runqueue_max), .unit = METRIC_COUNT,
		.kind = METRIC_PEAK, .arg = METRIC_ARG_RUNQ, .source = METRIC_COUNTERS,
		.sort_desc = 1,
		.desc = "the most fibers ready to run seen in the window",
	},
	[METRIC_W_pending_ops] = {
		WORKER_FIELD(pending_ops), .unit = METRIC_COUNT,
		.kind = METRIC_LEVEL, .arg = PROBE_SHM_pending_ops, .source = METRIC_COUNTERS,
		.sort_desc = 1,
		.desc = "operations in flight, as last read",
	},
	[METRIC_W_fibers] = {
		WORKER_FIELD(fibers), .unit = METRIC_COUNT,
		.kind = METRIC_LEVEL, .arg = PROBE_SHM_fibers_live, .source = METRIC_COUNTERS,
		.sort_desc = 1,
		.desc = "live fibers, as last read",
	},
	[METRIC_W_self_idle_pct] = {
		WORKER_FIELD(self_idle_pct), .unit = METRIC_PCT,
		.kind = METRIC_RATIO, .arg = METRIC_ARG_POLL_NS, .source = METRIC_COUNTERS,
		.decimals = 2,
		.desc = "the runtime's own idle measure: time blocked in its poll over wall time",
	},
	[METRIC_W_self_report_disagreements] = {
		WORKER_FIELD(self_report_disagreements), .unit = METRIC_COUNT,
		.kind = METRIC_TALLY, .arg = METRIC_ARG_DISAGREE, .source = METRIC_COUNTERS,
		.sort_desc = 1,
		.desc = "cross-checks where /proc contradicted the worker's own claim to be in its poll (a finding in itself)",
	},
	[METRIC_W_stall_ms] = {
		WORKER_FIELD(stall_ms), .unit = METRIC_MS,
		.kind = METRIC_PEAK, .arg = METRIC_ARG_STALL, .source = METRIC_COUNTERS,
		.decimals = 2, .sort_desc = 1,
		.desc = "the longest time in the window the loop ran without switching fibers, from 250 ms on (none: 0, shown as - in tables)",
	},
	[METRIC_W_lag_p50_ms] = {
		WORKER_FIELD(lag_p50_ms), .unit = METRIC_MS,
		.kind = METRIC_LAG, .arg = 50, .source = METRIC_SAMPLED,
		.decimals = 2, .sort_desc = 1,
		.desc = "the median busy span (leaving the poll to re-entering it): exact from the runtime's histogram, else sampled",
	},
	[METRIC_W_lag_p99_ms] = {
		WORKER_FIELD(lag_p99_ms), .unit = METRIC_MS,
		.kind = METRIC_LAG, .arg = 99, .source = METRIC_SAMPLED,
		.decimals = 2, .sort_desc = 1,
		.desc = "the 99th percentile of the busy spans: the delay 1 % of them exceed",
	},
	[METRIC_W_lag_max_ms] = {
		WORKER_FIELD(lag_max_ms), .unit = METRIC_MS,
		.kind = METRIC_LAG, .arg = 100, .source = METRIC_SAMPLED,
		.decimals = 2, .sort_desc = 1,
		.desc = "the longest busy span, one still in progress included",
	},
	[METRIC_W_stalls_captured] = {
		WORKER_FIELD(stalls_captured), .unit = METRIC_COUNT,
		.kind = METRIC_TALLY, .arg = METRIC_ARG_STALLS, .source = METRIC_SAMPLED,
		.sort_desc = 1,
		.desc = "stalls captured: times the worker was found out of its poll longer than --stall-ms (default 100 ms)",
	},
	[METRIC_W_headroom_ops_per_s] = {
		WORKER_FIELD(headroom_ops_per_s), .unit = METRIC_PER_S, .counts = "ops",
		.kind = METRIC_HEADROOM, .arg = PROBE_SHM_ops, .source = METRIC_COUNTERS,
		.decimals = 2,
		.desc = "sustainable rate: ops/s over (1 - idle), unknown when idle >= 99%",
	},
	[METRIC_W_quota_cpus] = {
		WORKER_FIELD(quota_cpus), .unit = METRIC_CPUS,
		.kind = METRIC_LEVEL, .arg = METRIC_ARG_QUOTA, .source = METRIC_SCHED,
		.decimals = 2,
		.desc = "the CPU quota of the worker's cgroup in CPUs (quota over period), as last read; unknown without one",
	},
	[METRIC_W_throttled_pct] = {
		WORKER_FIELD(throttled_pct), .unit = METRIC_PCT,
		.kind = METRIC_RATIO, .arg = METRIC_ARG_THROTTLED, .source = METRIC_SCHED,
		.decimals = 2, .sort_desc = 1,
		.desc = "time the worker's cgroup was held back by its CPU quota, over wall time",
	},
	[METRIC_W_accept_queue] = {
		WORKER_FIELD(accept_queue), .unit = METRIC_COUNT,
		.kind = METRIC_LEVEL, .arg = METRIC_ARG_ACCEPTQ, .source = METRIC_SCHED,
		.sort_desc = 1,
		.desc = "connections waiting in the fullest listening socket's accept queue, as last read; unknown without one",
	},
	[METRIC_W_accept_queue_max] = {
		WORKER_FIELD(accept_queue_max), .unit = METRIC_COUNT,
		.kind = METRIC_PEAK, .arg = METRIC_ARG_ACCEPTQ, .source = METRIC_SCHED,
		.sort_desc = 1,
		.desc = "the longest accept queue read in the window (once a second)",
	},
	[METRIC_W_accept_queue_limit] = {
		WORKER_FIELD(accept_queue_limit), .unit = METRIC_COUNT,
		.kind = METRIC_LEVEL, .arg = METRIC_ARG_BACKLOG, .source = METRIC_SCHED,
		.sort_desc = 1,
		.desc = "that socket's listen backlog: the queue's limit",
	},
	[METRIC_W_pool_threads] = {
		WORKER_FIELD(pool_threads), .unit = METRIC_COUNT,
		.kind = METRIC_LEVEL, .arg = METRIC_ARG_POOL_THREADS, .source = METRIC_SCHED,
		.sort_desc = 1,
		.desc = "threads of the busiest helper pool of the worker's process (list --json's pools), as last read",
	},
	[METRIC_W_pool_busy_pct] = {
		WORKER_FIELD(pool_busy_pct), .unit = METRIC_PCT,
		.kind = METRIC_POOLED, .arg = METRIC_ARG_POOL_BUSY, .source = METRIC_SCHED,
		.decimals = 2, .sort_desc = 1,
		.desc = "share of that pool's threads' samples out of the pool's wait: 100 is a saturated pool",
	},
	[METRIC_W_limit_loop] = {
		WORKER_FIELD(limit_loop), .unit = METRIC_COUNT,
		.kind = METRIC_LIMIT, .arg = METRIC_LIMIT_LOOP, .source = METRIC_SAMPLED,
		.sort_desc = 1,
		.desc = "1 when the loop itself limits the worker (busy or blocked: docs/usage.md's rules), else 0",
	},
	[METRIC_W_limit_quota] = {
		WORKER_FIELD(limit_quota), .unit = METRIC_COUNT,
		.kind = METRIC_LIMIT, .arg = METRIC_LIMIT_QUOTA, .source = METRIC_SAMPLED,
		.sort_desc = 1,
		.desc = "1 when the cgroup's CPU quota limits the worker, else 0",
	},
	[METRIC_W_limit_cpu] = {
		WORKER_FIELD(limit_cpu), .unit = METRIC_COUNT,
		.kind = METRIC_LIMIT, .arg = METRIC_LIMIT_CPU, .source = METRIC_SAMPLED,
		.sort_desc = 1,
		.desc = "1 when waiting for a CPU (contention) limits the worker, else 0",
	},
	[METRIC_W_limit_backlog] = {
		WORKER_FIELD(limit_backlog), .unit = METRIC_COUNT,
		.kind = METRIC_LIMIT, .arg = METRIC_LIMIT_BACKLOG, .source = METRIC_SAMPLED,
		.sort_desc = 1,
		.desc = "1 when connections wait in the accept queue of a loop that is not busy, else 0",
	},
	[METRIC_W_limit_pool] = {
		WORKER_FIELD(limit_pool), .unit = METRIC_COUNT,
		.kind = METRIC_LIMIT, .arg = METRIC_LIMIT_POOL, .source = METRIC_SAMPLED,
		.sort_desc = 1,
		.desc = "1 when a saturated helper pool of the worker's process limits it while its loop waits, else 0",
	},
};

/* A fleet row rolls worker row .of up over the workers that have it. */
const struct metric metric_fleet[METRIC_NFLEET] = {
	[METRIC_F_workers] = {
		FLEET_FIELD(workers), .unit = METRIC_COUNT,
		.reduce = METRIC_R_COUNT, .of = METRIC_W_samples,
		.sort_desc = 1,
		.desc = "workers listed",
	},
	[METRIC_F_mean_idle_pct] = {
		FLEET_FIELD(mean_idle_pct), .unit = METRIC_PCT,
		.reduce = METRIC_R_MEAN, .of = METRIC_W_idle_pct,
		.decimals = 2,
		.desc = "mean idle_pct over the workers that have one",
	},
	[METRIC_F_ops_per_s] = {
		FLEET_FIELD(ops_per_s), .unit = METRIC_PER_S, .counts = "ops",
		.reduce = METRIC_R_SUM, .of = METRIC_W_ops_per_s,
		.decimals = 2, .sort_desc = 1,
		.desc = "sum of ops_per_s over the instrumented workers",
	},
	[METRIC_F_headroom_ops_per_s] = {
		FLEET_FIELD(headroom_ops_per_s), .unit = METRIC_PER_S, .counts = "ops",
		.reduce = METRIC_R_SUM, .of = METRIC_W_headroom_ops_per_s,
		.decimals = 2,
		.desc = "sum of headroom_ops_per_s over the workers where it is known",
	},
	[METRIC_F_idle_pct_min] = {
		FLEET_FIELD(idle_pct_min), .unit = METRIC_PCT,
		.reduce = METRIC_R_MIN, .of = METRIC_W_idle_pct,
		.decimals = 2,
		.desc = "the lowest idle_pct of the workers: the busiest worker's spare capacity",
	},
};
