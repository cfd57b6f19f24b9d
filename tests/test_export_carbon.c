/* Export into real servers: a carbon-cache on a free loopback port (read back with whisper-fetch, through a restart), two caches behind a real carbon-c-relay with a consistent-hash cluster, and a carbon-aggregator that counts the resend of the last delivery twice unless no-resend. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <math.h>

#include "exitcodes.h"
#include "export/export_run.h"
#include "support/carbon.h"
#include "support/support.h"

/* n points t.<host>.worker_<i>.7.idle_pct = run_id * 100 + i + 0.5 at now; o
 * NULL: the defaults. */
static int run_as(const struct export_opts *base, const char *host, const char *spool, const char *dest, int run_id,
                  int n, int64_t now, char **log)
{
	struct export_opts o;
	if (base)
		o = *base;
	else
		export_opts_init(&o);
	snprintf(o.spool, sizeof(o.spool), "%s", spool);
	snprintf(o.graphite, sizeof(o.graphite), "%s", dest);
	snprintf(o.prefix, sizeof(o.prefix), "t");
	o.timeout_s = 2;
	struct expo_point *pts = calloc((size_t)n, sizeof(*pts));
	char (*names)[32] = calloc((size_t)n, 32);
	for (int i = 0; i < n; i++) {
		snprintf(names[i], 32, "worker %d", i);   /* sanitised to worker_<i> */
		pts[i] = (struct expo_point){ .prefix = "t", .host = host, .process = names[i], .pid = 7, .tid = -1,
		                                .metric = "idle_pct", .value = run_id * 100 + i + 0.5, .ts = now };
	}
	size_t len = 0;
	FILE *f = open_memstream(log, &len);
	struct export_result r;
	struct export_input in = { pts, (size_t)n, now, host, 0 };
	int code = export_run(&o, &in, stdout, f, &r);
	fclose(f);
	free(pts);
	free(names);
	return code;
}

static int run(const char *spool, const char *dest, int run_id, int n, int64_t now, char **log)
{
	return run_as(NULL, "h", spool, dest, run_id, n, now, log);
}

Test(export_carbon, delivered_read_back_and_through_a_restart, .timeout = 60)
{
	char *dir = ts_tmpdir("expcarbon"), spool[300], dest[64], metric[64], *log = NULL;
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	struct carbon_server c;
	int port = carbon_free_port();
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", port);
	carbon_start(&c, dir, port, NULL);
	int64_t t0 = time(NULL) - 100;

	cr_assert_eq(run(spool, dest, 1, 5, t0, &log), EXIT_OK, "%s", log);
	free(log);
	for (int i = 0; i < 5; i++) {
		snprintf(metric, sizeof(metric), "t.h.worker_%d.7.idle_pct", i);
		cr_assert_float_eq(carbon_fetch_wait(dir, metric, t0), 100 + i + 0.5, 1e-9, "%s", metric);
	}
	/* the exporter's own figures landed too */
	cr_assert_float_eq(carbon_fetch_wait(dir, "t.h.loopstat.export.spooled", t0), 5, 1e-9);

	/* carbon down: deferred, spooled with the original timestamp */
	carbon_stop(&c);
	cr_assert_eq(run(spool, dest, 2, 5, t0 + 10, &log), EXIT_DEFERRED, "%s", log);
	cr_assert(strstr(log, "deferred"), "%s", log);
	free(log);
	/* carbon back: the next run delivers the backlog first, then its own */
	carbon_start(&c, dir, port, NULL);
	cr_assert_eq(run(spool, dest, 3, 5, t0 + 20, &log), EXIT_OK, "%s", log);
	free(log);
	for (int i = 0; i < 5; i++) {
		snprintf(metric, sizeof(metric), "t.h.worker_%d.7.idle_pct", i);
		long long want[3] = { t0, t0 + 10, t0 + 20 };
		double got[21];
		carbon_fetch_wait_all(dir, metric, want, 3, got);
		cr_assert_float_eq(got[0], 100 + i + 0.5, 1e-9, "%s at t0", metric);
		cr_assert_float_eq(got[10], 200 + i + 0.5, 1e-9, "%s at t0+10 (spooled while carbon was down)", metric);
		cr_assert_float_eq(got[20], 300 + i + 0.5, 1e-9, "%s at t0+20", metric);
		for (int k = 0; k < 21; k++)
			cr_assert(k % 10 == 0 || isnan(got[k]), "%s: nothing invented at t0+%d", metric, k);
	}
	carbon_stop(&c);
	ts_rmtree_free(dir);
}

