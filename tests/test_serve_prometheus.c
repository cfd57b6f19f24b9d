/* A real Prometheus server scrapes `loopstat serve` every second: its query API answers a worker's idle ratio, which agrees with `loopstat list --json` within their intervals, and rate() of the ops counter is positive. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "support/carbon.h"
#include "support/children.h"
#include "support/serve_child.h"
#include "support/support.h"

#define PROMETHEUS "/usr/bin/prometheus"
#define WINDOW 2        /* s: serve's window and interval, list's duration */
#define WINDOW_ARG "2"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("serveprom");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(serve_prometheus, .init = setup, .fini = teardown, .timeout = 90);

/* prometheus with a 1-s scrape of 127.0.0.1:target, its TSDB and log in dir. */
static pid_t start_prometheus(int target, int port)
{
	char conf[400], data[400], logf[400], listen[64], cfg[512];
	snprintf(conf, sizeof(conf), "%s/prometheus.yml", dir);
	snprintf(data, sizeof(data), "%s/tsdb", dir);
	snprintf(logf, sizeof(logf), "%s/prometheus.log", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	int n = snprintf(cfg, sizeof(cfg),
	                 "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
	                 "scrape_configs:\n  - job_name: loopstat\n    static_configs:\n"
	                 "      - targets: ['127.0.0.1:%d']\n", target);
	cr_assert_eq(ts_write_file(conf, cfg, (size_t)n), 0);
	char a1[450], a2[450], a3[100];
	snprintf(a1, sizeof(a1), "--config.file=%s", conf);
	snprintf(a2, sizeof(a2), "--storage.tsdb.path=%s", data);
	snprintf(a3, sizeof(a3), "--web.listen-address=%s", listen);
	pid_t pid = tc_fork();
	if (pid == 0) {
		int fd = open(logf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		execl(PROMETHEUS, PROMETHEUS, a1, a2, a3, "--log.level=warn", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void stop_prometheus(pid_t pid)
{
	kill(pid, SIGTERM);
	for (int i = 0; i < 100 && waitpid(pid, NULL, WNOHANG) == 0; i++)
		usleep(50000);
	tc_kill(pid);
}

static char *prometheus_log(void)
{
	char logf[400];
	snprintf(logf, sizeof(logf), "%s/prometheus.log", dir);
	return ts_read_file(logf);
}

/* %-escapes every byte of s but [A-Za-z0-9_.]. */
static void urlencode(const char *s, char *out, size_t len)
{
	size_t j = 0;
	for (; *s && j + 4 < len; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.')
			out[j++] = (char)c;
		else
			j += (size_t)snprintf(out + j, len - j, "%%%02X", c);
	}
	out[j] = '\0';
}

/* The value of the query's first series at unix time `at` (0: now), or NaN
 * when it has none yet. */
static double instant(int port, const char *query, double at)
{
	char q[600], path[900];
	urlencode(query, q, sizeof(q));
	if (at > 0)
		snprintf(path, sizeof(path), "/api/v1/query?query=%s&time=%.3f", q, at);
	else
		snprintf(path, sizeof(path), "/api/v1/query?query=%s", q);
	struct http_response r;
	if (http_get(port, path, NULL, 3000, &r) < 0)
		return NAN;   /* not listening yet */
	double v = NAN;
	json_object *j = json_tokener_parse(r.body), *data, *result, *value;
	if (r.status == 200 && j && json_object_object_get_ex(j, "data", &data) &&
	    json_object_object_get_ex(data, "result", &result) && json_object_array_length(result) > 0 &&
	    json_object_object_get_ex(json_object_array_get_idx(result, 0), "value", &value))
		v = strtod(json_object_get_string(json_object_array_get_idx(value, 1)), NULL);
	json_object_put(j);
	http_response_free(&r);
	return v;
}

/* The query's value once it has one, within timeout_ms. */
static double wait_for(int port, const char *query, int timeout_ms)
{
	long long deadline = ts_now_ms() + timeout_ms;
	double v;
	while (isnan(v = instant(port, query, 0))) {
		if (ts_now_ms() > deadline) {
			char *log = prometheus_log();
			cr_assert_fail("Prometheus has no %s after %d ms; its log:\n%s", query, timeout_ms, log);
		}
		usleep(200000);
	}
	return v;
}

static double wall_s(void)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	return (double)now.tv_sec + now.tv_nsec / 1e9;
}

/* Polls serve's /metrics every 20 ms until its body is not *last (NULL:
 * none yet); returns the wall time it changed, within 20 ms, and keeps the
 * new body in *last. */
static double wait_publication(int port, char **last, int timeout_ms)
{
	long long deadline = ts_now_ms() + timeout_ms;
	for (;;) {
		struct http_response r;
		cr_assert_eq(http_get(port, "/metrics", NULL, 2000, &r), 0);
		if (r.status == 200 && (!*last || strcmp(*last, r.body))) {
			double t = wall_s();
			free(*last);
			*last = strdup(r.body);
			http_response_free(&r);
			return t;
		}
		http_response_free(&r);
		cr_assert_lt(ts_now_ms(), deadline, "serve published nothing new in %d ms", timeout_ms);
		usleep(20000);
	}
}

/* The value serve published in body for metric's series of pid. */
static double published(const char *body, const char *metric, pid_t pid)
{
	char pidl[32];
	snprintf(pidl, sizeof(pidl), "pid=\"%d\"", (int)pid);
	size_t ml = strlen(metric);
	for (const char *l = body; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *eol = strchr(l, '\n'), *brace = strchr(l, '}');
		if (!strncmp(l, metric, ml) && l[ml] == '{' && brace && (!eol || brace < eol)) {
			const char *at = strstr(l, pidl);
			if (at && at < brace)
				return strtod(brace + 1, NULL);
		}
	}
	cr_assert_fail("serve published no %s of pid %d:\n%s", metric, (int)pid, body);
	return NAN;
}

static double json_number(json_object *o, const char *key)
{
	json_object *v;
	cr_assert(json_object_object_get_ex(o, key, &v), "no %s in %s", key, json_object_to_json_string(o));
	return json_object_get_double(v);
}

Test(serve_prometheus, a_real_prometheus_answers_the_idle_ratio_list_measures)
{
	const char *dargs[] = { "--idle", "0.5", "--period-ms", "50", "--seconds", "60", "--plain", NULL };
	int plain_out;
	pid_t plain = tc_spawn_example("duty_cycle", dargs, &plain_out);
	const char *cargs[] = { "-s", "60", "-b", "20", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	char pids[64];
	snprintf(pids, sizeof(pids), "%d,%d", (int)plain, (int)inst);
	struct serve_child c;
	const char *args[] = { "--interval", WINDOW_ARG, "--window", WINDOW_ARG, "--rate", "500", "--host", "h", "-p", pids, NULL };
	sc_start(&c, args);
	int pport = carbon_free_port();
	pid_t prom = start_prometheus(c.port, pport);

	char idle_q[200], ci_q[200], rate_q[200];
	snprintf(idle_q, sizeof(idle_q), "loopstat_worker_idle_ratio{job=\"loopstat\",pid=\"%d\",name=\"duty_cycle\"}",
	         (int)plain);
	snprintf(ci_q, sizeof(ci_q), "loopstat_worker_idle_ci95_ratio{pid=\"%d\"}", (int)plain);
	snprintf(rate_q, sizeof(rate_q), "rate(loopstat_worker_ops_total{pid=\"%d\",service=\"counters\"}[10s])",
	         (int)inst);
	wait_for(pport, idle_q, 30000);
	cr_assert(instant(pport, "up{job=\"loopstat\"}", 0) == 1, "the scrape target is not up");
	/* a counter Prometheus can take the rate of: the raw counter, growing
	 * from one publication to the next */
	long long deadline = ts_now_ms() + 15000;
	double ops_rate;
	while (!((ops_rate = instant(pport, rate_q, 0)) > 0) && ts_now_ms() < deadline)
		usleep(250000);
	cr_assert_gt(ops_rate, 0, "rate(loopstat_worker_ops_total) is %g after 15 s", ops_rate);

	/* list over the window of serve's next publication: started right
	 * after one (serve publishes the last WINDOW s every WINDOW s). What
	 * Prometheus holds for that publication is what serve published in it,
	 * to the last digit; serve's and list's figures each agree with the
	 * worker's own clock, printed as it ends. */
	char *body = NULL, cmd[300], *out;
	wait_publication(c.port, &body, 10000);
	double p_prev = wait_publication(c.port, &body, 10000);
	snprintf(cmd, sizeof(cmd), "'%s' list --json --duration %d --rate 500 -p %d", ts_loopstat_bin(), WINDOW, (int)plain);
	char *sh[] = { "/bin/sh", "-c", cmd, NULL };
	double t_start = wall_s();
	cr_assert_eq(ts_run(sh, &out, 15000), 0, "%s", out);
	double t_end = wall_s();
	double p_next = wait_publication(c.port, &body, 10000);
	double d = fmax(fabs(t_start - (p_next - WINDOW)), fabs(t_end - p_next));
	/* consecutive publications: list ran over the window of the second */
	cr_assert_lt(p_next - p_prev, 1.5 * WINDOW, "serve published at %.3f and %.3f: one missed in between", p_prev,
	             p_next);
	double serve_idle = published(body, "loopstat_worker_idle_ratio", plain);
	double serve_wait = published(body, "loopstat_worker_cpu_wait_ratio", plain);
	free(body);
	json_object *j = json_tokener_parse(out), *workers;
	cr_assert(j && json_object_object_get_ex(j, "workers", &workers) && json_object_array_length(workers) == 1, "%s",
	          out);
	json_object *w = json_object_array_get_idx(workers, 0);
	double list_idle = json_number(w, "idle_pct") / 100, list_ci = json_number(w, "idle_ci95") / 100;
	double list_wait = json_number(w, "cpu_wait_pct") / 100;
	/* the first scrape after p_next holds its body, and no later one is in yet */
	while (wall_s() < p_next + 2.1)
		usleep(50000);
	double prom_idle = instant(pport, idle_q, p_next + 1.05), prom_ci = instant(pport, ci_q, p_next + 1.05);
	cr_assert(!isnan(prom_idle) && !isnan(prom_ci), "Prometheus lost the series");
	cr_assert(prom_idle > 0 && prom_idle < 1, "a 0..1 ratio: %g", prom_idle);
	cr_assert_leq(fabs(prom_idle - serve_idle), 1e-12, "Prometheus holds idle %.17g, serve published %.17g", prom_idle,
		      serve_idle);
	kill(plain, SIGTERM);
	double self = tc_read_self_idle(plain_out, 5000) / 100;
	close(plain_out);
	cr_log_info("serve idle %.4f (cpu wait %.4f), list %.4f ± %.4f (cpu wait %.4f), windows %.3f s apart; "
		    "the worker's own clock %.4f", serve_idle, serve_wait, list_idle, list_ci, list_wait, d, self);
	cr_assert(ts_idle_agrees(serve_idle * 100, self * 100, serve_wait * 100, 3),
		  "serve's idle %.4f (cpu wait %.4f) against the worker's own clock %.4f", serve_idle, serve_wait, self);
	cr_assert(ts_idle_agrees(list_idle * 100, self * 100, list_wait * 100, 3),
		  "list's idle %.4f (cpu wait %.4f) against the worker's own clock %.4f", list_idle, list_wait, self);
	json_object_put(j);
	free(out);

	stop_prometheus(prom);
	cr_assert_eq(sc_stop(&c, SIGTERM, 3000, NULL), 0);
	tc_kill(plain);
	tc_kill(inst);
}
