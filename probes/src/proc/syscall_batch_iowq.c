/*
 * syscall_batch_iowq.c — the io-wq threads that read for a batch: their
 * CPU time and their scheduling policy.
 *
 * io_uring names each io-wq thread "iou-wrk-<tid>" after the task whose
 * requests it serves, which is how a batch finds its own (and not those of
 * a runtime's ring elsewhere in the process). They are threads of this
 * process, so getrusage(RUSAGE_SELF) counts them but the submitting
 * thread's CPU clock does not; and the kernel lets a thread read the CPU
 * clock of, and set the policy of, any thread of its own group.
 *
 * This looks at /proc/self, never at the configurable proc root: that
 * root names the targets' /proc (a fixture tree in tests), not ours.
 */
#include "probe_syscall_batch.h"
#include "syscall_batch_int.h"
#include "probe_proc.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The CPU clock of thread tid (CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD_MASK,
 * as glibc's pthread_getcpuclockid builds it from a tid). */
static clockid_t thread_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid << 3) | 6);
}

typedef void (*iowq_fn)(struct probe_sc_batch *b, pid_t tid, void *arg);

static int for_each_iowq(struct probe_sc_batch *b, iowq_fn fn, void *arg)
{
	char want[32], path[64], comm[32];
	if (b->ring_ok != 1 || !b->submitter)
		return 0; /* no ring, or nothing submitted yet: no io-wq threads */
	snprintf(want, sizeof(want), "iou-wrk-%d\n", (int)b->submitter);
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid <= 0 || tid == b->submitter)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
		if (probe_read_file(path, comm, sizeof(comm)) > 0 && strcmp(comm, want) == 0)
			fn(b, tid, arg);
	}
	closedir(d);
	return 0;
}

static void add_cpu(struct probe_sc_batch *b, pid_t tid, void *arg)
{
	struct iowq_seen *now = arg;
	struct timespec ts;
	if (clock_gettime(thread_clock(tid), &ts) < 0)
		return; /* exited since the scan */
	uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec, before = 0;
	for (int i = 0; i < b->nseen; i++)
		if (b->seen[i].tid == tid)
			before = b->seen[i].cpu_ns;
	/* a thread first seen now counts from its birth: it was born for us;
	 * a clock that went back is a reused tid, counted from its birth too */
	b->iowq_total += ns >= before ? ns - before : ns;
	for (int i = 0; i < IOWQ_TRACK_MAX; i++)
		if (!now[i].tid) {
			now[i].tid = tid;
			now[i].cpu_ns = ns;
			break;
		}
}

int probe_sc_batch_iowq_cpu_ns(struct probe_sc_batch *b, uint64_t *ns)
{
	struct iowq_seen now[IOWQ_TRACK_MAX] = { 0 };
	int r = for_each_iowq(b, add_cpu, now);
	if (r == 0) {
		/* threads gone since the last call keep what was counted of them */
		memcpy(b->seen, now, sizeof(now));
		for (b->nseen = 0; b->nseen < IOWQ_TRACK_MAX && now[b->nseen].tid; b->nseen++)
			;
	}
	*ns = b->iowq_total;
	return r;
}

struct setsched {
	int policy;
	struct sched_param sp;
	int err;
};

static void set_one(struct probe_sc_batch *b, pid_t tid, void *arg)
{
	struct setsched *s = arg;
	(void)b;
	/* ESRCH: it exited since the scan, nothing to set */
	if (sched_setscheduler(tid, s->policy, &s->sp) < 0 && errno != ESRCH && !s->err)
		s->err = -errno;
}

int probe_sc_batch_iowq_setsched(struct probe_sc_batch *b, int policy, int priority)
{
	struct setsched s = { .policy = policy, .sp = { .sched_priority = priority } };
	int r = for_each_iowq(b, set_one, &s);
	return r < 0 ? r : s.err;
}
