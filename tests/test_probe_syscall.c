/* Syscall probe: parsing /proc/PID/task/TID/syscall and sampling real tasks (running, gone, no access). */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_proc.h"
#include "probe_syscall.h"
#include "support/probe_child.h"

static int parse(const char *text, struct probe_sc_sample *s)
{
	return probe_syscall_parse(text, strlen(text), s);
}

Test(probe_syscall, parse_running, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_sc_sample s;
	cr_assert_eq(parse("running\n", &s), 0);
	cr_assert_eq(s.state, PROBE_SC_RUNNING);
	cr_assert_eq(s.nr, -1);
	cr_assert_eq(parse("running", &s), 0);
	cr_assert_eq(s.state, PROBE_SC_RUNNING);
}

Test(probe_syscall, parse_in_syscall, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_sc_sample s;
	cr_assert_eq(parse("232 0x4 0x7ffd1000 0x40 0xffffffff 0x0 0x8 0x7ffd0ff8 0x7f12abcdef01\n", &s), 0);
	cr_assert_eq(s.state, PROBE_SC_IN_SYSCALL);
	cr_assert_eq(s.nr, 232);
	cr_assert_eq(s.args[0], 4);
	cr_assert_eq(s.args[1], 0x7ffd1000);
	cr_assert_eq(s.args[2], 0x40);
	cr_assert_eq(s.args[3], 0xffffffff);
	cr_assert_eq(s.args[4], 0);
	cr_assert_eq(s.args[5], 8);
	cr_assert_eq(s.sp, 0x7ffd0ff8);
	cr_assert_eq(s.pc, 0x7f12abcdef01);
	cr_assert_eq(parse("0 0xffffffffffffffff 0x1 0x2 0x3 0x4 0x5 0x6 0x7", &s), 0);
	cr_assert_eq(s.args[0], UINT64_MAX);
}

Test(probe_syscall, parse_not_in_syscall_and_zombie, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_sc_sample s;
	cr_assert_eq(parse("-1 0x7ffd0ff8 0x401000\n", &s), 0);
	cr_assert_eq(s.state, PROBE_SC_NOT_IN_SYSCALL);
	cr_assert_eq(s.sp, 0x7ffd0ff8);
	cr_assert_eq(s.pc, 0x401000);
	/* an exited, unreaped task has no stack */
	cr_assert_eq(parse("-1 0x0 0x0\n", &s), 0);
	cr_assert_eq(s.state, PROBE_SC_GONE);
	cr_assert_eq(probe_syscall_parse("", 0, &s), 0);
	cr_assert_eq(s.state, PROBE_SC_GONE);
}

Test(probe_syscall, parse_malformed, .timeout = PROBE_TEST_TIMEOUT)
{
	static const char *bad[] = {
		"runnin", "running now", "7", "7 0x1 0x2", "232 0x4 0x7ffd1000 0x40",
		"232 0x4 0x1 0x2 0x3 0x4 0x5 0x6", "232 0x4 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8",
		"abc 0x1", "232 4 5 6 7 8 9 10 11", "232 0xg 0x1 0x2 0x3 0x4 0x5 0x6 0x7",
		"232 0x 0x1 0x2 0x3 0x4 0x5 0x6 0x7", "-1 0x1", "-2 0x1 0x2", "-1 0x1 0x2 junk",
		"1 0x11111111111111111 0x1 0x2 0x3 0x4 0x5 0x6 0x7", "9999999999 0x1 0x2",
		"\n", " running", "-", "-1  0x1 0x2",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct probe_sc_sample s;
		s.state = PROBE_SC_RUNNING;
		cr_assert_eq(parse(bad[i], &s), -EINVAL, "accepted \"%s\"", bad[i]);
		cr_assert_eq(s.state, 0, "state set for \"%s\"", bad[i]);
	}
	/* truncated: a prefix of a valid line must never parse as a full one */
	const char *line = "232 0x4 0x7ffd1000 0x40 0xffffffff 0x0 0x8 0x7ffd0ff8 0x7f12abcdef01";
	for (size_t n = 1; n < strlen(line) - 1; n++) {
		struct probe_sc_sample s;
		int r = probe_syscall_parse(line, n, &s);
		/* the only valid prefix ends inside the last word: pc shortened */
		if (r == 0)
			cr_assert(n > strlen(line) - 13, "prefix of %zu bytes parsed", n);
	}
}

