/* Sampled idle% of an uninstrumented epoll loop matches the loop's own measure within 3 points. */
#include <criterion/criterion.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

#include "sampler.h"
#include "support/children.h"
#include "support/support.h"

#define WINDOW_S 5.0
/* 1 kHz gives ~5000 samples in 5 s: the 95% interval is under 1.4 points,
 * so a 3-point bound tests the sampler, not luck. */
#define RATE_HZ 1000.0

static double sampled_vs_self(double idle_frac, double *self_pct)
{
	int report;
	pid_t child = tc_spawn_epoll_cycle(idle_frac, WINDOW_S + 0.5, &report);
	struct targets t;
	targets_init(&t);
	t.pids[t.npids++] = child;
	struct sampler_opts o = { .rate_hz = RATE_HZ, .targets = &t };
	struct sampler *s;
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);
	usleep((useconds_t)(WINDOW_S * 1e6));
	struct model m;
	cr_assert_eq(sampler_model(s, 0, &m), 0);
	sampler_delete(s);

	struct pollfd p = { .fd = report, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 5000), 1, "child did not report");
	double frac;
	cr_assert_eq(read(report, &frac, sizeof(frac)), (ssize_t)sizeof(frac));
	close(report);
	tc_kill(child);

	cr_assert_eq(m.n, 1, "the child is one worker (seen polling)");
	const struct worker_view *w = &m.workers[0];
	cr_assert_eq(w->pid, child);
	cr_assert_gt(w->samples, 3000, "only %lu samples", (unsigned long)w->samples);
	*self_pct = 100.0 * frac;
	double sampled = w->idle_pct;
	cr_log_info("idle target %.0f%%: sampled %.2f%% (±%.2f), self %.2f%%, cpu %.1f%%, wait %.1f%%",
		    idle_frac * 100, sampled, w->idle_ci95, *self_pct, w->cpu_pct, w->cpu_wait_pct);
	model_done(&m);
	return sampled;
}

/* One test for all fractions: run in parallel they would steal each
 * other's CPU and turn wait-for-CPU into error. */
Test(accuracy, uninstrumented_epoll_loop, .timeout = 60)
{
	static const double fracs[] = { 0.25, 0.50, 0.90 };
	for (size_t i = 0; i < sizeof(fracs) / sizeof(fracs[0]); i++) {
		double self;
		double sampled = sampled_vs_self(fracs[i], &self);
		cr_expect_leq(fabs(sampled - self), 3.0, "idle %.0f%%: sampled %.2f vs self %.2f", fracs[i] * 100,
			      sampled, self);
	}
}
