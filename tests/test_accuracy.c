/* Sampled idle% matches the worker's own measure within 3 points: runtime loops on both backends and a plain epoll loop. */
#include <criterion/criterion.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/feed.h"
#include "fiberloop.h"
#include "collect/sampler.h"
#include "support/children.h"
#include "support/support.h"

#define WINDOW_S 4.0
/* 1 kHz gives ~4000 samples in 4 s: the 95% interval of a share is under
 * 1.6 points (Wilson, at 50%), so a 3-point bound tests the sampler, not
 * luck (the samples of a periodic loop spread less than independent ones:
 * on a quiet machine sampled and own measures agree within 0.2 points). */
#define RATE_HZ 1000.0

/* backend NULL: the plain (uninstrumented) epoll loop. shared_cpu: the
 * worker and the sampler on one CPU, the sampler without real-time
 * priority, so its wakeups wait out the worker's busy phases. */
static void check(const char *backend, double idle_frac, int shared_cpu)
{
	char idle[16], seconds[16];
	snprintf(idle, sizeof(idle), "%.2f", idle_frac);
	/* alive through the window and its start (WINDOW_S + 0.5 s), then its own measure */
	snprintf(seconds, sizeof(seconds), "%.1f", WINDOW_S + 0.9);
	const char *args[] = { "--idle", idle, "--seconds", seconds, backend ? NULL : "--plain", NULL };
	if (backend)
		setenv("FL_BACKEND", backend, 1);
	cpu_set_t all, one;
	cr_assert_eq(sched_getaffinity(0, sizeof(all), &all), 0);
	if (shared_cpu) {
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu(), &one);
		cr_assert_eq(sched_setaffinity(0, sizeof(one), &one), 0); /* inherited by child and sampler */
	}
	int out;
	pid_t child = tc_spawn_example("duty_cycle", args, &out);

	struct targets t;
	targets_init(&t);
	t.pids[t.npids++] = child;
	struct sampler_opts o = { .rate_hz = RATE_HZ, .targets = &t, .no_realtime = shared_cpu };
	struct sampler *s;
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	usleep((useconds_t)((WINDOW_S + 0.5) * 1e6));
	struct model m;
	cr_assert_eq(model_of_sampler(s, WINDOW_S, &m), 0);
	int rt = sampler_realtime(s);
	sampler_delete(s);
	sched_setaffinity(0, sizeof(all), &all);
	/* the worker's own clock, printed at its end, on every backend: the
	 * runtime's poll_time_ns, as the model relays it, comes partly from
	 * the hooks the samples read */
	double self = tc_read_self_idle(out, 5000);
	waitpid(child, NULL, 0);
	close(out);

	cr_assert_eq(m.n, 1, "%s: the child is one worker", backend ? backend : "plain");
	const struct worker_view *w = &m.workers[0];
	cr_assert_eq(w->pid, child);
	cr_assert_eq(w->instrumented, backend != NULL);
	/* 60% of the window's ticks at least */
	cr_assert_gt(w->samples, 0.6 * RATE_HZ * WINDOW_S, "only %lu samples", (unsigned long)w->samples);
	if (backend)
		cr_assert_str_eq(w->backend, backend);
	cr_log_info("%-8s idle %.0f%%%s: sampled %.2f%% (±%.2f), self %.2f%%, cpu %.1f%%, cpu wait %.1f%%",
		    backend ? backend : "plain", idle_frac * 100, shared_cpu ? " (shared CPU)" : "", w->idle_pct,
		    w->idle_ci95, self, w->cpu_pct, w->cpu_wait_pct);
	cr_expect_leq(fabs(w->idle_pct - self), 3.0,
		      "%s idle %.0f%%: sampled %.2f vs self %.2f (cpu %.1f%%, cpu wait %.1f%%, sampler %s)",
		      backend ? backend : "plain", idle_frac * 100, w->idle_pct, self, w->cpu_pct, w->cpu_wait_pct,
		      rt ? "real-time" : "NOT real-time");
	model_done(&m);
}

/* One test for every case: run in parallel they would steal each other's
 * CPU and turn wait-for-CPU into error. make test runs a diagonal of the
 * matrix (each backend once, each fraction once); make check, with
 * LOOPSTAT_TRUTH=full, runs all of it (bench/idle_accuracy: five
 * fractions on every backend through the CLI). The last two cases put
 * the worker and a sampler without real-time priority on one CPU: the
 * sampler's wakeups then wait out the worker's busy phases and find it
 * back in its poll, and only schedstat's runnable share keeps the figure
 * right (98 % sampled against 91 % before the model used it). */
Test(accuracy, sampled_idle_matches_own_measure, .timeout = 200)
{
	static const double fracs[] = { 0.25, 0.50, 0.90 };
	static const char *backends[] = { "io_uring", "libev", NULL };
	const char *truth = getenv("LOOPSTAT_TRUTH");
	int full = truth && !strcmp(truth, "full");
	for (size_t i = 0; i < sizeof(fracs) / sizeof(fracs[0]); i++)
		for (size_t b = 0; b < 3; b++)
			if ((full || b == i) && (!backends[b] || fl_backend_available(backends[b])))
				check(backends[b], fracs[i], 0);
	check(NULL, 0.90, 1);
	check("libev", 0.90, 1);
}
