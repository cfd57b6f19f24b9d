/* `loopstat export` end to end: real workers (instrumented and not) into a real carbon-cache read back with whisper-fetch, per run and per second (a stopped exporter's seconds filled or reported, never silently missing); the crontab flow through a carbon restart right after a run; a Prometheus textfile promtool accepts; no worker; config errors. */
#include <criterion/criterion.h>
#include <glob.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exitcodes.h"
#include "loopstat_shm.h"
#include "support/carbon.h"
#include "support/children.h"
#include "support/export_run.h"
#include "support/support.h"
#include "support/users.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("expcmd");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(export_cmd, .init = setup, .fini = teardown, .timeout = 60);

/* The dotted metric of the one whisper file matching storage-relative glob pat ("" if none). */
static void find_metric(const char *cdir, const char *pat, char *metric, size_t len)
{
	char g[800];
	glob_t gl;
	snprintf(g, sizeof(g), "%s/storage/whisper/%s.wsp", cdir, pat);
	metric[0] = '\0';
	if (glob(g, 0, NULL, &gl) != 0)
		return;
	cr_assert_eq(gl.gl_pathc, 1, "%s: %zu files", g, gl.gl_pathc);
	size_t skip = strlen(cdir) + strlen("/storage/whisper/");
	snprintf(metric, len, "%.*s", (int)(strlen(gl.gl_pathv[0]) - skip - 4), gl.gl_pathv[0] + skip);
	for (char *c = metric; *c; c++)
		if (*c == '/')
			*c = '.';
	globfree(&gl);
}

/* Waits (bounded) for the metric's file and points in (from, until]; returns
 * how many there are, got[] as carbon_fetch_range's. */
static int points_in(const char *cdir, const char *pat, long long from, long long until, int want, double *got)
{
	char metric[600];
	long long deadline = ts_now_ms() + 8000;
	for (;;) {
		find_metric(cdir, pat, metric, sizeof(metric));
		int n = 0;
		if (metric[0]) {
			carbon_fetch_range(cdir, metric, from, until, got);
			for (long long k = 0; k < until - from; k++)
				n += !isnan(got[k]);
		}
		if (n >= want || ts_now_ms() > deadline)
			return n;
		usleep(100 * 1000);
	}
}

/* The value of the one point in (from, until]; its time in *ts. */
static double one_point(const char *cdir, const char *pat, long long from, long long until, long long *ts)
{
	double got[256];
	cr_assert_lt(until - from, 256);
	int n = points_in(cdir, pat, from, until, 1, got);
	cr_assert_eq(n, 1, "%s: %d points in (%lld, %lld]", pat, n, from, until);
	for (long long k = 0; k < until - from; k++)
		if (!isnan(got[k])) {
			if (ts)
				*ts = from + 1 + k;
			return got[k];
		}
	return NAN;
}

static int exists(const char *cdir, const char *pat)
{
	char metric[600];
	find_metric(cdir, pat, metric, sizeof(metric));
	return metric[0] != '\0';
}

/*
 * A loop's own idle measure runs from entering its poll to the poll's
 * return, so it also holds the wait for a CPU after the wake-up, which the
 * sampled figures count as cpu_wait: on a busy machine the own measure lies
 * between idle and idle + cpu_wait.
 */
static void near_own(double idle, double own, double cpu_wait, const char *who)
{
	cr_assert(own >= idle - 10 && own <= idle + cpu_wait + 10,
	          "%s: its own idle measure %.1f outside sampled idle %.1f .. + cpu_wait %.1f (10 points slack)", who,
	          own, idle, cpu_wait);
}

