/* node_child.c — a node server burning CPU in a named JS function (node_child.h). */
#include "support/node_child.h"
#include "support/children.h"
#include "support/support.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char node_script[] =
	"const http = require('http');\n"
	"const { performance } = require('perf_hooks');\n"
	"function burnCpuForAWhile(ms) {\n"
	"  const end = Date.now() + ms; let x = 0;\n"
	"  while (Date.now() < end) { x += Math.sqrt(x + 1); }\n"
	"  return x;\n"
	"}\n"
	"const ms = Number(process.argv[2]);\n"
	/* compiled before the first request, as a server's hot function is: a
	 * stall caught in V8's C++ below a function still interpreted is not
	 * named (docs/profile.md), and each request's call began interpreted
	 * until V8 compiled the function itself */
	"for (let i = 0; i < 200; i++) burnCpuForAWhile(1);\n"
	"const srv = http.createServer((req, res) => { burnCpuForAWhile(ms); res.end('ok'); });\n"
	/* the loop's own clock, libuv's time in its poll and out of it (ms), on a
	 * listener of its own: the burning handler does nothing else */
	"const elu = http.createServer((req, res) => {\n"
	"  const e = performance.eventLoopUtilization(); res.end(e.idle + ' ' + e.active);\n"
	"});\n"
	"srv.listen(0, '127.0.0.1', () => elu.listen(0, '127.0.0.1', () =>\n"
	"  console.log('port ' + srv.address().port + ' ' + elu.address().port)));\n";

/* One request at a time, each a 200 ms burn in the handler. */
static void *client_main(void *arg)
{
	struct node_run *r = arg;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "curl -s -m 2 -o /dev/null http://127.0.0.1:%d/", r->port);
	while (!r->stop)
		if (system(cmd) != 0)
			usleep(50000);
	return NULL;
}

void node_start(struct node_run *r, const char *dir, int burn_ms)
{
	if (system("command -v node >/dev/null 2>&1 && command -v curl >/dev/null 2>&1") != 0)
		cr_skip_test("node or curl is not installed");
	char *script = ts_path_in(dir, "burn.js");
	cr_assert_eq(ts_write_file(script, node_script, sizeof(node_script) - 1), 0);
	int out[2];
	cr_assert_eq(pipe(out), 0);
	r->pid = tc_fork();   /* a test killed on its timeout leaks no node */
	if (r->pid == 0) {
		dup2(out[1], 1);
		close(out[0]);
		if (chdir(dir) != 0)   /* V8 leaves its isolate log in the cwd */
			_exit(126);
		char ms[16];
		snprintf(ms, sizeof(ms), "%d", burn_ms);
		/* interpreted frames named too: a stall caught before V8 compiled
		 * the burn ran inside its interpreter's trampoline, unnamed */
		execlp("node", "node", "--perf-basic-prof", "--interpreted-frames-native-stack", script, ms, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	FILE *f = fdopen(out[0], "r");
	char line[64] = "";
	cr_assert(fgets(line, sizeof(line), f) && sscanf(line, "port %d %d", &r->port, &r->elu_port) == 2, "node said: %s", line);
	fclose(f);
	free(script);
	cr_assert_eq(pthread_create(&r->client, NULL, client_main, r), 0);
	usleep(500000);   /* warm: its first requests served */
}

int node_elu(const struct node_run *r, double *idle_ms, double *active_ms)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "curl -s -m 5 http://127.0.0.1:%d/", r->elu_port);
	FILE *f = popen(cmd, "r");
	if (!f)
		return -1;
	int n = fscanf(f, "%lf %lf", idle_ms, active_ms);
	return pclose(f) == 0 && n == 2 ? 0 : -1;
}

void node_stop(struct node_run *r)
{
	r->stop = 1;
	pthread_join(r->client, NULL);
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	char map[64];
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)r->pid);
	unlink(map);
}

pid_t node_pbkdf2_start(void)
{
	if (system("command -v node >/dev/null 2>&1") != 0)
		cr_skip_test("node is not installed");
	static const char script[] =
		"const c = require('crypto');"
		"function go() { c.pbkdf2('pw', 'salt', 100000, 64, 'sha512', go); }"
		"for (let i = 0; i < 8; i++) go();"
		"setTimeout(() => process.exit(0), 30000);";
	pid_t pid = tc_fork();
	if (pid == 0) {
		setenv("UV_THREADPOOL_SIZE", "2", 1);
		execlp("node", "node", "-e", script, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* A thread's state letter (R, S, ...) from its stat, 0 when gone. */
static char thread_state(pid_t pid, const char *tid)
{
	char path[96], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", (int)pid, tid);
	const char *fields = ts_stat_fields(path, buf, sizeof(buf));
	return fields ? fields[0] : 0;
}

/* 1 when pid's main thread sleeps and two others run or wait for a CPU. */
static int settled_once(pid_t pid)
{
	char dir[64], main_tid[16];
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	snprintf(main_tid, sizeof(main_tid), "%d", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int running = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strcmp(de->d_name, main_tid) != 0 && thread_state(pid, de->d_name) == 'R')
			running++;
	closedir(d);
	return running >= 2 && thread_state(pid, main_tid) == 'S';
}

int node_pbkdf2_settled(pid_t pid)
{
	for (int i = 0, seen = 0; i < 50; i++) {
		seen = settled_once(pid) ? seen + 1 : 0;
		if (seen == 2)
			return 0;
		usleep(100 * 1000);
	}
	return -ETIMEDOUT;
}
