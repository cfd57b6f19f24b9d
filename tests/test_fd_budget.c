/* The probes' fd budget holds under a thread flood: loopstat list of one process with 400 loop threads and a helper pool of 100 keeps its /proc files (syscall and schedstat, the pool's threads' too) within the budget its fd limit sets, and its fds within that plus a small reserve. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"
#include "support/thread_flood.h"

#define LOOPS   400
#define POOL    100
#define NOFILE  256           /* loopstat's soft fd limit here */
#define BUDGET  (NOFILE / 4)  /* the probes' default budget (probe_fdbudget.h) */
#define RESERVE 64            /* loopstat's own fds beside the probes' */

static char *dir;

static void setup(void) { dir = ts_tmpdir("fdbudget"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(fd_budget, .init = setup, .fini = teardown, .timeout = 15);

struct fd_count {
	int all;     /* every fd open */
	int probes;  /* /proc/.../syscall and /proc/.../schedstat files */
};

static struct fd_count count_fds(pid_t pid)
{
	struct fd_count c = { 0 };
	char path[64], to[256];
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return c;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		c.all++;
		ssize_t n = readlinkat(dirfd(d), e->d_name, to, sizeof(to) - 1);
		if (n <= 0)
			continue;
		to[n] = '\0';
		const char *base = strrchr(to, '/');
		c.probes += base && (!strcmp(base, "/syscall") || !strcmp(base, "/schedstat"));
	}
	closedir(d);
	return c;
}

Test(fd_budget, a_thread_flood_stays_within_the_budget)
{
	pid_t target = tflood_start(LOOPS, POOL, NULL, NULL);
	char pids[16], *out = ts_path_in(dir, "list.json");
	snprintf(pids, sizeof(pids), "%d", (int)target);
	pid_t ls = tc_fork();
	if (ls == 0) {
		struct rlimit rl = { NOFILE, NOFILE };
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0 || setrlimit(RLIMIT_NOFILE, &rl) < 0)
			_exit(126);
		execl(ts_loopstat_bin(), "loopstat", "list", "--json", "--duration", "2", "--max-workers", "8192", "-p",
		      pids, (char *)NULL);
		_exit(127);
	}
	struct fd_count most = { 0 };
	int st = 0;
	while (waitpid(ls, &st, WNOHANG) == 0) {
		struct fd_count now = count_fds(ls);
		most.all = now.all > most.all ? now.all : most.all;
		most.probes = now.probes > most.probes ? now.probes : most.probes;
		usleep(50 * 1000);
	}
	tc_kill(target);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "list exited %d", st);
	char *text = ts_read_file(out);
	json_object *doc = json_tokener_parse(text);
	cr_assert(doc, "%s", text);
	int workers = 0;
	json_object *ws = tj_get(doc, "workers");
	for (size_t i = 0; i < json_object_array_length(ws); i++)
		workers += tj_num(json_object_array_get_idx(ws, i), "pid") == target;
	cr_log_info("%d workers listed; at most %d fds open, %d of them probe files (budget %d)\n", workers, most.all,
		    most.probes, BUDGET);
	/* every loop sampled, at two files a thread far more than the budget:
	 * past it files are recycled, never a thread lost */
	cr_expect_geq(workers, LOOPS, "%d of %d loop threads listed", workers, LOOPS);
	cr_expect_leq(most.probes, BUDGET, "%d probe files open, the budget is %d", most.probes, BUDGET);
	cr_expect_leq(most.all, BUDGET + RESERVE, "%d fds open, the budget is %d + %d", most.all, BUDGET, RESERVE);
	json_object_put(doc);
	free(text);
	free(out);
}
