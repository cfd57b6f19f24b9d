/*
 * rt.c — which pooled runtime a process runs (probe_rt.h), and what a
 * pooled thread's sample says about the pool's capacity.
 */
#include "probe_rt.h"
#include "probe_classify.h"
#include "probe_discover.h"
#include "probe_proc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#define RT_THREADS_LOOKED 256   /* thread names read to recognise a process at most */

const char *probe_rt_name(enum probe_rt rt)
{
	switch (rt) {
	case PROBE_RT_GO:    return "go";
	case PROBE_RT_TOKIO: return "tokio";
	case PROBE_RT_JVM:   return "jvm";
	case PROBE_RT_NODE:  return "node";
	case PROBE_RT_PYTHON: return "python";
	case PROBE_RT_RUBY:  return "ruby";
	case PROBE_RT_FIBERLOOP: return "fiberloop";
	default:             return "unknown";
	}
}

const char *probe_rt_cap_name(enum probe_rt_cap from)
{
	switch (from) {
	case PROBE_RT_CAP_SYMBOL:   return "runtime.gomaxprocs";
	case PROBE_RT_CAP_ENV:      return "GOMAXPROCS";
	case PROBE_RT_CAP_AFFINITY: return "cpu affinity";
	case PROBE_RT_CAP_THREADS:  return "threads";
	default:                    return "-";
	}
}

static int is_tokio_thread(const char *comm)
{
	return !strncmp(comm, "tokio-runtime-w", 15);
}

/* A ForkJoinPool's workers: "ForkJoinPool-1-worker-1" and the common
 * pool's "ForkJoinPool.commonPool-worker-1", both truncated to 15. */
static int is_fjp_thread(const char *comm)
{
	return !strncmp(comm, "ForkJoinPool", 12);
}

int probe_rt_member(enum probe_rt rt, const char *thread_comm)
{
	switch (rt) {
	case PROBE_RT_GO:    return 1; /* every thread is an M */
	case PROBE_RT_TOKIO: return is_tokio_thread(thread_comm);
	case PROBE_RT_JVM:   return is_fjp_thread(thread_comm);
	default:             return 0;
	}
}

/* A tokio runtime names its threads, not its process: look at them. */
static int has_tokio_thread(pid_t pid)
{
	pid_t tids[RT_THREADS_LOOKED];
	int n = probe_discover_threads(pid, tids, RT_THREADS_LOOKED);
	struct probe_stat st;
	for (int i = 0; i < n && i < RT_THREADS_LOOKED; i++)
		if (probe_stat_read(pid, tids[i], &st) == 0 && is_tokio_thread(st.comm))
			return 1;
	return n < 0 ? n : 0;
}

static int is_java(const char *comm)
{
	return !strcmp(comm, "java");
}

int probe_rt_detect(pid_t pid, const char *comm, struct probe_rt_proc *out)
{
	memset(out, 0, sizeof(*out));
	int r = probe_rt_go_exe(pid, out);
	if (r == -ESRCH)
		return r;
	if (r == 1)
		return probe_rt_go_capacity(pid, out) == -ESRCH ? -ESRCH : 0;
	if (is_java(comm)) {
		out->rt = PROBE_RT_JVM;
		out->from = PROBE_RT_CAP_THREADS;
		return 0;
	}
	r = has_tokio_thread(pid);
	if (r == 1) {
		out->rt = PROBE_RT_TOKIO;
		out->from = PROBE_RT_CAP_THREADS;
	} else if (!strcmp(comm, "node")) {
		out->rt = PROBE_RT_NODE;
	} else if (!strncmp(comm, "python", 6)) {
		out->rt = PROBE_RT_PYTHON;
	} else if (!strncmp(comm, "ruby", 4)) {
		out->rt = PROBE_RT_RUBY;
	}
	return r < 0 ? r : 0;
}

/* The waits a pooled thread parks in. */
static int is_park(long nr)
{
	return nr == SYS_futex || probe_syscall_is_epoll_wait(nr);
}

enum probe_rt_state probe_rt_state_of(enum probe_rt rt, const struct probe_sc_sample *s)
{
	switch (s->state) {
	case PROBE_SC_RUNNING:
	case PROBE_SC_NOT_IN_SYSCALL: /* a page fault or a stop while running its code */
		return PROBE_RT_RUNNING;
	case PROBE_SC_IN_SYSCALL:
		/* an M in a syscall hands its P on (entersyscall; sysmon retakes
		 * it): whatever it waits in, the P is not its to hold */
		if (rt == PROBE_RT_GO)
			return PROBE_RT_IDLE;
		return is_park(s->nr) ? PROBE_RT_IDLE : PROBE_RT_BLOCKED;
	default:
		return PROBE_RT_UNSEEN;
	}
}
