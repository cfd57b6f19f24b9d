/* Pool grouping is stable: node's libuv threadpool of 2 saturated by pbkdf2 reads as one pool of 2 and limit "pool" in each of 10 fresh runs, and its idle second loop (a helper) is given no pool figure and no limit "pool". */
#include <criterion/criterion.h>

#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/children.h"
#include "support/list_json.h"
#include "support/node_child.h"
#include "support/support.h"

#define RUNS 10

/* Its pools: how many, and whether one of them is the pool of 2, saturated. */
static void read_pools(json_object *w, int *npools, int *pool_of_2)
{
	json_object *ps = tj_pools(w);
	*npools = 0;
	*pool_of_2 = 0;
	for (size_t i = 0; i < json_object_array_length(ps); i++) {
		json_object *p = json_object_array_get_idx(ps, i);
		double busy = tj_num(p, "busy_pct");
		/* V8's own worker threads wait, idle, on a condvar of theirs: only busy pools count */
		if (isnan(busy) || busy < 50)
			continue;
		(*npools)++;
		*pool_of_2 |= tj_num(p, "nthreads") == 2 && busy >= 80;
	}
}

/* Runs first to first + RUNS / 2, each a fresh node. */
static void stable_runs(int first)
{
	int good = 0, helpers_seen = 0;
	for (int run = first; run < first + RUNS / 2; run++) {
		pid_t pid = node_pbkdf2_start();
		cr_assert_eq(node_pbkdf2_settled(pid), 0, "node %d: its pool never ran, or its main thread never slept", (int)pid);
		json_object *doc = tj_list_pid(pid, "4");
		json_object *w = tj_worker(doc, pid, pid), *ws;
		int npools, pool_of_2;
		read_pools(w, &npools, &pool_of_2);
		int ok = npools == 1 && pool_of_2 && tj_num(w, "pool_threads") == 2 && !strcmp(tj_str(w, "limit"), "pool");
		cr_log_info("run %d: %s: %d busy pools, pool_threads %g busy %.1f%% limit %s (%s) pools %s\n", run + 1,
			    ok ? "one pool of 2" : "UNSTABLE", npools, tj_num(w, "pool_threads"), tj_num(w, "pool_busy_pct"),
			    tj_str(w, "limit"), tj_str(w, "limit_reason"),
			    json_object_to_json_string(json_object_object_get(w, "pools")));
		good += ok;
		/* node's second loop: a helper, never given the pool's figures */
		cr_assert(json_object_object_get_ex(doc, "workers", &ws));
		for (size_t i = 0; i < json_object_array_length(ws); i++) {
			json_object *o = json_object_array_get_idx(ws, i);
			if (tj_num(o, "pid") != pid || strcmp(tj_str(o, "role"), "helper") != 0)
				continue;
			helpers_seen++;
			cr_expect(isnan(tj_num(o, "pool_threads")), "run %d: the helper loop %g has pool figures", run + 1,
				  tj_num(o, "tid"));
			cr_expect_str_neq(tj_str(o, "limit"), "pool", "run %d: the helper loop is limited by the pool",
					  run + 1);
		}
		json_object_put(doc);
		tc_kill(pid);
	}
	cr_log_info("node's threadpool of 2 read as one pool of 2, limit pool: %d of %d runs\n", good, RUNS / 2);
	cr_expect_eq(good, RUNS / 2, "one pool of 2 and limit pool in %d of %d runs", good, RUNS / 2);
	cr_expect_geq(helpers_seen, RUNS / 2 - 1, "node's second loop was judged a helper in %d of %d runs",
		      helpers_seen, RUNS / 2);
}

/* The ten runs in two halves side by side (the suite runs two tests at a
 * time): two saturated pools of 2 on two CPUs still never wait on their
 * futex, and each list names its own node. */
Test(pool_stable, runs_1_to_5_read_one_pool_of_2, .timeout = 90)
{
	stable_runs(0);
}

Test(pool_stable, runs_6_to_10_read_one_pool_of_2, .timeout = 90)
{
	stable_runs(RUNS / 2);
}
