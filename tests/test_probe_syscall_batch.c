/* Syscall batch: io_uring and its pread fallback sample real children exactly as probe_syscall_sample does. */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_classify.h"
#include "probe_proc.h"
#include "probe_syscall_batch.h"
#include "support/probe_child.h"

/* Created before fork, so the parent knows the numbers the children use. */
static int epfd = -1, pipefd[2] = { -1, -1 };

static void setup_fds(void)
{
	epfd = epoll_create1(0);
	cr_assert_geq(epfd, 0);
	cr_assert_eq(pipe(pipefd), 0);
}

static void teardown_fds(void)
{
	close(epfd);
	close(pipefd[0]);
	close(pipefd[1]);
}

TestSuite(probe_syscall_batch, .init = setup_fds, .fini = teardown_fds);

static void assert_same(const struct probe_sc_sample *a, int ra, const struct probe_sc_sample *b, int rb,
			const char *what)
{
	cr_assert_eq(ra, rb, "%s: rc %d vs %d", what, ra, rb);
	cr_assert_eq(a->state, b->state, "%s: state %d vs %d", what, a->state, b->state);
	cr_assert_eq(a->nr, b->nr, "%s: nr %ld vs %ld", what, a->nr, b->nr);
	cr_assert_eq(memcmp(a->args, b->args, sizeof(a->args)), 0, "%s: args differ", what);
	cr_assert_eq(a->sp, b->sp, "%s: sp", what);
	cr_assert_eq(a->pc, b->pc, "%s: pc", what);
}

/* Samples probes through the batch, then each alone through pread, and
 * asserts that both say the same. */
static void batch_vs_pread(struct probe_sc_batch *b, struct probe_syscall **p, size_t n, struct probe_sc_sample *out,
			   int *rc)
{
	cr_assert_eq(probe_sc_batch_sample(b, p, n, out, rc), 0);
	for (size_t i = 0; i < n; i++) {
		if (!p[i])
			continue;
		struct probe_sc_sample s;
		int r = probe_syscall_sample(p[i], &s);
		char what[32];
		snprintf(what, sizeof(what), "probe %zu", i);
		assert_same(&out[i], rc[i], &s, r, what);
	}
}

enum { EPOLL, READ, SLEEP, BUSY, NKIDS };

/* Children parked in epoll_wait, read, clock_nanosleep and a busy loop are
 * classified alike by the batch and by pread, sample after sample. */
static void check_parked(struct probe_sc_batch *b)
{
	static const tchild_park_fn park[NKIDS] = { tchild_park_epoll_wait, tchild_park_read, tchild_park_sleep,
						    tchild_park_busy };
	void *arg[NKIDS] = { TCHILD_FD(epfd), TCHILD_FD(pipefd[0]), NULL, NULL };
	static const enum probe_class want[NKIDS] = { PROBE_POLL, PROBE_BLOCKED, PROBE_BLOCKED, PROBE_RUNNING };
	static const long want_nr[NKIDS] = { -2, SYS_read, SYS_clock_nanosleep, -1 };
	struct probe_syscall sc[NKIDS], *p[NKIDS];
	struct probe_sc_sample out[NKIDS], s;
	int rc[NKIDS];
	pid_t pid[NKIDS];

	for (int k = 0; k < NKIDS; k++) {
		pid[k] = tchild_fork(park[k], arg[k]);
		cr_assert_gt(pid[k], 0);
		cr_assert_eq(probe_syscall_open(&sc[k], pid[k], pid[k]), 0);
		enum probe_sc_state st = k == BUSY ? PROBE_SC_RUNNING : PROBE_SC_IN_SYSCALL;
		cr_assert_eq(tchild_wait_state(&sc[k], st, 5000, &s), 0, "child %d: state %d", k, s.state);
		p[k] = &sc[k];
	}
	for (int round = 0; round < 50; round++) {
		batch_vs_pread(b, p, NKIDS, out, rc);
		for (int k = 0; k < NKIDS; k++) {
			struct probe_verdict v;
			probe_classify(&out[k], -1, &v);
			cr_assert_eq(v.cls, want[k], "round %d child %d: %s", round, k, probe_class_name(v.cls));
			if (want_nr[k] != -2)
				cr_assert_eq(v.nr, want_nr[k], "child %d: nr %ld", k, v.nr);
		}
		cr_assert_eq(out[READ].args[0], (uint64_t)pipefd[0]);
	}
	for (int k = 0; k < NKIDS; k++) {
		probe_syscall_close(&sc[k]);
		tchild_reap(pid[k]);
	}
}

