/* publisher.c — see publisher.h. */
#include "publisher.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "support.h"

static pid_t children[8];
static int nchildren;

void tp_adopt(pid_t pid)
{
	cr_assert_lt(nchildren, 8, "more children than a test needs");
	children[nchildren++] = pid;
}

static void forget(pid_t pid)
{
	for (int i = 0; i < nchildren; i++)
		if (children[i] == pid)
			children[i] = children[--nchildren];
}

void tp_reap(pid_t pid)
{
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	forget(pid);
}

void tp_kill_all(void)
{
	while (nchildren > 0) {
		pid_t pid = children[--nchildren];
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

struct probe_shm *tp_open_segment(const char *dir, pid_t pid)
{
	char path[PATH_MAX];
	cr_assert_eq(ts_shm_segment(dir, pid, path, sizeof(path)), 0);
	struct probe_shm *shm;
	int err = probe_shm_open(path, &shm);
	cr_assert_eq(err, 0, "probe_shm_open(%s): %d", path, err);
	return shm;
}

/* The child's exec, on the thread given the word. */
static void *exec_on_word(void *arg)
{
	char ok;
	if (read(*(int *)arg, &ok, 1) != 1)
		_exit(125);
	execl("/bin/sleep", "sleep", "30", (char *)NULL);
	_exit(127);
}

/* The mm sharer's life: parked on the writer's mm until the writer dies.
 * It says so once its death signal is set: a writer killed before that
 * would leave it parked for good. */
static int park_on_mm(void *arg)
{
	int set = *(int *)arg;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (write(set, "y", 1) != 1)
		_exit(125);
	for (;;)
		pause();
	return 0;
}

/* Child: publish a slot, report, wait for the word, exec /bin/sleep: from
 * its main thread, or from a second one (the kernel's de_thread() then
 * gives that thread the process's pid), or from its main thread with a
 * CLONE_VM child of its own (not a thread) keeping its old mm alive. */
pid_t tp_spawn_publisher(int *go_fd, enum tp_exec_from from)
{
	static char sharer_stack[64 * 1024] __attribute__((aligned(16)));
	int ready[2], go[2];
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		char ok = fl_stats_slot_acquire("pre-exec", LOOPSTAT_BACKEND_LIBEV, -1) ? 'y' : 'n';
		int set[2];
		char said;
		if (from == TP_FROM_MAIN_MM_SHARED &&
		    (pipe(set) < 0 || clone(park_on_mm, sharer_stack + sizeof(sharer_stack), CLONE_VM | SIGCHLD, &set[1]) < 0 ||
		     read(set[0], &said, 1) != 1))
			ok = 'c';
		pthread_t th;
		if (write(ready[1], &ok, 1) != 1)
			_exit(125);
		if (from == TP_FROM_THREAD && (pthread_create(&th, NULL, exec_on_word, &go[0]) != 0 || pthread_join(th, NULL) == 0))
			_exit(124); /* only the thread execs */
		exec_on_word(&go[0]);
	}
	tp_adopt(pid);
	char ok = 0;
	cr_assert_eq(read(ready[0], &ok, 1), 1);
	cr_assert_eq(ok, 'y', "the child could not publish");
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	*go_fd = go[1];
	return pid;
}