Test(export_cmd, real_workers_into_carbon_per_run_and_per_second)
{
	char cdir[400], *out, *err, p[64];
	snprintf(cdir, sizeof(cdir), "%s/carbon", dir);
	mkdir(cdir, 0700);
	struct carbon_server c;
	int port = carbon_free_port();
	carbon_spawn(&c, cdir, port, NULL);
	const char *cargs[] = { "-b", "40", "-s", "40", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	int efd;
	const char *eargs[] = { "--port", "0", NULL };
	pid_t echo = tc_spawn_published("echo_server", eargs, dir, &efd);
	carbon_wait_port(&c, "carbon-cache");
	int dfd;
	const char *dargs[] = { "--idle", "0.8", "--seconds", "3.5", "--plain", NULL };
	pid_t plain = tc_spawn_example("duty_cycle", dargs, &dfd);

	long long t0 = time(NULL);
	snprintf(p, sizeof(p), "%d,%d,%d", (int)inst, (int)plain, (int)echo);
	int rc = ex_export(dir, &out, &err, "--graphite 127.0.0.1:%d --prefix t --host h --duration 2 --rate 200 "
	                    "--spool '%s/spool' -p %s", port, dir, p);
	long long t1 = time(NULL);
	cr_assert_eq(rc, EXIT_OK, "exit %d: %s", rc, err);
	cr_assert_str_empty(out, "nothing on stdout in cron mode: %s", out);
	cr_assert_str_empty(err, "a clean run prints nothing: %s", err);
	double plain_self = tc_read_self_idle(dfd, 10000);

	/* stamped with the end of sampling, one point per metric */
	char pat[256];
	long long ts;
	snprintf(pat, sizeof(pat), "t/h/counters/%d/counters/idle_pct", (int)inst);
	double idle = one_point(cdir, pat, t0 - 1, t1 + 1, &ts);
	cr_assert(ts >= t0 + 2 && ts <= t1, "stamped %lld, sampling ended in [%lld, %lld]", ts, t0 + 2, t1);
	snprintf(pat, sizeof(pat), "t/h/counters/%d/counters/self_idle_pct", (int)inst);
	double self = one_point(cdir, pat, t0 - 1, t1 + 1, NULL);
	snprintf(pat, sizeof(pat), "t/h/counters/%d/counters/cpu_wait_pct", (int)inst);
	near_own(idle, self, one_point(cdir, pat, t0 - 1, t1 + 1, NULL), "counters");
	snprintf(pat, sizeof(pat), "t/h/counters/%d/counters/ops_per_s", (int)inst);
	cr_assert_float_eq(one_point(cdir, pat, t0 - 1, t1 + 1, NULL), 100, 20, "one op per 10 ms tick");

	snprintf(pat, sizeof(pat), "t/h/duty_cycle/%d/*/idle_pct", (int)plain);
	double pidle = one_point(cdir, pat, t0 - 1, t1 + 1, NULL);
	snprintf(pat, sizeof(pat), "t/h/duty_cycle/%d/*/cpu_wait_pct", (int)plain);
	near_own(pidle, plain_self, one_point(cdir, pat, t0 - 1, t1 + 1, NULL), "duty_cycle");
	snprintf(pat, sizeof(pat), "t/h/duty_cycle/%d/*/cpu_pct", (int)plain);
	cr_assert(exists(cdir, pat), "an uninstrumented worker has its sampled figures");
	snprintf(pat, sizeof(pat), "t/h/duty_cycle/%d/*/ops_per_s", (int)plain);
	cr_assert(!exists(cdir, pat), "and no counter series");

	snprintf(pat, sizeof(pat), "t/h/echo_server/%d/*/idle_pct", (int)echo);
	cr_assert_gt(one_point(cdir, pat, t0 - 1, t1 + 1, NULL), 90.0, "an echo server nobody talks to idles");
	cr_assert_float_eq(one_point(cdir, "t/h/fleet/workers", t0 - 1, t1 + 1, NULL), 3, 1e-9);
	free(out);
	free(err);

	/* --resolution 1s: one point per second sampled, consecutive seconds */
	t0 = time(NULL);
	snprintf(p, sizeof(p), "%d", (int)inst);
	rc = ex_export(dir, &out, &err, "--graphite 127.0.0.1:%d --prefix s --host h --duration 3 --rate 200 "
	                "--resolution 1s --spool '%s/spool' -p %s", port, dir, p);
	t1 = time(NULL);
	cr_assert_eq(rc, EXIT_OK, "exit %d: %s", rc, err);
	double got[64];
	snprintf(pat, sizeof(pat), "s/h/counters/%d/counters/ops_per_s", (int)inst);
	int n = points_in(cdir, pat, t0 - 2, t1 + 1, 3, got);
	cr_assert_eq(n, 3, "3 seconds sampled, %d points", n);
	int first = -1;
	for (int k = 0; k < t1 - t0 + 3; k++)
		if (!isnan(got[k])) {
			if (first < 0)
				first = k;
			cr_assert_lt(k - first, 3, "consecutive seconds: a point %d s after the first", k - first);
			cr_assert_float_eq(got[k], 100, 25, "ops/s of one second: %f", got[k]);
		}
	snprintf(pat, sizeof(pat), "s/h/counters/%d/counters/samples", (int)inst);
	n = points_in(cdir, pat, t0 - 2, t1 + 1, 3, got);
	for (int k = 0; k < t1 - t0 + 3; k++)
		cr_assert(isnan(got[k]) || (got[k] >= 120 && got[k] <= 220), "samples of one second at 200 Hz: %f", got[k]);
	free(out);
	free(err);
	close(efd);
	tc_kill(inst);
	tc_kill(echo);
	tc_kill(plain);
	carbon_stop(&c);
}

/*
 * --resolution 1s with the exporter stopped (SIGSTOP: sampler and all) for
 * 2.5 s of a 6-s run: its snapshot after the stop comes over a second late.
 * The seconds sampled in part are filled from the series' ring; a second
 * nothing was sampled in has no point and is said so, on stderr and in the
 * self-report; the points plus the seconds missed make the whole run.
 */
Test(export_cmd, per_second_through_a_stopped_exporter)
{
	char cdir[400], edir[400], spool[400], pid_s[16], *argv[32];
	snprintf(cdir, sizeof(cdir), "%s/carbon", dir);
	snprintf(edir, sizeof(edir), "%s/exp", dir);
	mkdir(cdir, 0700);
	mkdir(edir, 0700);
	struct carbon_server c;
	int port = carbon_free_port();
	carbon_spawn(&c, cdir, port, NULL);
	const char *cargs[] = { "-b", "40", "-s", "40", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	carbon_wait_port(&c, "carbon-cache");
	char graphite[64];
	snprintf(graphite, sizeof(graphite), "127.0.0.1:%d", port);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)inst);
	int n = 0;
	const char *args[] = { ts_loopstat_bin(), "export", "--graphite", graphite, "--prefix", "m", "--host", "h",
	                       "--duration", "6", "--rate", "200", "--resolution", "1s", "--spool", spool, "-p", pid_s,
	                       NULL };
	for (; args[n]; n++)
		argv[n] = (char *)args[n];
	argv[n] = NULL;
	long long t0 = time(NULL);
	pid_t ex = carbon_spawn_cmd(edir, argv);
	usleep(1500 * 1000);
	cr_assert_eq(kill(ex, SIGSTOP), 0);
	usleep(2500 * 1000);
	cr_assert_eq(kill(ex, SIGCONT), 0);
	int st;
	cr_assert_eq(waitpid(ex, &st, 0), ex);
	long long t1 = time(NULL);
	char outp[500];
	snprintf(outp, sizeof(outp), "%s/out", edir);
	char *out = ts_read_file(outp);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == EXIT_OK, "status %d: %s", st, out);
	int missed = -1, of = 0;
	const char *line = strstr(out, "export: --resolution 1s: ");
	cr_assert(line && sscanf(line, "export: --resolution 1s: %d of %d seconds have no points", &missed, &of) == 2,
	          "the missing seconds are said: %s", out);
	cr_assert_eq(of, 6);
	cr_assert(missed >= 1 && missed <= 3, "a 2.5-s stop leaves 1 to 3 seconds without a sample: %d", missed);
	cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line: %s", out);
	double got[64];
	char pat[256];
	snprintf(pat, sizeof(pat), "m/h/counters/%d/counters/samples", (int)inst);
	int pts = points_in(cdir, pat, t0 - 2, t1 + 1, 6 - missed, got);
	cr_assert_eq(pts, 6 - missed, "every other second has its point (the ones sampled in part filled late): %d",
	             pts);
	cr_assert_float_eq(one_point(cdir, "m/h/loopstat/export/seconds_missed", t0 - 1, t1 + 1, NULL), missed, 1e-9,
	                   "and the self-report says so");
	free(out);
	tc_kill(inst);
	carbon_stop(&c);
}