/* A batch that reads through io_uring; the test skips where the ring is
 * refused, and fails where it should exist and does not. */
static struct probe_sc_batch *ring_batch(unsigned sq)
{
	struct probe_sc_batch *b;
	cr_assert_eq(probe_sc_batch_new(sq, &b), 0);
	tchild_need_ring(probe_sc_batch_ring(b));
	probe_sc_batch_set_path(b, PROBE_SC_PATH_RING); /* not left to measurement */
	return b;
}

Test(probe_syscall_batch, ring_classifies_parked_children_like_pread, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_sc_batch *b = ring_batch(64);
	check_parked(b);
	probe_sc_batch_delete(b);
}

/* A child that exits (and is reaped) between two batches is GONE in the
 * second, as pread reports it. */
static void check_exit_between_batches(struct probe_sc_batch *b)
{
	struct probe_syscall sc[2], *p[2];
	struct probe_sc_sample out[2], s;
	int rc[2];
	pid_t pid[2];
	for (int k = 0; k < 2; k++) {
		pid[k] = tchild_fork(tchild_park_pause, NULL);
		cr_assert_gt(pid[k], 0);
		cr_assert_eq(probe_syscall_open(&sc[k], pid[k], pid[k]), 0);
		cr_assert_eq(tchild_wait_state(&sc[k], PROBE_SC_IN_SYSCALL, 5000, &s), 0);
		p[k] = &sc[k];
	}
	batch_vs_pread(b, p, 2, out, rc);
	cr_assert_eq(out[1].state, PROBE_SC_IN_SYSCALL);
	tchild_reap(pid[1]);
	batch_vs_pread(b, p, 2, out, rc);
	cr_assert_eq(rc[1], 0);
	cr_assert_eq(out[1].state, PROBE_SC_GONE, "state %d", out[1].state);
	cr_assert_eq(out[0].state, PROBE_SC_IN_SYSCALL);
	for (int k = 0; k < 2; k++)
		probe_syscall_close(&sc[k]);
	tchild_reap(pid[0]);
}

Test(probe_syscall_batch, ring_child_exits_between_batches_is_gone, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_sc_batch *b = ring_batch(64);
	check_exit_between_batches(b);
	probe_sc_batch_delete(b);
}

/* Empty, malformed and overlong files, and a probe that never opened,
 * give the pread path's states and errors. */
static void check_fixtures(struct probe_sc_batch *b)
{
	char root[PATH_MAX], big[1024];
	cr_assert_eq(tchild_fixture_dir(root, sizeof(root)), 0);
	cr_assert_eq(tchild_fixture_write(root, "5/task/6/syscall", "7 0x3 0x0 0x1 0x0 0x0 0x0 0x7ffc0 0x7f001\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "5/task/7/syscall", "7 0x3 0x0 0x1\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "5/task/8/syscall", ""), 0);
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(tchild_fixture_write(root, "5/task/9/syscall", big), 0);
	cr_assert_eq(tchild_fixture_write(root, "5/task/10/syscall", "running\n"), 0);
	setenv(PROBE_PROC_ROOT_ENV, root, 1);

	struct probe_syscall sc[6], *p[7];
	struct probe_sc_sample out[7];
	int rc[7];
	for (int k = 0; k < 6; k++) {
		int r = probe_syscall_open(&sc[k], 5, 6 + k);
		cr_assert_eq(r, k == 5 ? -ENOENT : 0, "tid %d: %d", 6 + k, r);
		p[k] = &sc[k];
	}
	p[6] = NULL; /* skipped: left alone */
	out[6].state = 99;
	rc[6] = 77;
	for (int round = 0; round < 3; round++)
		batch_vs_pread(b, p, 7, out, rc);
	cr_assert_eq(out[0].state, PROBE_SC_IN_SYSCALL);
	cr_assert_eq(out[0].nr, 7);
	cr_assert_eq(rc[1], -EINVAL);
	cr_assert_eq(rc[2], 0);
	cr_assert_eq(out[2].state, PROBE_SC_GONE, "empty file");
	cr_assert_eq(rc[3], -EINVAL, "overlong: %d", rc[3]);
	cr_assert_eq(out[4].state, PROBE_SC_RUNNING);
	cr_assert_eq(rc[5], 0);
	cr_assert_eq(out[5].state, PROBE_SC_GONE, "never opened");
	cr_assert_eq(out[6].state, 99);
	cr_assert_eq(rc[6], 77);
	for (int k = 0; k < 6; k++)
		probe_syscall_close(&sc[k]);
	unsetenv(PROBE_PROC_ROOT_ENV);
	tchild_fixture_remove(root);
}