Test(probe_syscall, error_states, .timeout = PROBE_TEST_TIMEOUT)
{
	cr_assert_eq(probe_sc_state_of_error(-ESRCH), PROBE_SC_GONE);
	cr_assert_eq(probe_sc_state_of_error(-ENOENT), PROBE_SC_GONE);
	cr_assert_eq(probe_sc_state_of_error(-EACCES), PROBE_SC_NO_ACCESS);
	cr_assert_eq(probe_sc_state_of_error(-EPERM), PROBE_SC_NO_ACCESS);
	cr_assert_eq(probe_sc_state_of_error(-EIO), 0);
	const char *t = probe_no_access_text();
	cr_assert(strstr(t, "same user"));
	cr_assert(strstr(t, "root"));
	cr_assert(strstr(t, "CAP_SYS_PTRACE"));
	cr_assert(strstr(t, "PR_SET_PTRACER"));
	cr_assert(strstr(t, "ptrace_scope=1"));
}

Test(probe_syscall, busy_child_is_running, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t pid = tchild_fork(tchild_park_busy, NULL);
	cr_assert_gt(pid, 0);
	struct probe_syscall p;
	cr_assert_eq(probe_syscall_open(&p, pid, pid), 0);
	struct probe_sc_sample s;
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_RUNNING, 5000, &s), 0, "state %d", s.state);
	/* a busy loop never enters a syscall: every sample says running */
	for (int i = 0; i < 200; i++) {
		cr_assert_eq(probe_syscall_sample(&p, &s), 0);
		cr_assert_eq(s.state, PROBE_SC_RUNNING, "sample %d: state %d nr %ld", i, s.state, s.nr);
	}
	probe_syscall_close(&p);
	tchild_reap(pid);
}

Test(probe_syscall, process_exits_mid_window, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t pid = tchild_fork(tchild_park_pause, NULL);
	cr_assert_gt(pid, 0);
	struct probe_syscall p;
	cr_assert_eq(probe_syscall_open(&p, pid, pid), 0);
	struct probe_sc_sample s;
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_IN_SYSCALL, 5000, &s), 0, "state %d", s.state);
#ifdef SYS_pause
	cr_assert_eq(s.nr, SYS_pause);
#else
	cr_assert_eq(s.nr, SYS_ppoll);
#endif

	/* dead but not reaped: a zombie */
	kill(pid, SIGKILL);
	siginfo_t si;
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	/* the parent is notified while the task still runs its last steps on
	 * its own stack; it turns GONE as soon as that stack is released */
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_GONE, 2000, &s), 0, "zombie: state %d", s.state);

	/* reaped: the open file now fails with ESRCH */
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	cr_assert_eq(probe_syscall_sample(&p, &s), 0);
	cr_assert_eq(s.state, PROBE_SC_GONE, "reaped: state %d", s.state);
	probe_syscall_close(&p);

	/* and opening it afresh reports gone as well */
	cr_assert_eq(probe_syscall_open(&p, pid, pid), -ENOENT);
	cr_assert_eq(probe_syscall_sample(&p, &s), 0);
	cr_assert_eq(s.state, PROBE_SC_GONE);
	probe_syscall_close(&p);
}

static int thread_pipe[2];

static void *thread_reader(void *arg)
{
	char c;
	*(pid_t *)arg = gettid();
	ssize_t n = read(thread_pipe[0], &c, 1);
	(void)n;
	return NULL;
}

Test(probe_syscall, thread_exits_between_samples, .timeout = PROBE_TEST_TIMEOUT)
{
	cr_assert_eq(pipe(thread_pipe), 0);
	volatile pid_t tid = 0;
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, thread_reader, (void *)&tid), 0);
	while (!tid)
		usleep(100);
	struct probe_syscall p;
	cr_assert_eq(probe_syscall_open(&p, getpid(), tid), 0);
	struct probe_sc_sample s;
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_IN_SYSCALL, 5000, &s), 0, "state %d", s.state);
	cr_assert_eq(s.nr, SYS_read);
	cr_assert_eq(s.args[0], (uint64_t)thread_pipe[0]);

	cr_assert_eq(write(thread_pipe[1], "x", 1), 1);
	cr_assert_eq(pthread_join(th, NULL), 0);
	/* join returns when the kernel clears the tid, a little before the
	 * task is released: GONE follows within a bounded time */
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_GONE, 2000, &s), 0, "state %d", s.state);
	probe_syscall_close(&p);
	close(thread_pipe[0]);
	close(thread_pipe[1]);
}

/* The prober runs as nobody against a parked child; it reports the state
 * it settles on (IN_SYSCALL within 5 s, or whatever it last saw) as its
 * exit status. */
struct prober_arg {
	pid_t target;
};

/* Changing uid clears the parent-death signal: arm it again, so that a
 * failed assertion in the test still leaves no process behind. */
