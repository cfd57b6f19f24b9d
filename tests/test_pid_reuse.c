/* A loop that takes the pid of a loop that just exited is sampled within 5 s: a worker is (pid, start time), never the dead entry of its pid. */
#include <criterion/criterion.h>

#include <errno.h>
#include <json-c/json.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/support.h"
#include "support/users.h"

static struct ts_user user;

/* a host sweep, as a plain list does (run-tests.sh makes --instrumented the default) */
static void setup(void) { ts_user_add_sweeping(&user); }
static void teardown(void) { ts_user_del(&user); }

TestSuite(pid_reuse, .init = setup, .fini = teardown, .timeout = 60);

/* In the child: the second user's epoll loop named name, until killed. */
static void loop_as_user(const char *name)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (ts_become(&user) < 0)
		_exit(120);
	prctl(PR_SET_NAME, name);
	int ep = epoll_create1(0);
	for (;;) {
		struct epoll_event ev;
		epoll_wait(ep, &ev, 1, 1000);
	}
}

/* A child with pid `want` (clone3's set_tid; 0: any), or -errno. */
static pid_t spawn_loop(const char *name, pid_t want)
{
	struct clone_args ca = { .exit_signal = SIGCHLD };
	pid_t tid[1] = { want };
	if (want) {
		ca.set_tid = (uint64_t)(uintptr_t)tid;
		ca.set_tid_size = 1;
	}
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0)
		return -errno;
	if (pid == 0)
		loop_as_user(name);
	return (pid_t)pid;
}

/* The worker of pid in a list document, or NULL. */
static json_object *worker_of(json_object *doc, pid_t pid)
{
	json_object *ws = NULL;
	if (!json_object_object_get_ex(doc, "workers", &ws))
		return NULL;
	for (size_t i = 0; i < json_object_array_length(ws); i++) {
		json_object *w = json_object_array_get_idx(ws, i), *p = NULL;
		if (json_object_object_get_ex(w, "pid", &p) && json_object_get_int(p) == pid)
			return w;
	}
	return NULL;
}

Test(pid_reuse, a_loop_on_a_reused_pid_is_sampled_within_five_seconds)
{
	pid_t first = spawn_loop("first-loop", 0);
	cr_assert_gt(first, 0, "clone3: %s", strerror(-first));
	/* the sweep of the host, narrowed to the user: as top and serve find loops */
	int out[2];
	cr_assert_eq(pipe(out), 0);
	pid_t list = fork();
	cr_assert_geq(list, 0);
	if (list == 0) {
		dup2(out[1], 1);
		close(out[0]);
		execl(ts_loopstat_bin(), "loopstat", "list", "--json", "--all", "--duration", "6.5", "-u", user.name,
		      (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	usleep(1200 * 1000);   /* the first sweep has taken it */
	kill(first, SIGKILL);
	waitpid(first, NULL, 0);
	pid_t second = spawn_loop("second-loop", first);
	if (second == -EPERM || second == -EINVAL || second == -EEXIST) {
		kill(list, SIGKILL);
		waitpid(list, NULL, 0);
		cr_skip_test("clone3 with set_tid: %s", strerror(-second));
	}
	cr_assert_eq(second, first, "clone3 gave pid %d, not %d", second, first);
	long long born = ts_now_ms();
	char *text = NULL;
	size_t len = 0, cap = 0;
	FILE *f = fdopen(out[0], "r");
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			text = realloc(text, cap);
		}
		memcpy(text + len, buf, n);
		len += n;
		text[len] = '\0';
	}
	fclose(f);
	int st;
	waitpid(list, &st, 0);
	long long since = ts_now_ms() - born;
	kill(second, SIGKILL);
	waitpid(second, NULL, 0);
	cr_assert(text && WIFEXITED(st) && WEXITSTATUS(st) == 0, "list: status %#x: %s", st, text ? text : "");
	cr_assert_leq(since, 6000, "list ended %lld ms after the second loop began", since);
	json_object *doc = json_tokener_parse(text);
	cr_assert(doc, "not JSON: %s", text);
	json_object *w = worker_of(doc, second);
	cr_assert(w, "no worker of pid %d: %s", second, text);
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(w, "name", &v));
	cr_expect_str_eq(json_object_get_string(v), "second-loop", "%s", text);
	cr_assert(json_object_object_get_ex(w, "gone", &v));
	cr_expect(!json_object_get_boolean(v), "the new loop reads as gone: %s", text);
	cr_assert(json_object_object_get_ex(w, "samples", &v));
	cr_expect_gt(json_object_get_int(v), 0, "the new loop was never sampled: %s", text);
	cr_assert(json_object_object_get_ex(w, "idle_pct", &v));
	cr_expect_gt(json_object_get_double(v), 90, "an idle loop: %s", text);
	json_object_put(doc);
	free(text);
}