Test(probe_syscall_batch, ring_maps_malformed_and_missing_like_pread, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_sc_batch *b = ring_batch(64);
	check_fixtures(b);
	probe_sc_batch_delete(b);
}

/* A probe closed and re-opened at the same index (most likely on the same
 * fd number) samples the new task, not the file registered before. */
Test(probe_syscall_batch, reopened_probe_is_registered_again, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_sc_batch *b = ring_batch(8);
	struct probe_syscall sc, *p = &sc;
	struct probe_sc_sample out, s;
	int rc;
	pid_t a = tchild_fork(tchild_park_pause, NULL), c = tchild_fork(tchild_park_sleep, NULL);
	cr_assert(a > 0 && c > 0);
	cr_assert_eq(probe_syscall_open(&sc, a, a), 0);
	int fd = sc.fd;
	cr_assert_eq(tchild_wait_state(&sc, PROBE_SC_IN_SYSCALL, 5000, &s), 0);
	batch_vs_pread(b, &p, 1, &out, &rc);
	probe_syscall_close(&sc);
	tchild_reap(a);
	cr_assert_eq(probe_syscall_open(&sc, c, c), 0);
	cr_assert_eq(tchild_wait_state(&sc, PROBE_SC_IN_SYSCALL, 5000, &s), 0);
	batch_vs_pread(b, &p, 1, &out, &rc);
	cr_assert_eq(out.nr, SYS_clock_nanosleep, "nr %ld (fd %d, was %d)", out.nr, sc.fd, fd);
	probe_syscall_close(&sc);
	tchild_reap(c);
	probe_sc_batch_delete(b);
}

/* More probes than the ring's queue: sampled in rounds; then fewer, then
 * more again (slots emptied and refilled). */
Test(probe_syscall_batch, more_probes_than_the_ring_holds, .timeout = PROBE_TEST_TIMEOUT)
{
	enum { N = 40 };
	struct probe_sc_batch *b = ring_batch(8);
	pid_t kid[2] = { tchild_fork(tchild_park_pause, NULL), tchild_fork(tchild_park_sleep, NULL) };
	cr_assert(kid[0] > 0 && kid[1] > 0);
	struct probe_syscall sc[N], *p[N];
	struct probe_sc_sample out[N], s;
	int rc[N];
	for (int i = 0; i < N; i++) {
		cr_assert_eq(probe_syscall_open(&sc[i], kid[i % 2], kid[i % 2]), 0);
		cr_assert_eq(tchild_wait_state(&sc[i], PROBE_SC_IN_SYSCALL, 5000, &s), 0);
		p[i] = &sc[i];
	}
	static const size_t sizes[] = { N, 3, N, 17, 1, N };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		batch_vs_pread(b, p, sizes[k], out, rc);
		for (size_t i = 0; i < sizes[k]; i++)
			cr_assert_eq(out[i].state, PROBE_SC_IN_SYSCALL, "n %zu probe %zu: %d", sizes[k], i, out[i].state);
	}
	for (int i = 0; i < N; i++)
		probe_syscall_close(&sc[i]);
	tchild_reap(kid[0]);
	tchild_reap(kid[1]);
	probe_sc_batch_delete(b);
}

