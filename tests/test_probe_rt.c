/* Pooled runtimes recognised from outside: a Go server with symbols reads GOMAXPROCS from runtime.gomaxprocs, a stripped one from its environment; tokio's workers and its blocking-pool sleeper give opposite evidence; a JVM is a JVM with Netty loops; a plain process is none. */
#include <criterion/criterion.h>

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe_rt.h"
#include "probe_stat.h"
#include "probe_syscall.h"
#include "support/children.h"
#include "support/rt_child.h"
#include "support/support.h"

static void need(const char *name)
{
	char path[600];
	if (rc_program(name, path, sizeof(path)) < 0)
		cr_skip_test("%s was not built (its toolchain was missing at build time)", path);
}

static void go_case(const char *name, enum probe_rt_cap want_from)
{
	need(name);
	int fd;
	pid_t pid = rc_spawn_go(name, 2, 0.0, &fd);
	struct probe_rt_proc p;
	cr_assert_eq(probe_rt_detect(pid, "goserver", &p), 0);
	cr_expect_eq(p.rt, PROBE_RT_GO, "runtime %s", probe_rt_name(p.rt));
	cr_expect_eq(p.capacity, 2);
	cr_expect_eq(p.from, want_from, "capacity from %s", probe_rt_cap_name(p.from));
	cr_expect(probe_rt_member(PROBE_RT_GO, "goserver"));
	tc_kill(pid);
	close(fd);
}

Test(probe_rt, go_symbols, .timeout = 30)
{
	go_case("goserver", PROBE_RT_CAP_SYMBOL);
}

Test(probe_rt, go_stripped, .timeout = 30)
{
	go_case("goserver-stripped", PROBE_RT_CAP_ENV);
}

/* A stripped Go program started without GOMAXPROCS: its CPU affinity. */
Test(probe_rt, go_affinity, .timeout = 30)
{
	need("goserver-stripped");
	char path[600];
	rc_program("goserver-stripped", path, sizeof(path));
	const char *argv[] = { path, "-busy", "0", NULL };
	int fd;
	pid_t pid = tc_spawn_argv(argv, &fd);
	usleep(300000);
	struct probe_rt_proc p;
	cr_assert_eq(probe_rt_detect(pid, "goserver-strippe", &p), 0);
	cr_expect_eq(p.rt, PROBE_RT_GO);
	cr_expect_eq(p.from, PROBE_RT_CAP_AFFINITY);
	cpu_set_t set;
	cr_assert_eq(sched_getaffinity(pid, sizeof(set), &set), 0);
	cr_expect_eq(p.capacity, CPU_COUNT(&set));
	tc_kill(pid);
	close(fd);
}

Test(probe_rt, tokio_workers_and_blocking_pool, .timeout = 60)
{
	need("tokioserver");
	int fd;
	pid_t blocking;
	pid_t pid = rc_spawn_tokio(0.0, &fd, &blocking);
	struct probe_rt_proc p;
	cr_assert_eq(probe_rt_detect(pid, "tokioserver", &p), 0);
	cr_expect_eq(p.rt, PROBE_RT_TOKIO, "runtime %s", probe_rt_name(p.rt));
	pid_t tids[32];
	int n = rc_threads_named(pid, "tokio-runtime-w", tids, 32);
	cr_assert_geq(n, 3, "2 workers and the sleeper: %d threads", n);
	/* over a second of samples, each worker parks as a worker does, the sleeper never */
	int workers = 0;
	for (int i = 0; i < n; i++) {
		struct probe_syscall sc;
		probe_syscall_open(&sc, pid, tids[i]);
		int ev = 0;
		for (int k = 0; k < 100; k++) {
			struct probe_sc_sample s;
			if (probe_syscall_sample(&sc, &s) == 0)
				ev += probe_rt_tokio_evidence(&s);
			usleep(10000);
		}
		probe_syscall_close(&sc);
		if (tids[i] == blocking)
			cr_expect_lt(ev, 0, "the spawn_blocking sleeper %d reads as a worker (%d)", (int)tids[i], ev);
		else
			workers += ev > 0;
	}
	cr_expect_eq(workers, 2, "%d threads read as workers", workers);
	tc_kill(pid);
	close(fd);
}

Test(probe_rt, jvm_netty_loops, .timeout = 60)
{
	need("netty/NettyServer.class");
	pid_t pid = rc_spawn_netty(0.1); /* a worker loop starts with its first channel */
	struct probe_rt_proc p;
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(pid, 0, &st), 0);
	cr_assert_eq(probe_rt_detect(pid, st.comm, &p), 0);
	cr_expect_eq(p.rt, PROBE_RT_JVM, "runtime %s of %s", probe_rt_name(p.rt), st.comm);
	pid_t tids[8];
	int n = 0;
	for (int i = 0; i < 50 && (n = rc_threads_named(pid, "nioEventLoopGro", tids, 8)) < 3; i++)
		usleep(100000);
	cr_expect_eq(n, 3, "the boss loop and 2 workers: %d", n);
	cr_expect(probe_rt_jvm_loop("nioEventLoopGro"));
	cr_expect(!probe_rt_jvm_loop("C2 CompilerThre"));
	tc_kill(pid);
}

Test(probe_rt, plain_process_is_none, .timeout = 10)
{
	struct probe_rt_proc p;
	cr_assert_eq(probe_rt_detect(getpid(), "test_probe_rt", &p), 0);
	cr_expect_eq(p.rt, PROBE_RT_UNKNOWN);
	cr_expect_eq(probe_rt_detect(999999999, "x", &p) < 0, 1);
}
