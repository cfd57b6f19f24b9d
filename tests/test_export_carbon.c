/* Export into real servers: a carbon-cache on a free loopback port (read back with whisper-fetch, through a restart), and two caches behind a real carbon-c-relay with a consistent-hash cluster. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <math.h>

#include "exitcodes.h"
#include "export_run.h"
#include "support/support.h"

struct server {
	pid_t pid;
	int port;
	char dir[320];
};

/* A loopback port nobody listens on, never one this test already took. */
static int free_port(void)
{
	static int taken[16], ntaken;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t sl = sizeof(a);
		cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
		getsockname(fd, (struct sockaddr *)&a, &sl);
		close(fd);
		int port = ntohs(a.sin_port), dup = 0;
		for (int i = 0; i < ntaken; i++)
			dup |= taken[i] == port;
		if (dup)
			continue;
		if (ntaken < 16)
			taken[ntaken++] = port;
		return port;
	}
}

static int port_open(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* Runs argv in the background, output to dir/out, killed if the test dies. */
static pid_t spawn(const char *dir, char *const argv[])
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		char out[300];
		snprintf(out, sizeof(out), "%s/out", dir);
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void wait_port(struct server *s, const char *what)
{
	long long deadline = ts_now_ms() + 15000;
	while (!port_open(s->port)) {
		int st;
		cr_assert_eq(waitpid(s->pid, &st, WNOHANG), 0, "%s exited early, see %s/out", what, s->dir);
		cr_assert_lt(ts_now_ms(), deadline, "%s did not listen on %d", what, s->port);
		usleep(50 * 1000);
	}
}

static void server_stop(struct server *s)
{
	if (s->pid <= 0)
		return;
	kill(s->pid, SIGTERM);
	long long deadline = ts_now_ms() + 5000;
	int st;
	while (waitpid(s->pid, &st, WNOHANG) == 0) {
		if (ts_now_ms() > deadline) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &st, 0);
			break;
		}
		usleep(20 * 1000);
	}
	s->pid = 0;
}

static void write_text(const char *path, const char *text)
{
	cr_assert_eq(ts_write_file(path, text, strlen(text)), 0, "%s", path);
}

/* A carbon-cache in the foreground with its own conf and storage under dir. */
static void carbon_spawn(struct server *s, const char *dir, int port)
{
	char path[512], conf[2048];
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->port = port;
	snprintf(path, sizeof(path), "%s/conf", dir);
	mkdir(path, 0700);
	snprintf(conf, sizeof(conf),
	         "[cache]\nSTORAGE_DIR = %s/storage\nLOCAL_DATA_DIR = %s/storage/whisper\n"
	         "WHITELISTS_DIR = %s/storage/lists\nCONF_DIR = %s/conf\nLOG_DIR = %s/log\nPID_DIR = %s\n"
	         "USER =\nENABLE_LOGROTATION = False\nENABLE_TAGS = False\nMAX_CACHE_SIZE = inf\n"
	         "MAX_UPDATES_PER_SECOND = 100000\nMAX_CREATES_PER_MINUTE = inf\n"
	         "LINE_RECEIVER_INTERFACE = 127.0.0.1\nLINE_RECEIVER_PORT = %d\nENABLE_UDP_LISTENER = False\n"
	         "PICKLE_RECEIVER_INTERFACE = 127.0.0.1\nPICKLE_RECEIVER_PORT = 0\n"
	         "CACHE_QUERY_INTERFACE = 127.0.0.1\nCACHE_QUERY_PORT = 0\n",
	         dir, dir, dir, dir, dir, dir, port);
	snprintf(path, sizeof(path), "%s/conf/carbon.conf", dir);
	write_text(path, conf);
	snprintf(path, sizeof(path), "%s/conf/storage-schemas.conf", dir);
	write_text(path, "[all]\npattern = .*\nretentions = 1s:2h\n");
	char cfg[600], pid[600], logdir[600];
	snprintf(cfg, sizeof(cfg), "--config=%s/conf/carbon.conf", dir);
	snprintf(pid, sizeof(pid), "--pidfile=%s/carbon.pid", dir);
	snprintf(logdir, sizeof(logdir), "--logdir=%s/log", dir);
	char *argv[] = { "carbon-cache", "--nodaemon", cfg, pid, logdir, "start", NULL };
	s->pid = spawn(dir, argv);
}

