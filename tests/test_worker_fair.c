/* The worker cap is shared fairly: beside one user's flood of epoll threads past --max-workers, a root loop, another user's loop and an instrumented worker started after loopstat are listed within seconds, and what was left out is counted by reason. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "support/children.h"
#include "support/loop_child.h"
#include "support/support.h"
#include "support/thread_flood.h"
#include "support/users.h"

/* make test's figures: the cap lowered by --max-workers, so the same rule
 * holds as at 4,096 beside 4,300 (bench/worker_fair runs those) */
#define FLOOD 1500
#define CAP   "256"

static struct ts_user flooder, other;
static char *dir;
static pid_t kids[4];
static int nkids;

static void setup(void)
{
	ts_user_add_sweeping(&flooder);   /* a host sweep, as a plain list does */
	ts_user_nobody(&other);
	dir = ts_tmpdir("fair");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	tc_kill_all(kids, nkids);   /* no flood child outlives the test */
	nkids = 0;
	ts_rmtree_free(dir);
	ts_user_del(&flooder);
}

TestSuite(worker_fair, .init = setup, .fini = teardown, .timeout = 15);

static int become(void *arg) { return ts_become(arg); }

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

static long ignored_by(json_object *doc, const char *reason)
{
	json_object *by = NULL, *v = NULL;
	if (!json_object_object_get_ex(doc, "ignored_by", &by) || !json_object_object_get_ex(by, reason, &v))
		return -1;
	return json_object_get_int64(v);
}

/* list's whole output on fd, and its exit status. */
static int finish(pid_t pid, int fd, char **text)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	cr_assert(buf);
	for (ssize_t n; (n = read(fd, buf + len, cap - len - 1)) > 0;) {
		len += (size_t)n;
		if (len + 1 == cap)
			cr_assert((buf = realloc(buf, cap *= 2)));
	}
	buf[len] = '\0';
	close(fd);
	int st = 0;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	*text = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The loops come a second after list began: only a later sweep finds
 * them, and the flood took every place the cap had at the first. */
Test(worker_fair, a_flood_of_one_user_crowds_out_no_one)
{
	/* the flood first: the lowest pids, first in /proc's order */
	kids[nkids++] = tflood_start(FLOOD, 0, become, &flooder);
	const char *argv[] = { ts_loopstat_bin(), "list", "--json", "--all", "--duration", "3",
			       "--max-workers", CAP, NULL };
	int fd = -1;
	long long t0 = ts_now_ms();
	pid_t list = tc_spawn_argv(argv, &fd);
	usleep(1000 * 1000);
	FILE *out = NULL;
	pid_t root_loop = tloop_spawn("plain", 0, 0.05, 30, &out);
	cr_assert_gt(root_loop, 0);
	kids[nkids++] = root_loop;
	pid_t theirs = ts_user_loop(&other);
	kids[nkids++] = theirs;
	const char *cargs[] = { "-s", "30", "-b", "20", NULL };
	pid_t inst = tc_spawn_published("counters", cargs, dir, NULL);
	kids[nkids++] = inst;
	char *text = NULL;
	int rc = finish(list, fd, &text);
	fprintf(stderr, "list beside %d flood threads: %lld ms\n", FLOOD, ts_now_ms() - t0);
	fclose(out);
	cr_assert_eq(rc, 0, "list: %d", rc);
	json_object *doc = json_tokener_parse(text);
	cr_assert(doc, "not JSON");
	long cap = ignored_by(doc, "cap");
	fprintf(stderr, "ignored by cap %ld, by role %ld\n", cap, ignored_by(doc, "role"));
	cr_expect(listed(doc, root_loop), "the root loop was crowded out");
	cr_expect(listed(doc, theirs), "the other user's loop was crowded out");
	cr_expect(listed(doc, inst), "the instrumented worker was crowded out");
	/* the flood's threads past what the cap leaves it */
	cr_expect_geq(cap, FLOOD - atoi(CAP), "what was left out is counted by reason: %ld", cap);
	json_object_put(doc);
	free(text);
}

