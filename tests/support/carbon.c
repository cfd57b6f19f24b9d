/*
 * carbon.c — real Graphite servers for the export tests (carbon.h).
 */
#include "carbon.h"
#include "support.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A loopback port nobody listens on, never one this test already took. */
int carbon_free_port(void)
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

int carbon_port_open(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

/* Runs argv in the background, output to dir/out, killed if the test dies. */
pid_t carbon_spawn_cmd(const char *dir, char *const argv[])
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

void carbon_wait_port(struct carbon_server *s, const char *what)
{
	long long deadline = ts_now_ms() + 15000;
	while (!carbon_port_open(s->port)) {
		int st;
		cr_assert_eq(waitpid(s->pid, &st, WNOHANG), 0, "%s exited early, see %s/out", what, s->dir);
		cr_assert_lt(ts_now_ms(), deadline, "%s did not listen on %d", what, s->port);
		usleep(50 * 1000);
	}
}

void carbon_stop(struct carbon_server *s)
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

void carbon_write_text(const char *path, const char *text)
{
	cr_assert_eq(ts_write_file(path, text, strlen(text)), 0, "%s", path);
}

/* A carbon-cache in the foreground with its own conf and storage under dir. */
void carbon_spawn(struct carbon_server *s, const char *dir, int port, const char *retentions)
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
	carbon_write_text(path, conf);
	snprintf(path, sizeof(path), "%s/conf/storage-schemas.conf", dir);
	char schema[256];
	snprintf(schema, sizeof(schema), "[all]\npattern = .*\nretentions = %s\n", retentions ? retentions : "1s:2h");
	carbon_write_text(path, schema);
	char cfg[600], pid[600], logdir[600];
	snprintf(cfg, sizeof(cfg), "--config=%s/conf/carbon.conf", dir);
	snprintf(pid, sizeof(pid), "--pidfile=%s/carbon.pid", dir);
	snprintf(logdir, sizeof(logdir), "--logdir=%s/log", dir);
	char *argv[] = { "carbon-cache", "--nodaemon", cfg, pid, logdir, "start", NULL };
	s->pid = carbon_spawn_cmd(dir, argv);
}

void carbon_start(struct carbon_server *s, const char *dir, int port, const char *retentions)
{
	carbon_spawn(s, dir, port, retentions);
	carbon_wait_port(s, "carbon-cache");
}

void carbon_aggregator_start(struct carbon_server *s, const char *dir, int port, int cache_port, const char *rules)
{
	char path[512], conf[2048];
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->port = port;
	snprintf(path, sizeof(path), "%s/conf", dir);
	mkdir(path, 0700);
	snprintf(conf, sizeof(conf),
	         "[aggregator]\nSTORAGE_DIR = %s/storage\nLOCAL_DATA_DIR = %s/storage/whisper\nCONF_DIR = %s/conf\n"
	         "LOG_DIR = %s/log\nPID_DIR = %s\nUSER =\nENABLE_LOGROTATION = False\n"
	         "LINE_RECEIVER_INTERFACE = 127.0.0.1\nLINE_RECEIVER_PORT = %d\nENABLE_UDP_LISTENER = False\n"
	         "PICKLE_RECEIVER_INTERFACE = 127.0.0.1\nPICKLE_RECEIVER_PORT = 0\n"
	         "DESTINATIONS = 127.0.0.1:%d\nDESTINATION_PROTOCOL = line\nFORWARD_ALL = False\n"
	         "WRITE_BACK_FREQUENCY = 1\n",
	         dir, dir, dir, dir, dir, port, cache_port);
	snprintf(path, sizeof(path), "%s/conf/carbon.conf", dir);
	carbon_write_text(path, conf);
	snprintf(path, sizeof(path), "%s/conf/storage-schemas.conf", dir);
	carbon_write_text(path, "[all]\npattern = .*\nretentions = 1s:2h\n");
	snprintf(path, sizeof(path), "%s/conf/aggregation-rules.conf", dir);
	carbon_write_text(path, rules);
	char cfg[600], pid[600], logdir[600], rl[600];
	snprintf(cfg, sizeof(cfg), "--config=%s/conf/carbon.conf", dir);
	snprintf(pid, sizeof(pid), "--pidfile=%s/aggregator.pid", dir);
	snprintf(logdir, sizeof(logdir), "--logdir=%s/log", dir);
	snprintf(rl, sizeof(rl), "--rules=%s", path);
	char *argv[] = { "carbon-aggregator", "--nodaemon", cfg, pid, logdir, rl, "start", NULL };
	s->pid = carbon_spawn_cmd(dir, argv);
	carbon_wait_port(s, "carbon-aggregator");
}

/* whisper-fetch of metric path a.b.c over (from, until]: got[k] is the value
 * at from + 1 + k, NAN where whisper has none. */
void carbon_fetch_range(const char *dir, const char *metric, long long from, long long until, double *got)
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
void carbon_fetch_wait_all(const char *dir, const char *metric, const long long *want, int n, double *got)
{
	long long deadline = ts_now_ms() + 8000;
	for (;;) {
		carbon_fetch_range(dir, metric, want[0] - 1, want[n - 1], got);
		int missing = 0;
		for (int i = 0; i < n; i++)
			missing |= isnan(got[want[i] - want[0]]);
		if (!missing || ts_now_ms() > deadline)
			return;
		usleep(100 * 1000);
	}
}

double carbon_fetch_wait(const char *dir, const char *metric, long long ts)
{
	double v;
	carbon_fetch_wait_all(dir, metric, &ts, 1, &v);
	return v;
}