/* The io-wq threads' CPU time is found and grows; their policy can be set. */
Test(probe_syscall_batch, iowq_cpu_and_policy, .timeout = PROBE_TEST_TIMEOUT)
{
	enum { N = 16 };
	struct probe_sc_batch *b = ring_batch(N);
	pid_t kid = tchild_fork(tchild_park_pause, NULL);
	cr_assert_gt(kid, 0);
	struct probe_syscall sc[N], *p[N];
	struct probe_sc_sample out[N];
	int rc[N];
	for (int i = 0; i < N; i++) {
		cr_assert_eq(probe_syscall_open(&sc[i], kid, kid), 0);
		p[i] = &sc[i];
	}
	uint64_t c0, c1;
	cr_assert_eq(probe_sc_batch_iowq_cpu_ns(b, &c0), 0);
	cr_assert_eq(c0, 0, "no io-wq thread before the first batch: %llu", (unsigned long long)c0);
	for (int round = 0; round < 300; round++)
		cr_assert_eq(probe_sc_batch_sample(b, p, N, out, rc), 0);
	cr_assert_eq(probe_sc_batch_iowq_cpu_ns(b, &c1), 0);
	cr_assert_gt(c1, 0, "4800 reads cost the io-wq threads no CPU?");
	cr_assert_eq(probe_sc_batch_iowq_setsched(b, SCHED_OTHER, 0), 0);
	for (int i = 0; i < N; i++)
		probe_syscall_close(&sc[i]);
	tchild_reap(kid);
	probe_sc_batch_delete(b);
}

/* With io_uring_setup refused (as io_uring_disabled or a container's
 * seccomp profile would), the same calls read with pread and agree. The
 * filter is loaded in this test's own process (Criterion forks per test). */
Test(probe_syscall_batch, fallback_without_io_uring_gives_the_same_results, .timeout = PROBE_TEST_TIMEOUT)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	cr_assert(ctx);
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(io_uring_setup), 0), 0);
	cr_assert_eq(seccomp_load(ctx), 0);
	seccomp_release(ctx);

	struct probe_sc_batch *b;
	cr_assert_eq(probe_sc_batch_new(64, &b), 0);
	cr_assert_eq(probe_sc_batch_ring(b), -ENOSYS);
	check_parked(b);
	check_exit_between_batches(b);
	check_fixtures(b);
	uint64_t ns = 1;
	cr_assert_eq(probe_sc_batch_iowq_cpu_ns(b, &ns), 0);
	cr_assert_eq(ns, 0);
	probe_sc_batch_delete(b);
}

struct other_thread {
	struct probe_sc_batch *b;
	struct probe_syscall **p;
	struct probe_sc_sample out[2];
	int rc[2], r;
};

static void *sample_elsewhere(void *arg)
{
	struct other_thread *o = arg;
	o->r = probe_sc_batch_sample(o->b, o->p, 2, o->out, o->rc);
	return NULL;
}

/* The ring belongs to the thread that sampled first; another thread still
 * gets right samples (through pread), and the owner keeps its ring. */
Test(probe_syscall_batch, another_thread_gets_the_same_samples, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_sc_batch *b;
	cr_assert_eq(probe_sc_batch_new(8, &b), 0);
	pid_t kid[2] = { tchild_fork(tchild_park_pause, NULL), tchild_fork(tchild_park_sleep, NULL) };
	cr_assert(kid[0] > 0 && kid[1] > 0);
	struct probe_syscall sc[2], *p[2] = { &sc[0], &sc[1] };
	struct probe_sc_sample out[2], s;
	int rc[2];
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(probe_syscall_open(&sc[i], kid[i], kid[i]), 0);
		cr_assert_eq(tchild_wait_state(&sc[i], PROBE_SC_IN_SYSCALL, 5000, &s), 0);
	}
	batch_vs_pread(b, p, 2, out, rc);
	struct other_thread o = { .b = b, .p = p };
	pthread_t th;
	cr_assert_eq(pthread_create(&th, NULL, sample_elsewhere, &o), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	cr_assert_eq(o.r, 0);
	for (int i = 0; i < 2; i++)
		assert_same(&o.out[i], o.rc[i], &out[i], rc[i], "other thread");
	tchild_need_ring(probe_sc_batch_ring(b));
	batch_vs_pread(b, p, 2, out, rc);
	cr_assert_eq(out[1].nr, SYS_clock_nanosleep);
	for (int i = 0; i < 2; i++) {
		probe_syscall_close(&sc[i]);
		tchild_reap(kid[i]);
	}
	probe_sc_batch_delete(b);
}
