/* serve --flight-recorder: a loop that stalls meets the trigger and serve writes one recording that report reads (its stall, trigger and limit readings); SIGUSR2 writes one more; /metrics counts them and serves the ring's bound (promtool accepts it); usage errors exit 2. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/recording.h"
#include "support/children.h"
#include "support/serve_child.h"
#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("serve-flight"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(serve_flight, .init = setup, .fini = teardown, .timeout = 30);

/* The flight recordings in dir whose name holds part, up to max, into names. */
static int recordings(const char *part, char names[][256], int max)
{
	DIR *d = opendir(dir);
	cr_assert(d);
	int n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "flight-", 7) == 0 && l > 4 && strcmp(de->d_name + l - 4, ".rec") == 0 &&
		    strstr(de->d_name, part) && n < max)
			snprintf(names[n++], 256, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

/* Waits up to timeout_ms for a recording named with part; its count. */
static int wait_recording(const char *part, int timeout_ms)
{
	char names[4][256];
	long long deadline = ts_now_ms() + timeout_ms;
	int n;
	while ((n = recordings(part, names, 4)) == 0 && ts_now_ms() < deadline)
		usleep(100 * 1000);
	return n;
}

/* A figure of /metrics' text: the value on the line starting with name. */
static double gauge(const char *body, const char *name)
{
	for (const char *l = body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, name, strlen(name)) == 0 && (l[strlen(name)] == '{' || l[strlen(name)] == ' ')) {
			const char *sp = strchr(l, ' ');
			if (sp && sp < strchr(l, '\n'))
				return strtod(sp + 1, NULL);
		}
	return -1;
}

static int no_event(void *arg, const struct rec_event *ev)
{
	(void)ev;
	++*(long *)arg;
	return 0;
}

Test(serve_flight, a_stall_and_sigusr2_each_write_one_recording)
{
	/* stalls of 300 ms every 1.5 s: the cooldown leaves one recording to the trigger */
	pid_t burner = tc_spawn_burner(1.2, 0.3);
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)burner);
	const char *args[] = { "-p", p, "-r", "100", "--flight-recorder", dir, "--ring", "3s", "--trigger",
			       "lag_max_ms>200", "--after", "1s", "--cooldown", "1m", NULL };
	struct serve_child c;
	sc_start(&c, args);
	int n = wait_recording("lag_max_msgt200", 10000);
	cr_assert_eq(n, 1, "one recording for the trigger within 10 s");
	kill(c.pid, SIGUSR2);
	n = wait_recording("SIGUSR2", 5000);
	cr_assert_eq(n, 1, "one recording for SIGUSR2 within 5 s");
	/* /metrics counts them, and serves the ring's bound */
	struct http_response r;
	long long deadline = ts_now_ms() + 5000;
	double written = -1;
	for (;;) {
		cr_assert_eq(http_get(c.port, "/metrics", NULL, 2000, &r), 0);
		written = gauge(r.body, "loopstat_flight_recordings_written");
		if (written >= 2 || ts_now_ms() > deadline)
			break;
		http_response_free(&r);
		usleep(200 * 1000);
	}
	cr_expect_eq(written, 2, "two recordings written, /metrics says %g:\n%s", written, r.body);
	double ring = gauge(r.body, "loopstat_flight_ring_bytes");
	cr_expect_gt(ring, 4 << 20, "the ring's bound: %g", ring);
	cr_expect_leq(ring, 256 << 20, "within the default --ring-bytes: %g", ring);
	cr_expect_eq(gauge(r.body, "loopstat_flight_recordings_lost"), 0, "%s", r.body);
	sc_promtool_check(dir, r.body, r.body_len);   /* the gauges are well-formed families */
	http_response_free(&r);
	char *err = NULL;
	int rc = sc_stop(&c, SIGTERM, 5000, &err);
	tc_kill(burner);
	cr_expect_eq(rc, 0, "serve's exit %d: %s", rc, err);
	cr_expect(strstr(err, "2 recordings written, 0 lost"), "%s", err);
	free(err);
	char names[4][256];
	cr_assert_eq(recordings("flight-", names, 4), 2, "nothing else was written");
	/* each a whole recording that report reads: events, trigger, limit readings */
	for (int i = 0; i < 2; i++) {
		char *path = ts_path_in(dir, names[i]);
		FILE *f = fopen(path, "r");
		cr_assert(f, "%s", path);
		struct rec_meta rm;
		long events = 0, line = 0;
		cr_assert_eq(rec_read(f, &rm, no_event, &events, &line), 0, "%s:%ld", path, line);
		fclose(f);
		cr_expect_eq(rm.cut, 0, "%s has its trailer", names[i]);
		cr_expect_gt(events, 100, "%s holds the ring's events", names[i]);
		cr_expect_geq(rm.ntriggers, 1, "%s holds its trigger", names[i]);
		/* one worker's limit reading a second judged: each whole second it holds
		 * but the last, which is judged after the recording ends */
		unsigned want = rm.duration_s >= 3 ? (unsigned)rm.duration_s - 1 : 1;
		cr_expect_geq(rm.limits_seen, want, "%s holds a limit reading a second: %u in %.2f s", names[i],
			      rm.limits_seen, rm.duration_s);
		char *rep = NULL;
		rc = ts_loopstat(&rep, 20000, "report", path, NULL);
		cr_expect_eq(rc, 0, "report %s: exit %d: %s", names[i], rc, rep);
		cr_expect(strstr(rep, "triggers (flight recorder"), "report lists the trigger: %s", rep);
		cr_expect(strstr(rep, "limits (flight recorder") && strstr(rep, p), "report shows the limits: %s", rep);
		if (strstr(names[i], "lag_max_ms"))
			cr_expect(strstr(rep, "stalls captured") && strstr(rep, "tc_stall_burn"),
				  "the stall, its stack naming the loop's function: %s", rep);
		free(rep);
		free(path);
	}
}

/* serve ARGS exits 2, saying needle on stderr. */
static void usage_error(const char *args, const char *needle)
{
	char cmd[1024], *out = NULL;
	snprintf(cmd, sizeof(cmd), "'%s' serve %s 2>&1", ts_loopstat_bin(), args);
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 5000);
	cr_expect_eq(rc, 2, "%s: exit %d: %s", args, rc, out);
	cr_expect(out && strstr(out, needle), "%s: want '%s' in: %s", args, needle, out);
	free(out);
}

/* Flight options without --flight-recorder, or a bad trigger: usage errors. */
Test(serve_flight, usage_errors_exit_2)
{
	usage_error("--trigger 'lag_max_ms>200'", "need --flight-recorder DIR");
	usage_error("--ring 10s", "--ring needs --flight-recorder DIR");
	char args[512];
	snprintf(args, sizeof(args), "--flight-recorder '%s' --trigger 'nosuch>1'", dir);
	usage_error(args, "unknown metric 'nosuch'");
	snprintf(args, sizeof(args), "--flight-recorder '%s' --trigger 'limit==often'", dir);
	usage_error(args, "unknown limit 'often'; valid: loop, quota, cpu, backlog, pool");
}
