/* loopstat export from cron's point of view: runs every 3 s through a carbon restart, every slot filled once, the spool delivered and resent whole (the other end-to-end export cases: test_export_cmd). It waits on carbon and the clock, so it runs beside other suites. */
#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exitcodes.h"
#include "loopstat_shm.h"
#include "support/carbon.h"
#include "support/children.h"
#include "support/export_run.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("expcron");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(export_cron, .init = setup, .fini = teardown, .timeout = 60);

/* A self-report figure of the run stamped ts. */
static double self_fig(const char *cdir, const char *name, long long ts)
{
	char metric[300];
	snprintf(metric, sizeof(metric), "t.h.loopstat.export.%s", name);
	return carbon_fetch_wait(cdir, metric, ts);
}

static void sleep_until(long long t)
{
	while (time(NULL) < t)
		usleep(20 * 1000);
}

/* The crontab flow, short: a run every 3 s (the schema's step) from the
 * docs' config shape, carbon stopped the moment the second run returns (its
 * points acknowledged, likely not yet in whisper: carbon-cache drops its
 * unwritten cache on SIGTERM) and started again after the third. Every slot
 * filled, the spooled ones with their own stamps, nothing between; the
 * exporter's own figures show nothing lost, every new point sent once and
 * each delivery sent once more, whole, by the next one. */
Test(export_cron, crontab_runs_through_a_carbon_restart)
{
	enum { STEP = 3, MAXRUNS = 10, SELF_LINES = 10 /* 5 global + 5 for the one destination */ };
	char cdir[400], conf[400], text[1024], *out, *err;
	snprintf(cdir, sizeof(cdir), "%s/carbon", dir);
	mkdir(cdir, 0700);
	struct carbon_server c;
	int port = carbon_free_port();
	carbon_spawn(&c, cdir, port, "3s:1h");
	const char *cargs[] = { "-b", "40", "-s", "60", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	snprintf(conf, sizeof(conf), "%s/export.conf", dir);
	snprintf(text, sizeof(text),
	         "# the crontab's config\ngraphite = 127.0.0.1:%d\nprefix = t\nhost = h\nduration = 1s\n"
	         "# match the storage schema's retention\nmax-age = 1h\ntimeout = 1s\nspool = %s/spool\npid = %d\n",
	         port, dir, (int)inst);
	carbon_write_text(conf, text);
	carbon_wait_port(&c, "carbon-cache");

	long long t0 = (time(NULL) / STEP + 1) * STEP;
	int rcs[MAXRUNS], nruns = 0;
	for (int k = 0; k < MAXRUNS; k++) {
		sleep_until(t0 + STEP * k);
		rcs[k] = ex_export(dir, &out, &err, "--config '%s'", conf);
		nruns++;
		cr_assert_str_empty(out);
		if (rcs[k] == EXIT_DEFERRED) {
			cr_assert(strstr(err, "deferred to the next run"), "run %d: %s", k, err);
			cr_assert_lt(strchr(err, '\n') - err + 1, (long)strlen(err) + 1);
		} else {
			cr_assert_eq(rcs[k], EXIT_OK, "run %d: exit %d: %s", k, rcs[k], err);
			cr_assert_str_empty(err, "run %d: %s", k, err);
		}
		free(out);
		free(err);
		if (k == 1)
			carbon_stop(&c);   /* right after run 1's acknowledgement: the next delivery resends it */
		if (k == 2) {
			cr_assert_eq(rcs[2], EXIT_DEFERRED, "carbon down: exit 75");
			glob_t gl;
			char g[500];
			snprintf(g, sizeof(g), "%s/spool/seg.*", dir);
			cr_assert_eq(glob(g, 0, NULL, &gl), 0, "points spooled while carbon is down");
			globfree(&gl);
			carbon_spawn(&c, cdir, port, "3s:1h");
		}
		if (k >= 3 && rcs[k] == EXIT_OK)
			break;
	}
	cr_assert_eq(rcs[0], EXIT_OK);
	cr_assert_eq(rcs[1], EXIT_OK);
	cr_assert_eq(rcs[nruns - 1], EXIT_OK, "carbon back within %d runs", MAXRUNS);

	/* every slot filled, nothing between: the deferred runs' points kept their stamps */
	char metric[300];
	long long want[MAXRUNS];
	double got[MAXRUNS * STEP + 1];
	for (int k = 0; k < nruns; k++)
		want[k] = t0 + STEP * k;
	snprintf(metric, sizeof(metric), "t.h.counters.%d.counters.samples", (int)inst);
	carbon_fetch_wait_all(cdir, metric, want, nruns, got);
	for (int k = 0; k < nruns; k++)
		cr_assert_float_eq(got[STEP * k], 100, 40, "run %d (1 s at 100 Hz)'s point at %lld (exit %d): %f", k, want[k], rcs[k],
		                   got[STEP * k]);
	for (int i = 0; i < STEP * (nruns - 1) + 1; i++)
		cr_assert(i % STEP == 0 || isnan(got[i]), "nothing between the runs' slots: a point at %lld", want[0] + i);

	/* delivered = spooled: each healthy run sends its own points plus the
	 * backlog (points and self-report) of the deferred runs before it */
	char sent[128], resent[128];
	snprintf(sent, sizeof(sent), "127_0_0_1_%d.sent", port);
	snprintf(resent, sizeof(resent), "127_0_0_1_%d.resent", port);
	double backlog = 0, last_delivery = 0;   /* lines of the last delivery: what the next one resends */
	for (int k = 0; k < nruns; k++) {
		double spooled = self_fig(cdir, "spooled", want[k]), s = self_fig(cdir, sent, want[k]);
		double rs = self_fig(cdir, resent, want[k]);
		cr_assert_gt(spooled, 20, "run %d spooled %f", k, spooled);
		if (rcs[k] == EXIT_DEFERRED) {
			cr_assert_float_eq(s, 0, 1e-9, "run %d (deferred) sent %f", k, s);
			cr_assert_float_eq(rs, 0, 1e-9, "run %d (deferred) resent %f", k, rs);
			backlog += spooled + SELF_LINES;
		} else {
			cr_assert_float_eq(s, backlog + spooled, 1e-9, "run %d sent %f, spooled %f, backlog %f", k, s,
			                   spooled, backlog);
			/* the last delivery, its own self-report included, once; nothing older */
			cr_assert_float_eq(rs, last_delivery, 1e-9, "run %d resent %f, the last delivery had %f lines", k,
			                   rs, last_delivery);
			last_delivery = s + SELF_LINES;
			backlog = 0;
		}
	}
	tc_kill(inst);
	carbon_stop(&c);
}
