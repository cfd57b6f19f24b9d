/* A fiber that hogs its loop shows as a stall with its tag; a loop that idles or switches does not. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/feed.h"
#include "fiberloop.h"
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

/* Child: idles in its loop for 1.5 s, then a fiber tagged "hog" spins for
 * 3 s without yielding (a second past the look 2 s into it), then the loop
 * idles again. */
static pid_t spawn_child(void)
{
	return tc_spawn_hogger("stall-test", 1.5, 3, 1);
}

Test(stall, hogging_fiber_is_reported_with_its_tag)
{
	const char *const *backends = (const char *const[]){ "io_uring", "libev", NULL };
	for (; *backends; backends++) {
		if (!fl_backend_available(*backends))
			continue;
		setenv("FL_BACKEND", *backends, 1);
		pid_t child = spawn_child();
		struct targets t;
		targets_init(&t);
		t.pids[t.npids++] = child;
		struct sampler_opts o = { .rate_hz = 200, .targets = &t };
		struct sampler *s;
		cr_assert_eq(sampler_new(&o, &s), 0);
		cr_assert_eq(sampler_start(s), 0);

		struct model m;
		/* idle phase: in its poll, no stall (well into a second: a 1-s
		 * window holds that second's readings, the stall being their peak) */
		usleep(1300000);
		cr_assert_eq(model_of_sampler(s, 1, &m), 0);
		cr_assert_eq(m.n, 1, "%s: worker not found", *backends);
		cr_assert_float_eq(m.workers[0].stall_ms, 0.0, 1e-9, "%s: idle loop reported stalled: %f ms", *backends, m.workers[0].stall_ms);
		model_done(&m);

		usleep(2200000); /* 2 s into the hog */
		cr_assert_eq(model_of_sampler(s, 1, &m), 0);
		cr_assert_eq(m.n, 1);
		const struct worker_view *w = &m.workers[0];
		cr_assert_gt(w->stall_ms, 1000.0, "%s: stall %.0f ms", *backends, w->stall_ms);
		cr_assert_lt(w->stall_ms, 3000.0, "%s: stall %.0f ms", *backends, w->stall_ms);
		cr_assert_str_eq(w->fiber_tag, "hog");
		cr_assert_gt(w->running_pct, 80.0);
		model_done(&m);

		usleep(2000000); /* the hog is done: back in its poll */
		cr_assert_eq(model_of_sampler(s, 1, &m), 0);
		cr_assert_float_eq(m.workers[0].stall_ms, 0.0, 1e-9, "%s: stall outlived the hog", *backends);
		model_done(&m);
		sampler_delete(s);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
}