Test(export_cmd, prometheus_textfile_from_real_workers_passes_promtool)
{
	const char *cargs[] = { "-b", "30", "-s", "20", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	const char *dargs[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	int dfd;
	pid_t plain = tc_spawn_example("duty_cycle", dargs, &dfd);
	char *out, *err, prom[400];
	snprintf(prom, sizeof(prom), "%s/loopstat.prom", dir);
	int rc = ex_export(dir, &out, &err, "--prometheus-textfile '%s' --duration 1 --host h -p %d,%d", prom,
	                    (int)inst, (int)plain);
	cr_assert_eq(rc, EXIT_OK, "exit %d: %s", rc, err);
	cr_assert_str_empty(out);
	char cmd[600], *check;
	snprintf(cmd, sizeof(cmd), "/usr/bin/promtool check metrics < '%s' 2>&1", prom);
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	cr_assert_eq(ts_run(sh, &check, 15000), 0, "promtool: %s", check);
	free(check);
	char *catv[] = { "/bin/cat", prom, NULL }, *text;
	cr_assert_eq(ts_run(catv, &text, 5000), 0);
	char want[128];
	snprintf(want, sizeof(want), "loopstat_worker_ops_total{host=\"h\",name=\"counters\",service=\"counters\",pid=\"%d\"", (int)inst);
	cr_assert(strstr(text, want), "%s", text);
	snprintf(want, sizeof(want), "loopstat_worker_idle_ratio{host=\"h\",name=\"duty_cycle\",service=\"duty_cycle\",pid=\"%d\"", (int)plain);
	cr_assert(strstr(text, want), "%s", text);
	cr_assert(strstr(text, "loopstat_fleet_workers{host=\"h\"} 2\n"), "%s", text);
	free(text);
	free(out);
	free(err);
	tc_kill(inst);
	tc_kill(plain);
}

Test(export_cmd, no_worker_exits_4, .timeout = 30)
{
	char *out, *err;
	/* nothing published in this shm dir, and a process that never polls */
	int rfd, wr;
	pid_t reader = tc_spawn_blocked_read(&rfd, &wr);
	int rc = ex_export(dir, &out, &err, "--dry-run --duration 0.3");
	cr_assert_eq(rc, EXIT_NOTHING, "exit %d: %s", rc, err);
	cr_assert(strstr(err, "no worker"), "%s", err);
	cr_assert_str_empty(out);
	free(out);
	free(err);
	rc = ex_export(dir, &out, &err, "--graphite 127.0.0.1:1 --timeout 1 --spool '%s/spool' --duration 0.3 -p %d", dir,
	                (int)reader);
	cr_assert_eq(rc, EXIT_NOTHING, "with a destination down too: exit %d: %s", rc, err);
	free(out);
	free(err);
	tc_kill(reader);
	close(wr);
}

Test(export_cmd, refused_access_exits_5, .timeout = 30)
{
	ts_need_nobody();
	int rfd, wr;
	pid_t child = tc_spawn_blocked_read(&rfd, &wr);
	/* nobody must be able to read the segment directory: an unreadable
	 * one is a configuration error (exit 2), not what this tests */
	cr_assert_eq(chmod(dir, 0755), 0);
	char cmd[1024], *out;
	snprintf(cmd, sizeof(cmd), "exec " TS_AS_NOBODY " \"%s\" export --dry-run "
	         "--duration 0.3 -p %d 2>&1", ts_loopstat_bin(), (int)child);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 20000);
	cr_assert_eq(rc, EXIT_ACCESS, "exit %d: %s", rc, out);
	char want[64];
	snprintf(want, sizeof(want), "access refused: pid %d runs as root", (int)child);
	cr_assert(strstr(out, want), "%s", out);
	free(out);
	tc_kill(child);
	close(wr);
}

Test(export_cmd, config_errors_and_overrides, .timeout = 30)
{
	char conf[400], *out, *err;
	snprintf(conf, sizeof(conf), "%s/bad.conf", dir);
	carbon_write_text(conf, "prefix = x\n# fine so far\ngraphit = 127.0.0.1:2003\n");
	long long t = ts_now_ms();
	int rc = ex_export(dir, &out, &err, "--config '%s'", conf);
	cr_assert_eq(rc, EXIT_USAGE, "unknown key: exit %d: %s", rc, err);
	cr_assert(strstr(err, "bad.conf:3: unknown option 'graphit'"), "names the file and line: %s", err);
	cr_assert_lt(ts_now_ms() - t, 2000, "refused before sampling");
	free(out);
	free(err);
	static const char *const bad[] = {
		"--config /nonexistent/x.conf --dry-run", "--duration 0 --dry-run", "--resolution 2s --dry-run",
		"--graphite nohostport", "--template '{prefix}.{host}' --dry-run", "--duration 1", "--max-age -1 --dry-run",
		"--dry-run extra",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = ex_export(dir, &out, &err, "%s", bad[i]);
		cr_assert_eq(rc, EXIT_USAGE, "'%s': exit %d: %s", bad[i], rc, err);
		cr_assert(strncmp(err, "loopstat export: ", 17) == 0, "'%s' says why: %s", bad[i], err);
		free(out);
		free(err);
	}

	/* paths are refused before sampling, not after --duration: a textfile
	 * whose directory is missing, a spool that is a file */
	char spool_file[400];
	snprintf(spool_file, sizeof(spool_file), "%s/not-a-dir", dir);
	carbon_write_text(spool_file, "x\n");
	const char *late[] = { "--prometheus-textfile /nonexistent/textfiles/loopstat.prom --duration 10",
			       "--graphite 127.0.0.1:2003 --spool '%s' --duration 10" };
	for (size_t i = 0; i < 2; i++) {
		t = ts_now_ms();
		rc = ex_export(dir, &out, &err, late[i], spool_file);
		cr_expect_eq(rc, EXIT_USAGE, "'%s': exit %d: %s", late[i], rc, err);
		cr_expect(strstr(err, i == 0 ? "--prometheus-textfile" : "spool"), "'%s' says why: %s", late[i], err);
		cr_expect_lt(ts_now_ms() - t, 2000, "'%s' refused only after sampling (%lld ms)", late[i], ts_now_ms() - t);
		free(out);
		free(err);
	}

	/* the file first, the command line over it */
	const char *cargs[] = { "-b", "30", "-s", "20", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	snprintf(conf, sizeof(conf), "%s/good.conf", dir);
	char text[256];
	snprintf(text, sizeof(text), "prefix = fromfile\nhost = \"filehost\"\ndry_run = yes\nduration = 5m\npid = %d\n",
	         (int)inst);
	carbon_write_text(conf, text);
	rc = ex_export(dir, &out, &err, "--config '%s' --prefix cli --duration 0.5", conf);
	cr_assert_eq(rc, EXIT_OK, "exit %d: %s", rc, err);
	char want[128];
	snprintf(want, sizeof(want), "cli.filehost.counters.%d.counters.idle_pct ", (int)inst);
	cr_assert(strstr(out, want), "%s", out);
	cr_assert_null(strstr(out, "fromfile"), "%s", out);
	cr_assert(strstr(out, "cli.filehost.fleet.workers 1 "), "%s", out);
	free(out);
	free(err);
	tc_kill(inst);
}