static int on(const struct carbon_server *s, const char *metric)
{
	char file[600];
	snprintf(file, sizeof(file), "%s/storage/whisper/t/h/%s/7/idle_pct.wsp", s->dir, metric);
	return access(file, F_OK) == 0;
}

Test(export_carbon, relay_consistent_hash_two_caches, .timeout = 60)
{
	char *dir = ts_tmpdir("exprelay"), da[300], db[300], dr[300], spool[300], dest[64], *log = NULL;
	snprintf(da, sizeof(da), "%s/a", dir);
	snprintf(db, sizeof(db), "%s/b", dir);
	snprintf(dr, sizeof(dr), "%s/relay", dir);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	mkdir(da, 0700);
	mkdir(db, 0700);
	mkdir(dr, 0700);
	struct carbon_server a, b, relay = { 0 };
	/* python starts slowly: both caches at once */
	carbon_spawn(&a, da, carbon_free_port(), NULL);
	carbon_spawn(&b, db, carbon_free_port(), NULL);
	carbon_wait_port(&a, "carbon-cache a");
	carbon_wait_port(&b, "carbon-cache b");

	/* the tested config, ports filled in */
	char *tmpl = NULL, conf[4096], path[400];
	FILE *f = fopen("tests/data/carbon-c-relay.conf", "re");
	cr_assert(f, "tests/data/carbon-c-relay.conf: %s (run from the tree)", strerror(errno));
	size_t n = fread(conf, 1, sizeof(conf) - 1, f);
	fclose(f);
	conf[n] = '\0';
	relay.port = carbon_free_port();
	snprintf(relay.dir, sizeof(relay.dir), "%s", dr);
	char ports[3][16];
	snprintf(ports[0], 16, "%d", relay.port);
	snprintf(ports[1], 16, "%d", a.port);
	snprintf(ports[2], 16, "%d", b.port);
	const char *keys[3] = { "@RELAY_PORT@", "@CACHE_A_PORT@", "@CACHE_B_PORT@" };
	for (int k = 0; k < 3; k++) {
		char *at = strstr(conf, keys[k]), rest[4096];
		cr_assert(at, "%s missing", keys[k]);
		snprintf(rest, sizeof(rest), "%s", at + strlen(keys[k]));
		snprintf(at, sizeof(conf) - (size_t)(at - conf), "%s%s", ports[k], rest);
	}
	(void)tmpl;
	snprintf(path, sizeof(path), "%s/relay.conf", dr);
	carbon_write_text(path, conf);
	char *argv[] = { "carbon-c-relay", "-s", "-f", path, NULL };
	relay.pid = carbon_spawn_cmd(dr, argv);
	carbon_wait_port(&relay, "carbon-c-relay");
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", relay.port);

	int64_t t0 = time(NULL) - 100;
	enum { N = 16 };
	cr_assert_eq(run(spool, dest, 1, N, t0, &log), EXIT_OK, "%s", log);
	free(log);
	/* every metric on exactly one cache (placement is a pure function of names and instances) */
	int home[N], on_a = 0;
	long long deadline = ts_now_ms() + 10000;
	for (int i = 0; i < N; i++) {
		char m[64];
		snprintf(m, sizeof(m), "worker_%d", i);
		while (!on(&a, m) && !on(&b, m) && ts_now_ms() < deadline)
			usleep(100 * 1000);
		int ia = on(&a, m), ib = on(&b, m);
		cr_assert(ia ^ ib, "%s: on a %d, on b %d", m, ia, ib);
		home[i] = ia ? 0 : 1;
		on_a += ia;
	}
	cr_assert(on_a > 0 && on_a < N, "the hash spreads metrics over both caches (%d of %d on a)", on_a, N);
	for (int i = 0; i < N; i++) {
		char metric[64];
		snprintf(metric, sizeof(metric), "t.h.worker_%d.7.idle_pct", i);
		if (home[i] == 1)
			cr_assert_float_eq(carbon_fetch_wait(b.dir, metric, t0), 100 + i + 0.5, 1e-9, "%s on b", metric);
	}

	/* cache b down: the relay keeps delivering a's share */
	carbon_stop(&b);
	cr_assert_eq(run(spool, dest, 2, N, t0 + 10, &log), EXIT_OK, "%s", log);
	free(log);
	for (int i = 0; i < N; i++) {
		char metric[64], m[64];
		snprintf(metric, sizeof(metric), "t.h.worker_%d.7.idle_pct", i);
		snprintf(m, sizeof(m), "worker_%d", i);
		if (home[i] == 0) {
			long long want[2] = { t0, t0 + 10 };
			double got[11];
			carbon_fetch_wait_all(a.dir, metric, want, 2, got);
			cr_assert_float_eq(got[0], 100 + i + 0.5, 1e-9, "%s on a", metric);
			cr_assert_float_eq(got[10], 200 + i + 0.5, 1e-9, "%s on a with b down", metric);
		}
		cr_assert(on(&a, m) ^ on(&b, m), "%s still on exactly one cache", m);
	}
	kill(relay.pid, SIGTERM);
	kill(a.pid, SIGTERM);
	carbon_stop(&relay);
	carbon_stop(&a);
	ts_rmtree_free(dir);
}