static void become_nobody(void)
{
	pid_t parent = getppid();
	if (setgid(65534) < 0 || setuid(65534) < 0)
		_exit(10);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(12);
}

static void park_prober(void *arg, int ready_fd)
{
	struct prober_arg *a = arg;
	become_nobody();
	tchild_ready(ready_fd);
	struct probe_syscall p;
	struct probe_sc_sample s;
	probe_syscall_open(&p, a->target, a->target);
	if (probe_syscall_sample(&p, &s) == 0 && s.state == PROBE_SC_NO_ACCESS)
		_exit(PROBE_SC_NO_ACCESS);
	int r = tchild_wait_state(&p, PROBE_SC_IN_SYSCALL, 5000, &s);
	_exit(r < 0 && !s.state ? 11 : (int)s.state);
}

static int probe_as_nobody(pid_t target)
{
	struct prober_arg a = { target };
	pid_t prober = tchild_fork(park_prober, &a);
	cr_assert_gt(prober, 0);
	int status;
	cr_assert_eq(waitpid(prober, &status, 0), prober);
	cr_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

Test(probe_syscall, no_access_as_nobody, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t target = tchild_fork(tchild_park_pause, NULL);
	cr_assert_gt(target, 0);
	int st = probe_as_nobody(target);
	cr_assert_eq(st, PROBE_SC_NO_ACCESS, "prober saw state %d", st);

	/* and root sees the same task fine */
	struct probe_syscall p;
	struct probe_sc_sample s;
	cr_assert_eq(probe_syscall_open(&p, target, target), 0);
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_IN_SYSCALL, 5000, &s), 0);
	probe_syscall_close(&p);
	tchild_reap(target);
}

static void park_pause_as_nobody(void *arg, int ready_fd)
{
	int dumpable = *(int *)arg;
	become_nobody();
	/* changing uid made the process non-dumpable; a worker that wants to
	 * be sampled by its own user turns it back on */
	if (dumpable)
		prctl(PR_SET_DUMPABLE, 1);
	tchild_ready(ready_fd);
	for (;;)
		pause();
}

Test(probe_syscall, same_user_has_access_unless_not_dumpable, .timeout = PROBE_TEST_TIMEOUT)
{
	int dumpable = 1;
	pid_t target = tchild_fork(park_pause_as_nobody, &dumpable);
	cr_assert_gt(target, 0);
	int st = probe_as_nobody(target);
	cr_assert_eq(st, PROBE_SC_IN_SYSCALL, "same user: prober saw state %d", st);
	tchild_reap(target);

	dumpable = 0;
	target = tchild_fork(park_pause_as_nobody, &dumpable);
	cr_assert_gt(target, 0);
	st = probe_as_nobody(target);
	cr_assert_eq(st, PROBE_SC_NO_ACCESS, "not dumpable: prober saw state %d", st);
	tchild_reap(target);
}

