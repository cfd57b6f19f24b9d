/* A fiber that hogs its loop shows as a stall with its tag; a loop that idles or switches does not. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/feed.h"
#include "fiberloop.h"
#include "collect/precision.h"
#include "collect/sampler.h"
#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("stall");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(stall, .init = setup, .fini = teardown, .timeout = 40);

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define RATE_HZ 200.0

/* A child that idles in its loop for 1.5 s, then runs a fiber tagged "hog"
 * that spins for 3 s without yielding, then idles again; looked at 2 s into
 * the hog, its stall is as long as the hog has run by the child's own
 * clock, resolved to the sampling period. */
static void hog_reported(const char *backend)
{
	if (!fl_backend_available(backend))
		cr_skip_test("the %s backend is not available here", backend);
	volatile double *hog_at = mmap(NULL, sizeof(double), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq((void *)hog_at, MAP_FAILED);
	*hog_at = 0;
	setenv("FL_BACKEND", backend, 1);
	pid_t child = tc_spawn_hogger_clocked("stall-test", 1.5, 3, 1, hog_at);
	struct targets t;
	targets_init(&t);
	t.pids[t.npids++] = child;
	struct sampler_opts o = { .rate_hz = RATE_HZ, .targets = &t };
	struct sampler *s;
	cr_assert_eq(sampler_new(&o, &s), 0);
	cr_assert_eq(sampler_start(s), 0);

	struct model m;
	/* idle phase: in its poll, no stall (well into a second: a 1-s
	 * window holds that second's readings, the stall being their peak) */
	usleep(1300000);
	cr_assert_eq(model_of_sampler(s, 1, &m), 0);
	cr_assert_eq(m.n, 1, "%s: worker not found", backend);
	cr_assert_float_eq(m.workers[0].stall_ms, 0.0, 1e-9, "%s: idle loop reported stalled: %f ms", backend,
			   m.workers[0].stall_ms);
	model_done(&m);

	usleep(2200000); /* 2 s into the hog */
	cr_assert_eq(model_of_sampler(s, 1, &m), 0);
	double now = mono_s();
	cr_assert_gt(*hog_at, 0, "%s: the hog never started", backend);
	double hogged_ms = (now - *hog_at) * 1000, period_ms = 1000 / RATE_HZ;
	cr_assert_eq(m.n, 1);
	const struct worker_view *w = &m.workers[0];
	/* the stall runs from the first reading of the slot after the switch
	 * to the hog (at the rate: the thread's state just changed) to the
	 * last reading, which a thread whose state stays the same gets at
	 * PREC_FLOOR_HZ at least: short by that gap, and by one more for a
	 * sampler that other real-time work held up */
	double short_ms = 2 * 1000 / PREC_FLOOR_HZ + period_ms;
	cr_log_info("%s: stall %.1f ms, the hog's own clock %.1f ms\n", backend, w->stall_ms, hogged_ms);
	cr_assert(w->stall_ms >= hogged_ms - short_ms && w->stall_ms <= hogged_ms + period_ms,
		  "%s: stall %.1f ms, hogging %.1f ms by its own clock", backend, w->stall_ms, hogged_ms);
	cr_assert_str_eq(w->fiber_tag, "hog");
	cr_assert_gt(w->running_pct, 80.0);
	model_done(&m);

	usleep(2000000); /* the hog is done: back in its poll */
	cr_assert_eq(model_of_sampler(s, 1, &m), 0);
	cr_assert_float_eq(m.workers[0].stall_ms, 0.0, 1e-9, "%s: stall outlived the hog", backend);
	model_done(&m);
	sampler_delete(s);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	munmap((void *)hog_at, sizeof(double));
}

Test(stall, hogging_fiber_is_reported_with_its_tag_io_uring) { hog_reported("io_uring"); }
Test(stall, hogging_fiber_is_reported_with_its_tag_libev) { hog_reported("libev"); }
