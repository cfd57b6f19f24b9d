/* report deduplicates stalls by stack: the stalls of one stack (a hundred in make check, twenty in make test) are one line with their count, worst and CPU wait. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "support/children.h"
#include "support/support.h"

/* The sampler captures a worker's stalls 5 times a minute at most
 * (SAMPLER_STALL_BURST) and 4 a second in all: 20 loops give 100 stalls
 * in 25 s, and no more for the rest of the minute. That is make check's
 * run (LOOPSTAT_TRUTH=full); make test's, 4 loops, gives 20 in 6 s. */
static int threads(void)
{
	const char *t = getenv("LOOPSTAT_TRUTH");
	return t && !strcmp(t, "full") ? 20 : 4;
}

static char *dir;

static void setup(void) { dir = ts_tmpdir("stallgroups"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(stall_groups, .init = setup, .fini = teardown, .timeout = 60);

/* The loops' one stall: 200 ms blocked in nanosleep, in a function of its
 * own. Blocked, its stack comes from the syscall file's sp and pc, which a
 * loaded machine does not take away (an on-CPU stall's perf sample can
 * miss a short stall that is preempted). */
__attribute__((noinline)) void stall_groups_block(void);
__attribute__((noinline)) void stall_groups_block(void)
{
	struct timespec d = { 0, 200 * 1000000 };
	while (nanosleep(&d, &d) != 0)
		;
	__asm__ volatile("" ::: "memory");   /* not a tail call: this frame stays on the stack */
}

/* A loop of its own: a second in epoll_wait, then its stall. Nothing
 * else takes it out of its poll but the wait for a CPU on waking. */
static void *loop(void *arg)
{
	(void)arg;
	int ep = epoll_create1(0), p[2];
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || pipe(p) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0)
		_exit(1);
	for (;;) {
		epoll_wait(ep, &ev, 1, 1000);
		stall_groups_block();
	}
	return NULL;
}

static pid_t spawn_loops(int n)
{
	pid_t pid = tc_fork();
	if (pid)
		return pid;
	pthread_t t;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, loop, NULL) != 0)
			_exit(1);
	for (;;)
		pause();
}

/* The report's stall lines: each group's count, its line and its frames. */
struct group {
	int  count;
	char line[512];
	char frames[2048];
};

static int parse_groups(const char *sec, struct group *g, int max)
{
	int n = 0;
	const char *p = strchr(sec, '\n');
	while (p && p[1] == ' ') {
		p++;
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		int count;
		if (sscanf(p, " %dx ", &count) == 1 && strstr(p, "x  ") && strstr(p, "x  ") < p + len && n < max) {
			g[n].count = count;
			snprintf(g[n].line, sizeof(g[n].line), "%.*s", (int)len, p);
			g[n].frames[0] = '\0';
			n++;
		} else if (n) {
			size_t used = strlen(g[n - 1].frames);
			snprintf(g[n - 1].frames + used, sizeof(g[n - 1].frames) - used, "%.*s\n", (int)len, p);
		}
		p = eol;
	}
	return n;
}

Test(stall_groups, a_hundred_stalls_of_one_stack_are_one_line)
{
	int n_loops = threads(), want = 5 * n_loops;
	pid_t pid = spawn_loops(n_loops);
	usleep(200 * 1000);
	char p[16], duration[16], captured[32];
	snprintf(p, sizeof(p), "%d", (int)pid);
	snprintf(duration, sizeof(duration), "%d", n_loops == 20 ? 30 : 8);
	snprintf(captured, sizeof(captured), "%d, in ", want);
	char *path = ts_path_in(dir, "stalls.rec"), *out = NULL;
	int rc = ts_loopstat(&out, 45000, "record", "-p", p, "-r", "200", "--stall-ms", "25", "--duration", duration, "-o",
			     path, NULL);
	tc_kill(pid);
	cr_assert_eq(rc, 0, "record: exit %d: %s", rc, out);
	free(out);
	rc = ts_loopstat(&out, 20000, "report", path, NULL);
	cr_assert_eq(rc, 0, "report: exit %d: %s", rc, out);
	const char *sec = strstr(out, "stalls captured");
	cr_assert(sec, "no stalls in the report: %s", out);
	cr_expect(strstr(sec, captured), "%d captured, 5 of each of %d loops: %s", want, n_loops, sec);
	struct group g[16];
	int n = parse_groups(sec, g, 16), mine = -1, total = 0;
	for (int i = 0; i < n; i++) {
		total += g[i].count;
		if (!strstr(g[i].frames, "stall_groups_block"))
			continue;
		cr_expect_eq(mine, -1, "one line for the stack: %s", sec);
		mine = i;
	}
	cr_assert_eq(total, want, "the lines count every stall: %s", sec);
	cr_assert_geq(mine, 0, "a line whose stack names stall_groups_block: %s", sec);
	/* the rest can only be waits for a CPU on waking, on a loaded machine:
	 * on a CPU's run queue, so no stack (docs/usage.md, "Stalls") */
	for (int i = 0; i < n; i++)
		if (i != mine)
			cr_expect(strstr(g[i].line, "running") && !g[i].frames[0], "a stall of another kind: %s", sec);
	const char *line = g[mine].line;
	cr_expect(strstr(line, "blocked") && strstr(line, "nanosleep"), "blocked in nanosleep: %s", sec);
	/* its worst is a whole stall (200 ms, more with a wait for a CPU), not the 25 ms it was caught at */
	double worst = 0;
	const char *w = strstr(line, "worst ");
	cr_assert(w && sscanf(w, "worst %lf ms", &worst) == 1, "%s", line);
	cr_expect(worst >= 198, "worst %.0f ms for 200-ms stalls: %s", worst, sec);
	cr_expect(strstr(line, "cpu wait ") && !strstr(line, "cpu wait -"), "its CPU wait measured: %s", sec);
	free(out);
	free(path);
}
