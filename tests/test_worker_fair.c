/* The worker cap is shared fairly: with 4,300 of another user's threads waiting in epoll, a root loop found by the sweep and an instrumented worker are both listed; the flood is what is left out, and counted. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "support/children.h"
#include "support/loop_child.h"
#include "support/support.h"
#include "support/users.h"

#define FLOOD 4300

static struct ts_user user;
static char *dir;

static void setup(void)
{
	unsetenv("LOOPSTAT_DISCOVER");   /* a host sweep, as a plain list does */
	ts_user_add(&user);
	dir = ts_tmpdir("fair");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	ts_rmtree_free(dir);
	ts_user_del(&user);
}

TestSuite(worker_fair, .init = setup, .fini = teardown, .timeout = 120);

static void *park(void *arg)
{
	int ep = *(int *)arg;
	struct epoll_event ev;
	for (;;)
		epoll_wait(ep, &ev, 1, -1);
	return NULL;
}

static pid_t flood(void)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t a = fork();
	cr_assert_geq(a, 0);
	if (a == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[0]);
		if (ts_become(&user) < 0)
			_exit(120);
		static int ep;
		ep = epoll_create1(0);
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setstacksize(&at, 64 * 1024);
		int made = 0;
		for (int i = 0; i < FLOOD; i++) {
			pthread_t t;
			made += pthread_create(&t, &at, park, &ep) == 0;
		}
		dprintf(p[1], "%d\n", made);
		for (;;)
			pause();
	}
	close(p[1]);
	char buf[32] = "";
	cr_assert_gt(read(p[0], buf, sizeof(buf) - 1), 0);
	close(p[0]);
	cr_assert_geq(atoi(buf), FLOOD, "threads made: %s", buf);
	return a;
}

static int listed(json_object *doc, pid_t pid)
{
	json_object *ws = NULL;
	json_object_object_get_ex(doc, "workers", &ws);
	for (size_t i = 0; ws && i < json_object_array_length(ws); i++) {
		json_object *v = NULL;
		if (json_object_object_get_ex(json_object_array_get_idx(ws, i), "pid", &v) && json_object_get_int(v) == pid)
			return 1;
	}
	return 0;
}

Test(worker_fair, a_flood_of_one_user_crowds_out_no_one)
{
	pid_t a = flood();
	FILE *out = NULL;
	pid_t root_loop = tloop_spawn("plain", 0, 0.05, 60, &out);
	cr_assert_gt(root_loop, 0);
	const char *cargs[] = { "-s", "60", "-b", "20", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--all", "--duration", "8", NULL };
	char *text = NULL;
	int rc = ts_run(argv, &text, 60000);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	kill(root_loop, SIGKILL);
	waitpid(root_loop, NULL, 0);
	fclose(out);
	tc_kill(inst);
	cr_assert_eq(rc, 0, "list: %d", rc);
	json_object *doc = json_tokener_parse(text);
	cr_assert(doc, "not JSON");
	json_object *ign = NULL;
	json_object_object_get_ex(doc, "ignored", &ign);
	fprintf(stderr, "ignored %d\n", ign ? json_object_get_int(ign) : -1);
	cr_expect(listed(doc, root_loop), "the root loop was crowded out");
	cr_expect(listed(doc, inst), "the instrumented worker was crowded out");
	cr_expect_gt(ign ? json_object_get_int(ign) : 0, 0, "what was left out is counted");
	json_object_put(doc);
	free(text);
}