Test(probe_syscall, fixture_files, .timeout = PROBE_TEST_TIMEOUT)
{
	char root[PATH_MAX];
	cr_assert_eq(tchild_fixture_dir(root, sizeof(root)), 0);
	cr_assert_eq(tchild_fixture_write(root, "5/task/6/syscall", "7 0x3 0x0 0x1 0x0 0x0 0x0 0x7ffc0 0x7f001\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "5/task/7/syscall", "7 0x3 0x0 0x1\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "5/task/8/syscall", "seven 0x3\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "5/task/9/syscall", ""), 0);
	char big[1024];
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(tchild_fixture_write(root, "5/task/10/syscall", big), 0);
	setenv(PROBE_PROC_ROOT_ENV, root, 1);

	struct probe_syscall p;
	struct probe_sc_sample s;
	cr_assert_eq(probe_syscall_open(&p, 5, 6), 0);
	cr_assert_eq(probe_syscall_sample(&p, &s), 0);
	cr_assert_eq(s.state, PROBE_SC_IN_SYSCALL);
	cr_assert_eq(s.nr, 7);
	cr_assert_eq(s.args[0], 3);
	cr_assert_eq(s.pc, 0x7f001);
	/* sampled twice from the same open file: pread at offset 0 */
	cr_assert_eq(probe_syscall_sample(&p, &s), 0);
	cr_assert_eq(s.nr, 7);
	probe_syscall_close(&p);

	for (int tid = 7; tid <= 10; tid++) {
		cr_assert_eq(probe_syscall_open(&p, 5, tid), 0);
		int r = probe_syscall_sample(&p, &s);
		if (tid == 9) {
			cr_assert_eq(r, 0);
			cr_assert_eq(s.state, PROBE_SC_GONE, "empty file");
		} else {
			cr_assert_eq(r, -EINVAL, "tid %d: %d", tid, r);
			cr_assert_eq(s.state, 0);
		}
		probe_syscall_close(&p);
	}
	cr_assert_eq(probe_syscall_open(&p, 5, 11), -ENOENT);
	cr_assert_eq(probe_syscall_sample(&p, &s), 0);
	cr_assert_eq(s.state, PROBE_SC_GONE);
	unsetenv(PROBE_PROC_ROOT_ENV);
	tchild_fixture_remove(root);
}

/* ---- futex waits: the pool key of a condition variable ---- */

static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER, held = PTHREAD_MUTEX_INITIALIZER;
static volatile pid_t waiter_tid[3];
static volatile int cv_go;

static void *cond_waiter(void *arg)
{
	int i = (int)(intptr_t)arg;
	waiter_tid[i] = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&cv_lock);
	while (!cv_go)
		pthread_cond_wait(&cv, &cv_lock);
	pthread_mutex_unlock(&cv_lock);
	return NULL;
}

static void *mutex_waiter(void *arg)
{
	(void)arg;
	waiter_tid[2] = (pid_t)syscall(SYS_gettid);
	pthread_mutex_lock(&held);   /* held by the test: a FUTEX_WAIT on the mutex */
	pthread_mutex_unlock(&held);
	return NULL;
}

/* The thread's sample once it sits in a futex wait (within 5 s). */
static void futex_sample(pid_t tid, struct probe_sc_sample *s)
{
	struct probe_syscall p;
	cr_assert_eq(probe_syscall_open(&p, getpid(), tid), 0);
	for (int i = 0; i < 500; i++) {
		cr_assert_eq(probe_syscall_sample(&p, s), 0);
		if (s->state == PROBE_SC_IN_SYSCALL && s->nr == SYS_futex)
			break;
		usleep(10 * 1000);
	}
	probe_syscall_close(&p);
	cr_assert_eq(s->nr, SYS_futex, "thread %d never waited", (int)tid);
}

/* Two waiters on one condvar share its key, whichever group word they
 * sleep on (glibc 2.36: __g_signals at offset 40 and 44); a mutex waiter
 * is keyed by its mutex; a sample out of a futex wait has no key. */
Test(probe_syscall, condvar_waiters_share_one_key, .timeout = PROBE_TEST_TIMEOUT)
{
	pthread_t t[3];
	pthread_mutex_lock(&held);
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, cond_waiter, (void *)(intptr_t)i), 0);
	cr_assert_eq(pthread_create(&t[2], NULL, mutex_waiter, NULL), 0);
	while (!waiter_tid[0] || !waiter_tid[1] || !waiter_tid[2])
		usleep(1000);
	struct probe_sc_sample s;
	uint64_t key[2], mkey;
	for (int i = 0; i < 2; i++) {
		futex_sample(waiter_tid[i], &s);
		cr_assert_eq(probe_sc_futex_wait(&s, &key[i]), PROBE_FUTEX_WAIT_BITSET, "a glibc condvar wait");
		cr_expect_geq(s.args[0], (uintptr_t)&cv);
		cr_expect_lt(s.args[0], (uintptr_t)&cv + sizeof(cv), "the wait is on a word of the condvar");
	}
	cr_expect_eq(key[0], key[1]);
	cr_expect_eq(key[0], ((uintptr_t)&cv + 40) & ~(uintptr_t)7, "key %#llx, cond at %p",
		     (unsigned long long)key[0], (void *)&cv);
	futex_sample(waiter_tid[2], &s);
	cr_assert_eq(probe_sc_futex_wait(&s, &mkey), PROBE_FUTEX_WAIT, "a glibc mutex wait");
	cr_expect_eq(mkey, (uintptr_t)&held & ~(uintptr_t)7);
	cr_expect_neq(mkey, key[0]);
	/* not a wait: a wake, running, another syscall */
	struct probe_sc_sample o = s;
	o.args[1] = 1;   /* FUTEX_WAKE */
	cr_expect_eq(probe_sc_futex_wait(&o, &mkey), 0);
	cr_assert_eq(parse("running\n", &o), 0);
	cr_expect_eq(probe_sc_futex_wait(&o, &mkey), 0);
	cr_assert_eq(parse("232 0x4 0x7ffd1000 0x40 0xffffffff 0x0 0x8 0x7ffd0ff8 0x7f12abcdef01\n", &o), 0);
	cr_expect_eq(probe_sc_futex_wait(&o, &mkey), 0);
	pthread_mutex_unlock(&held);
	pthread_mutex_lock(&cv_lock);
	cv_go = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&cv_lock);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}
