/* The sampler's per-tick reads: pread or an io_uring batch as probe_sc_batch measures, whose io-wq threads count in the sampler's CPU and follow its policy. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "model/feed.h"
#include "probe_proc.h"
#include "probe_syscall_batch.h"
#include "collect/sample_batch.h"
#include "collect/sampler.h"
#include "support/probe_child.h"

#define N 108

static int epfd = -1;
static pid_t kids[N];
static struct probe_syscall sc[N];

static void park_epoll_wait(void *arg, int ready_fd)
{
	(void)arg;
	struct epoll_event ev;
	tchild_ready(ready_fd);
	for (;;)
		epoll_wait(epfd, &ev, 1, -1);
}

static void fleet_up(void)
{
	epfd = epoll_create1(0);
	cr_assert_geq(epfd, 0);
	for (int i = 0; i < N; i++) {
		struct probe_sc_sample s;
		kids[i] = tchild_fork(park_epoll_wait, NULL);
		cr_assert_gt(kids[i], 0);
		cr_assert_eq(probe_syscall_open(&sc[i], kids[i], kids[i]), 0);
		cr_assert_eq(tchild_wait_state(&sc[i], PROBE_SC_IN_SYSCALL, 5000, &s), 0);
	}
}

static void fleet_down(void)
{
	for (int i = 0; i < N; i++) {
		probe_syscall_close(&sc[i]);
		tchild_reap(kids[i]);
	}
	close(epfd);
}

TestSuite(sample_batch, .init = fleet_up, .fini = fleet_down);

static void run_and_compare(struct sample_batch *sb, size_t n)
{
	struct probe_syscall **slot = sample_batch_slots(sb, n);
	cr_assert_not_null(slot);
	for (size_t i = 0; i < n; i++)
		slot[i] = &sc[i];
	sample_batch_run(sb);
	for (size_t i = 0; i < n; i++) {
		struct probe_sc_sample a, b;
		cr_assert_eq(sample_batch_result(sb, i, &a), 0);
		cr_assert_eq(probe_syscall_sample(&sc[i], &b), 0);
		cr_assert_eq(a.state, PROBE_SC_IN_SYSCALL);
		cr_assert_eq(a.nr, b.nr);
		cr_assert_eq(a.pc, b.pc);
	}
}

/* Skips where io_uring is refused (kernel, seccomp): the batch then reads
 * with pread, which the pread tests cover. */
static void need_io_uring(void)
{
	struct probe_sc_batch *b;
	cr_assert_eq(probe_sc_batch_new(8, &b), 0);
	int r = probe_sc_batch_ring(b);
	probe_sc_batch_delete(b);
	tchild_need_ring(r);
}

/* The shim reads what libprobes chose: its start check runs both paths on
 * these very probes, ring first, and every tick still samples right. */
Test(sample_batch, the_path_is_measured_not_decided_by_size, .timeout = PROBE_TEST_TIMEOUT)
{
	need_io_uring();
	struct sample_batch *sb;
	cr_assert_eq(sample_batch_new(&sb), 0);
	int ring = 0, pread = 0;
	for (unsigned t = 0; t < 2 * PROBE_SC_START_TICKS; t++) {
		run_and_compare(sb, 3); /* a size the old threshold sent to pread */
		ring += sample_batch_used_ring(sb);
		pread += !sample_batch_used_ring(sb);
	}
	cr_assert_eq(ring, PROBE_SC_START_TICKS);
	cr_assert_eq(pread, PROBE_SC_START_TICKS);
	for (int t = 0; t < 20; t++)
		run_and_compare(sb, 3);
	sample_batch_set_path(sb, PROBE_SC_PATH_PREAD);
	run_and_compare(sb, N);
	cr_assert_eq(sample_batch_used_ring(sb), 0);
	sample_batch_set_path(sb, PROBE_SC_PATH_RING);
	run_and_compare(sb, N);
	cr_assert_eq(sample_batch_used_ring(sb), 1);
	sample_batch_delete(sb);
}

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Policies of this thread's io-wq threads: how many have `policy`, how many not. */
static void iowq_policies(int policy, int *with, int *without)
{
	char want[32], path[64], comm[32];
	snprintf(want, sizeof(want), "iou-wrk-%d\n", (int)gettid());
	*with = *without = 0;
	DIR *d = opendir("/proc/self/task");
	cr_assert_not_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		int tid = atoi(e->d_name);
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		if (tid <= 0 || probe_read_file(path, comm, sizeof(comm)) <= 0 || strcmp(comm, want) != 0)
			continue;
		if (sched_getscheduler(tid) == policy)
			++*with;
		else
			++*without;
	}
	closedir(d);
}

Test(sample_batch, cpu_includes_iowq_and_policy_follows, .timeout = PROBE_TEST_TIMEOUT)
{
	need_io_uring();
	struct sample_batch *sb;
	cr_assert_eq(sample_batch_new(&sb), 0);
	sample_batch_set_path(sb, PROBE_SC_PATH_RING);
	run_and_compare(sb, N);
	cr_assert_eq(sample_batch_used_ring(sb), 1);
	uint64_t own0 = thread_ns(), all0 = sample_batch_cpu_ns(sb);
	for (int i = 0; i < 200; i++)
		run_and_compare(sb, N);
	uint64_t own = thread_ns() - own0, all = sample_batch_cpu_ns(sb) - all0;
	/* the io-wq threads read 8000 files: their time is on top of ours */
	cr_assert_gt(all, own, "sampler %llu ns, its thread alone %llu ns", (unsigned long long)all,
		     (unsigned long long)own);

	int with, without;
	if (!sample_batch_set_realtime(sb, 1))
		cr_skip_test("no SCHED_FIFO here (needs CAP_SYS_NICE)");
	iowq_policies(SCHED_FIFO, &with, &without);
	cr_assert_gt(with, 0);
	cr_assert_eq(without, 0, "%d io-wq threads not real-time", without);
	cr_assert_eq(sample_batch_set_realtime(sb, 0), 1);
	iowq_policies(SCHED_OTHER, &with, &without);
	cr_assert_gt(with, 0);
	cr_assert_eq(without, 0, "%d io-wq threads left real-time", without);
	sample_batch_delete(sb);
}

/* The whole sampler on a fleet above the threshold: every worker polls. */
Test(sample_batch, sampler_sees_a_large_fleet_poll, .timeout = PROBE_TEST_TIMEOUT)
{
	need_io_uring();
	static struct targets t;
	struct sampler *s;
	targets_init(&t);
	for (int i = 0; i < N; i++)
		t.pids[t.npids++] = kids[i];
	struct sampler_opts o = { .rate_hz = 100, .targets = &t };
	cr_assert_eq(sampler_new(&o, &s), 0);
	for (int i = 0; i < 50; i++)
		sampler_step(s);
	struct model m;
	cr_assert_eq(model_of_sampler(s, 0, &m), 0);
	cr_assert_eq(m.n, N, "%zu workers", m.n);
	for (size_t i = 0; i < m.n; i++) {
		cr_assert_geq(m.workers[i].samples, 49, "worker %d: %u samples", m.workers[i].pid,
			      (unsigned)m.workers[i].samples);
		cr_assert_eq(m.workers[i].idle_pct, 100.0, "worker %d idle %.1f", m.workers[i].pid,
			     m.workers[i].idle_pct);
	}
	model_done(&m);
	sampler_delete(s);
	targets_done(&t);
}