/*
 * carbon-aggregator (as carbon-c-relay's aggregate) sums every datapoint it
 * receives for an interval: the resend of the last delivery, harmless to a
 * whisper slot, doubles the aggregate of the interval it falls in. With
 * no-resend (here from a config file) the aggregate stays right.
 */
Test(export_carbon, aggregator_counts_a_resend_twice_unless_no_resend, .timeout = 90)
{
	char *dir = ts_tmpdir("expagg"), dc[300], da[300], spool[2][300], dest[64], path[400], *log = NULL;
	snprintf(dc, sizeof(dc), "%s/cache", dir);
	snprintf(da, sizeof(da), "%s/aggregator", dir);
	mkdir(dc, 0700);
	mkdir(da, 0700);
	struct carbon_server c, a;
	carbon_start(&c, dc, carbon_free_port(), NULL);
	carbon_aggregator_start(&a, da, carbon_free_port(), c.port,
	                        "t.<host>.all.idle_pct (60) = sum t.<host>.*.7.idle_pct\n");
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", a.port);

	/* the options of the second flow, from a config file as cron would use */
	struct export_opts no;
	export_opts_init(&no);
	char err[512];
	snprintf(path, sizeof(path), "%s/export.conf", dir);
	carbon_write_text(path, "# carbon-aggregator downstream\nno-resend = yes\n");
	cr_assert_eq(export_config_load(&no, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(no.no_resend, 1);

	/* two whole intervals back: the aggregator keeps 5 of them open */
	int64_t now = time(NULL), i1 = now - now % 60 - 120, i2 = i1 + 60;
	const char *host[2] = { "resend", "noresend" };
	const struct export_opts *opt[2] = { NULL, &no };
	enum { N = 3 };
	double sum1 = N * 100 + N * 0.5 + (0 + 1 + 2), sum2 = sum1 + N * 100;   /* runs 1 and 2 */
	for (int k = 0; k < 2; k++) {
		snprintf(spool[k], sizeof(spool[k]), "%s/spool.%s", dir, host[k]);
		cr_assert_eq(run_as(opt[k], host[k], spool[k], dest, 1, N, i1 + 5, &log), EXIT_OK, "%s", log);
		free(log);
	}
	char metric[2][64];
	for (int k = 0; k < 2; k++) {
		snprintf(metric[k], sizeof(metric[k]), "t.%s.all.idle_pct", host[k]);
		cr_assert_float_eq(carbon_fetch_wait(dc, metric[k], i1), sum1, 1e-9, "%s: run 1's sum", metric[k]);
	}
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(run_as(opt[k], host[k], spool[k], dest, 2, N, i2 + 5, &log), EXIT_OK, "%s", log);
		free(log);
	}
	/* the second run's own interval arrives in both flows */
	for (int k = 0; k < 2; k++)
		cr_assert_float_eq(carbon_fetch_wait(dc, metric[k], i2), sum2, 1e-9, "%s: run 2's sum", metric[k]);
	/* the resend landed in run 1's interval again: counted twice */
	long long deadline = ts_now_ms() + 10000;
	double got = NAN;
	while (ts_now_ms() < deadline && !((got = carbon_fetch_wait(dc, metric[0], i1)) > sum1))
		usleep(200 * 1000);
	cr_assert_float_eq(got, 2 * sum1, 1e-9, "%s: the resent lines were summed again", metric[0]);
	/* a few more compute passes: no-resend's run 1 interval is left alone */
	usleep(2500 * 1000);
	cr_assert_float_eq(carbon_fetch_wait(dc, metric[1], i1), sum1, 1e-9, "%s: with no-resend", metric[1]);
	carbon_stop(&a);
	carbon_stop(&c);
	ts_rmtree_free(dir);
}
