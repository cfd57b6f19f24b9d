/* An unmodified server's ops rate and headroom under --source bpf: redis under redis-benchmark, from its poll's returned events. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_bpf.h"
#include "support/carbon.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

TestSuite(bpf_events, .timeout = 40);

/* redis' own count of the commands it processed (INFO stats). */
static double commands(const char *port)
{
	char *argv[] = { "/usr/bin/redis-cli", "-p", (char *)port, "info", "stats", NULL }, *out = NULL;
	int rc = ts_run(argv, &out, 5000);
	cr_assert_eq(rc, 0, "redis-cli: %s", out);
	const char *l = strstr(out, "total_commands_processed:");
	cr_assert(l, "%s", out);
	double n = atof(l + strlen("total_commands_processed:"));
	free(out);
	return n;
}

/* The events redis' epoll_wait returned give an ops rate about its own
 * commands' rate (one request per readable client, no pipelining), and a
 * headroom above it: no instrumentation, no sampling. */
Test(bpf_events, redis_ops_and_headroom_from_poll_events)
{
	const char *need[] = { "/usr/bin/redis-server", "/usr/bin/redis-benchmark", "/usr/bin/redis-cli" };
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (access(need[i], X_OK) != 0)
			cr_skip_test("%s is not installed (redis-server, redis-tools)", need[i]);
	char why[256];
	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("bpf unavailable: %s", why);
	char port[16], *dir = ts_tmpdir("bpfevents");
	snprintf(port, sizeof(port), "%d", carbon_free_port());
	char *srv[] = { "/usr/bin/redis-server", "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, NULL };
	pid_t redis = tc_spawn_quiet(srv, NULL);
	tc_wait_listen(atoi(port), "redis-server");
	char *bench[] = { "/usr/bin/redis-benchmark", "-p", port, "-c", "4", "-n", "100000000", "-t", "get,set", "-q", NULL };
	pid_t load = tc_spawn_quiet(bench, NULL);
	usleep(500 * 1000);
	char p[16], *text, *outf = ts_path_in(dir, "list.json");
	snprintf(p, sizeof(p), "%d", (int)redis);
	char *argv[] = { "/bin/sh", "-c", "exec \"$0\" list --json --source bpf --duration 3 -p \"$1\" >\"$2\"",
			 (char *)ts_loopstat_bin(), p, outf, NULL };
	/* redis' own count, read every 0.1 s while list runs: its rate over
	 * list's last 3 s, the seconds list measured (the load swings on a
	 * shared machine: a wider window would not be the same rate) */
	struct { double t, n; } at[200];
	int k = 0, st, rc;
	pid_t ls = tc_spawn_quiet(argv, NULL);
	while ((rc = waitpid(ls, &st, WNOHANG)) == 0 && k < 199) {
		at[k].t = (double)ts_mono_ns() / 1e9;
		at[k++].n = commands(port);
		usleep(100 * 1000);
	}
	if (rc == 0)
		waitpid(ls, &st, 0);
	at[k].t = (double)ts_mono_ns() / 1e9;
	at[k].n = commands(port);
	int lo = k;
	while (lo > 0 && at[lo - 1].t >= at[k].t - 3)
		lo--;
	double own = (at[k].n - at[lo].n) / (at[k].t - at[lo].t);
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	text = ts_read_file(outf);
	free(outf);
	tc_kill(load);
	tc_kill(redis);
	ts_rmtree_free(dir);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, text);
	json_object *doc = json_tokener_parse(text);
	cr_assert(doc, "not JSON: %s", text);
	cr_assert_str_eq(tj_str(doc, "source"), "bpf", "%s", text);
	json_object *w = tj_worker(doc, redis, redis), *ex = NULL;
	cr_assert(json_object_object_get_ex(w, "exact", &ex) && ex, "no exact figures: %s", text);
	double ops = tj_num(ex, "ops_per_s"), head = tj_num(ex, "headroom_ops_per_s");
	cr_expect_gt(own, 1000, "redis-benchmark drove %.0f commands/s", own);
	cr_expect(ops >= 0.7 * own && ops <= 1.3 * own, "ops_per_s %.0f from poll events, redis' own %.0f/s: %s", ops,
		  own, text);
	cr_expect(isfinite(head) && head > ops, "headroom_ops_per_s %.0f over ops %.0f: %s", head, ops, text);
	json_object_put(doc);
	free(text);
}