static void carbon_start(struct server *s, const char *dir, int port)
{
	carbon_spawn(s, dir, port);
	wait_port(s, "carbon-cache");
}

/* whisper-fetch of metric path a.b.c over (from, until]: got[k] is the value
 * at from + 1 + k, NAN where whisper has none. */
static void fetch_range(const char *dir, const char *metric, long long from, long long until, double *got)
{
	for (long long k = 0; k < until - from; k++)
		got[k] = NAN;
	char file[1024], f[64], u[64];
	snprintf(file, sizeof(file), "%s/storage/whisper/%s.wsp", dir, metric);
	for (char *c = file + strlen(dir) + 17; *c; c++)
		if (*c == '.' && strcmp(c, ".wsp"))
			*c = '/';
	if (access(file, R_OK) != 0)
		return;
	snprintf(f, sizeof(f), "--from=%lld", from);
	snprintf(u, sizeof(u), "--until=%lld", until);
	char *argv[] = { "/usr/bin/whisper-fetch", f, u, file, NULL }, *out = NULL;
	if (ts_run(argv, &out, 10000) == 0 && out) {
		long long t;
		double x;
		for (char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
			if (sscanf(p, "%lld\t%lf", &t, &x) == 2 && t > from && t <= until)
				got[t - from - 1] = x;
	}
	free(out);
}

/* Waits (bounded) until carbon's writer has flushed metric at every one of
 * want[0..n) (ascending); got[] is the range want[0]..want[n-1]. */
static void fetch_wait_all(const char *dir, const char *metric, const long long *want, int n, double *got)
{
	long long deadline = ts_now_ms() + 8000;
	for (;;) {
		fetch_range(dir, metric, want[0] - 1, want[n - 1], got);
		int missing = 0;
		for (int i = 0; i < n; i++)
			missing |= isnan(got[want[i] - want[0]]);
		if (!missing || ts_now_ms() > deadline)
			return;
		usleep(100 * 1000);
	}
}

static double fetch_wait(const char *dir, const char *metric, long long ts)
{
	double v;
	fetch_wait_all(dir, metric, &ts, 1, &v);
	return v;
}

static int run(const char *spool, const char *dest, int run_id, int n, int64_t now, char **log)
{
	struct export_opts o;
	export_opts_init(&o);
	snprintf(o.spool, sizeof(o.spool), "%s", spool);
	snprintf(o.graphite, sizeof(o.graphite), "%s", dest);
	snprintf(o.prefix, sizeof(o.prefix), "t");
	o.timeout_s = 2;
	struct export_point *pts = calloc((size_t)n, sizeof(*pts));
	char (*names)[32] = calloc((size_t)n, 32);
	for (int i = 0; i < n; i++) {
		snprintf(names[i], 32, "worker %d", i);   /* sanitised to worker_<i> */
		pts[i] = (struct export_point){ .prefix = "t", .host = "h", .process = names[i], .pid = 7, .tid = -1,
		                                .metric = "idle_pct", .value = run_id * 100 + i + 0.5, .ts = now };
	}
	size_t len = 0;
	FILE *f = open_memstream(log, &len);
	struct export_result r;
	int code = export_run(&o, pts, (size_t)n, now, "h", stdout, f, &r);
	fclose(f);
	free(pts);
	free(names);
	return code;
}

Test(export_carbon, delivered_read_back_and_through_a_restart, .timeout = 60)
{
	char *dir = ts_tmpdir("expcarbon"), spool[300], dest[64], metric[64], *log = NULL;
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	struct server c;
	int port = free_port();
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", port);
	carbon_start(&c, dir, port);
	int64_t t0 = time(NULL) - 100;

	cr_assert_eq(run(spool, dest, 1, 5, t0, &log), EXIT_OK, "%s", log);
	free(log);
	for (int i = 0; i < 5; i++) {
		snprintf(metric, sizeof(metric), "t.h.worker_%d.7.idle_pct", i);
		cr_assert_float_eq(fetch_wait(dir, metric, t0), 100 + i + 0.5, 1e-9, "%s", metric);
	}
	/* the exporter's own figures landed too */
	cr_assert_float_eq(fetch_wait(dir, "t.h.loopstat.export.spooled", t0), 5, 1e-9);

	/* carbon down: deferred, spooled with the original timestamp */
	server_stop(&c);
	cr_assert_eq(run(spool, dest, 2, 5, t0 + 10, &log), EXIT_DEFERRED, "%s", log);
	cr_assert(strstr(log, "deferred"), "%s", log);
	free(log);
	/* carbon back: the next run delivers the backlog first, then its own */
	carbon_start(&c, dir, port);
	cr_assert_eq(run(spool, dest, 3, 5, t0 + 20, &log), EXIT_OK, "%s", log);
	free(log);
	for (int i = 0; i < 5; i++) {
		snprintf(metric, sizeof(metric), "t.h.worker_%d.7.idle_pct", i);
		long long want[3] = { t0, t0 + 10, t0 + 20 };
		double got[21];
		fetch_wait_all(dir, metric, want, 3, got);
		cr_assert_float_eq(got[0], 100 + i + 0.5, 1e-9, "%s at t0", metric);
		cr_assert_float_eq(got[10], 200 + i + 0.5, 1e-9, "%s at t0+10 (spooled while carbon was down)", metric);
		cr_assert_float_eq(got[20], 300 + i + 0.5, 1e-9, "%s at t0+20", metric);
		for (int k = 0; k < 21; k++)
			cr_assert(k % 10 == 0 || isnan(got[k]), "%s: nothing invented at t0+%d", metric, k);
	}
	server_stop(&c);
	ts_rmtree_free(dir);
}

static int on(const struct server *s, const char *metric)
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
	struct server a, b, relay = { 0 };
	/* python starts slowly: both caches at once */
	carbon_spawn(&a, da, free_port());
	carbon_spawn(&b, db, free_port());
	wait_port(&a, "carbon-cache a");
	wait_port(&b, "carbon-cache b");

	/* the tested config, ports filled in */
	char *tmpl = NULL, conf[4096], path[400];
	FILE *f = fopen("tests/data/carbon-c-relay.conf", "re");
	cr_assert(f, "tests/data/carbon-c-relay.conf: %s (run from the tree)", strerror(errno));
	size_t n = fread(conf, 1, sizeof(conf) - 1, f);
	fclose(f);
	conf[n] = '\0';
	relay.port = free_port();
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
	write_text(path, conf);
	char *argv[] = { "carbon-c-relay", "-s", "-f", path, NULL };
	relay.pid = spawn(dr, argv);
	wait_port(&relay, "carbon-c-relay");
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
			cr_assert_float_eq(fetch_wait(b.dir, metric, t0), 100 + i + 0.5, 1e-9, "%s on b", metric);
	}

	/* cache b down: the relay keeps delivering a's share */
	server_stop(&b);
	cr_assert_eq(run(spool, dest, 2, N, t0 + 10, &log), EXIT_OK, "%s", log);
	free(log);
	for (int i = 0; i < N; i++) {
		char metric[64], m[64];
		snprintf(metric, sizeof(metric), "t.h.worker_%d.7.idle_pct", i);
		snprintf(m, sizeof(m), "worker_%d", i);
		if (home[i] == 0) {
			long long want[2] = { t0, t0 + 10 };
			double got[11];
			fetch_wait_all(a.dir, metric, want, 2, got);
			cr_assert_float_eq(got[0], 100 + i + 0.5, 1e-9, "%s on a", metric);
			cr_assert_float_eq(got[10], 200 + i + 0.5, 1e-9, "%s on a with b down", metric);
		}
		cr_assert(on(&a, m) ^ on(&b, m), "%s still on exactly one cache", m);
	}
	kill(relay.pid, SIGTERM);
	kill(a.pid, SIGTERM);
	server_stop(&relay);
	server_stop(&a);
	ts_rmtree_free(dir);
}
