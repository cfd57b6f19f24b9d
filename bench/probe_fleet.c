/*
 * probe_fleet.c — CPU cost of sampling N sleeping workers at 100 Hz.
 *
 * Forks N = 1, 10, 100, 1000 children parked in epoll_wait, opens one
 * syscall probe per worker and samples every worker once per tick (pread +
 * parse + classify + accumulate), sleeping to absolute tick times like the
 * monitor's sampler. The sampler's CPU% is getrusage (user + sys) over the
 * wall time. Each N runs REPS times; the median is reported.
 *
 * Modes, interleaved so that load from other processes hits all alike:
 * one pread per worker (probe_syscall_sample), the same plus a schedstat
 * read, bare preads without parsing, and the batch (probe_sc_batch_sample:
 * one io_uring_enter per tick, reads done by io-wq threads, whose CPU time
 * getrusage(RUSAGE_SELF) includes), forced to the ring, and the monitor's
 * path: the same batch left to choose by measurement (PROBE_SC_PATH_AUTO,
 * kept across the runs of a size as the monitor keeps it). The headline
 * figure is the monitor's path at 1000 workers, also as a ratio to bare
 * preads measured in the same run.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_classify.h"
#include "probe_schedstat.h"
#include "probe_syscall.h"
#include "probe_syscall_batch.h"
#include "sample_batch.h"

#define HZ       100
#define SECONDS  2
#define REPS     3
#define MAX_N    1000

enum mode { SAMPLE, SAMPLE_SCHEDSTAT, BARE_PREAD, BATCH, AUTO, NMODES };

struct worker {
	pid_t pid;
	struct probe_syscall sc;
	struct probe_schedstat_file ss;
	unsigned long counts[PROBE_NO_ACCESS + 1]; /* samples per class */
};

static struct worker workers[MAX_N];
static struct probe_syscall *probes[MAX_N];
static struct probe_sc_sample samples[MAX_N];
static int rcs[MAX_N];
static struct probe_sc_batch *batch, *autob; /* forced to the ring; left to measure */
/* batch mode only: CPU of the sampling thread and of its io-wq threads, % of a core */
static double last_thread_pct, last_iowq_pct;
/* every mode: context switches of the whole process per tick, last run */
static double last_csw[NMODES];

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long csw(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int spawn_all(int n)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return -1;
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(fds[0]);
			int ep = epoll_create1(0);
			struct epoll_event ev;
			if (write(fds[1], "r", 1) != 1)
				_exit(1);
			close(fds[1]);
			for (;;)
				epoll_wait(ep, &ev, 1, -1);
		}
		workers[i].pid = pid;
	}
	close(fds[1]);
	for (int got = 0; got < n;) {
		char buf[256];
		ssize_t r = read(fds[0], buf, sizeof(buf));
		if (r <= 0)
			return -1;
		got += (int)r;
	}
	close(fds[0]);
	return 0;
}

static void reap_all(int n)
{
	for (int i = 0; i < n; i++)
		kill(workers[i].pid, SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(workers[i].pid, NULL, 0);
}


static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double iowq_cpu_s(void)
{
	uint64_t ns = 0;
	probe_sc_batch_iowq_cpu_ns(batch, &ns);
	return ns / 1e9;
}

static void sample_batch_tick(struct probe_sc_batch *b, int n)
{
	probe_sc_batch_sample(b, probes, (size_t)n, samples, rcs);
	for (int i = 0; i < n; i++) {
		struct probe_verdict v;
		if (rcs[i] < 0)
			continue;
		probe_classify(&samples[i], -1, &v);
		workers[i].counts[v.cls]++;
	}
}

/* One run: returns the sampler's CPU% of one core. */
static double run(int n, enum mode mode, double *poll_pct)
{
	struct timespec next;
	unsigned long polls = 0, total = 0;
	int ticks = HZ * SECONDS;

	for (int i = 0; i < n; i++)
		memset(workers[i].counts, 0, sizeof(workers[i].counts));
	clock_gettime(CLOCK_MONOTONIC, &next);
	double t0 = thread_cpu_s(), q0 = mode == BATCH ? iowq_cpu_s() : 0;
	long s0 = csw();
	double w0 = now_s(), c0 = cpu_s();
	for (int t = 0; t < ticks; t++) {
		if (mode == BATCH || mode == AUTO)
			sample_batch_tick(mode == BATCH ? batch : autob, n);
		for (int i = 0; i < n && mode == BARE_PREAD; i++) {
			char buf[256];
			if (pread(workers[i].sc.fd, buf, sizeof(buf), 0) > 0)
				workers[i].counts[PROBE_POLL]++;
		}
		for (int i = 0; i < n && (mode == SAMPLE || mode == SAMPLE_SCHEDSTAT); i++) {
			struct probe_sc_sample s;
			struct probe_verdict v;
			if (probe_syscall_sample(&workers[i].sc, &s) < 0)
				continue;
			probe_classify(&s, -1, &v);
			workers[i].counts[v.cls]++;
			if (mode == SAMPLE_SCHEDSTAT) {
				struct probe_schedstat st;
				probe_schedstat_sample(&workers[i].ss, &st);
			}
		}
		next.tv_nsec += 1000000000L / HZ;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	double wall = now_s() - w0, cpu = cpu_s() - c0;
	last_csw[mode] = (double)(csw() - s0) / ticks;
	if (mode == BATCH) {
		last_thread_pct = 100.0 * (thread_cpu_s() - t0) / wall;
		last_iowq_pct = 100.0 * (iowq_cpu_s() - q0) / wall;
	}
	for (int i = 0; i < n; i++) {
		polls += workers[i].counts[PROBE_POLL];
		for (int c = 0; c <= PROBE_NO_ACCESS; c++)
			total += workers[i].counts[c];
	}
	*poll_pct = total ? 100.0 * polls / total : 0;
	return 100.0 * cpu / wall;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median3(double *v)
{
	qsort(v, REPS, sizeof(*v), cmp_double);
	return v[REPS / 2];
}

/* The floor under any one-read-per-sample design: a syscall that does
 * nothing, in CPU time (like the sampler's figure), not wall time. */
static double null_syscall_ns(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	for (int i = 0; i < 200000; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	return ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 200000;
}

static const char *const mode_names[NMODES] = { "pread", "pread+schedstat", "bare pread", "batch", "auto" };

int main(void)
{
	double null_ns = null_syscall_ns();
	static const int sizes[] = { 1, 10, 100, 1000 };
	double fig[NMODES] = { 0 };

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2 * MAX_N + 64) {
		rl.rlim_cur = rl.rlim_max < 2 * MAX_N + 64 ? rl.rlim_max : 2 * MAX_N + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		int n = sizes[k];
		if (spawn_all(n) < 0) {
			fprintf(stderr, "probe_fleet: cannot start %d workers: %s\n", n, strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			probe_syscall_open(&workers[i].sc, workers[i].pid, workers[i].pid);
			probe_schedstat_open(&workers[i].ss, workers[i].pid, workers[i].pid);
			probes[i] = &workers[i].sc;
		}
		if (probe_sc_batch_new(SAMPLE_BATCH_SQ, &batch) < 0 || probe_sc_batch_new(SAMPLE_BATCH_SQ, &autob) < 0) {
			fprintf(stderr, "probe_fleet: probe_sc_batch_new: %s\n", strerror(ENOMEM));
			return 1;
		}
		probe_sc_batch_set_path(batch, PROBE_SC_PATH_RING);
		double pct[NMODES][REPS], med[NMODES], poll_pct = 0, batch_poll_pct = 0, ignored;
		double thr[REPS], iowq[REPS];
		/* interleaved, so that load from other processes hits every mode alike */
		for (int r = 0; r < REPS; r++) {
			pct[SAMPLE][r] = run(n, SAMPLE, &poll_pct);
			pct[SAMPLE_SCHEDSTAT][r] = run(n, SAMPLE_SCHEDSTAT, &ignored);
			pct[BARE_PREAD][r] = run(n, BARE_PREAD, &ignored);
			pct[BATCH][r] = run(n, BATCH, &batch_poll_pct);
			thr[r] = last_thread_pct;
			iowq[r] = last_iowq_pct;
			pct[AUTO][r] = run(n, AUTO, &ignored);
		}
		for (int m = 0; m < NMODES; m++) {
			double v[REPS];
			memcpy(v, pct[m], sizeof(v));
			med[m] = median3(v);
		}
		int monitor_batch = probe_sc_batch_last_path(autob) == PROBE_SC_PATH_RING;
		printf("workers %4d at %d Hz: sampler cpu %.2f%% of a core (runs %.2f %.2f %.2f), "
		       "bare pread only %.2f%%, with schedstat %.2f%%, %.2f us per worker-sample, poll seen %.1f%%, "
		       "%.1f context switches per tick\n",
		       n, HZ, med[SAMPLE], pct[SAMPLE][0], pct[SAMPLE][1], pct[SAMPLE][2], med[BARE_PREAD],
		       med[SAMPLE_SCHEDSTAT], med[SAMPLE] * 1e4 / (n * HZ), poll_pct, last_csw[SAMPLE]);
		printf("workers %4d at %d Hz: batch (%s) %.2f%% of a core (runs %.2f %.2f %.2f; last run: "
		       "sampling thread %.2f%% + io-wq threads %.2f%%), %.2f us per worker-sample, poll seen %.1f%%, "
		       "%.1f context switches per tick; the monitor uses %s here\n",
		       n, HZ, probe_sc_batch_ring(batch) == 1 ? "io_uring" : "pread fallback", med[BATCH],
		       pct[BATCH][0], pct[BATCH][1], pct[BATCH][2], thr[REPS - 1], iowq[REPS - 1],
		       med[BATCH] * 1e4 / (n * HZ), batch_poll_pct, last_csw[BATCH], monitor_batch ? "the batch" : "pread");
		printf("workers %4d at %d Hz: monitor's path (measured choice, now %s) %.2f%% of a core (runs %.2f %.2f "
		       "%.2f), %.2fx bare pread\n",
		       n, HZ, monitor_batch ? "the batch" : "pread", med[AUTO], pct[AUTO][0], pct[AUTO][1], pct[AUTO][2],
		       med[BARE_PREAD] > 0 ? med[AUTO] / med[BARE_PREAD] : 0);
		probe_sc_batch_delete(batch);
		probe_sc_batch_delete(autob);
		batch = autob = NULL;
		for (int i = 0; i < n; i++) {
			probe_syscall_close(&workers[i].sc);
			probe_schedstat_close(&workers[i].ss);
		}
		reap_all(n);
		if (n == 1000)
			memcpy(fig, med, sizeof(fig));
	}
	printf("null syscall (getppid) %.0f ns on this machine: %.1f%% of a core is syscall entry alone "
	       "for 1000 workers at %d Hz\n", null_ns, null_ns * 1000 * HZ / 1e7, HZ);
	printf("1000 workers:");
	for (int m = 0; m < NMODES; m++)
		printf(" %s %.2f %%%s", mode_names[m], fig[m], m + 1 < NMODES ? "," : "\n");
	/* the raw figure of the one-pread-per-sample path, kept for comparison with older runs */
	printf("raw sampler_cpu_pct_1000w_100hz_pread %.2f %%\n", fig[SAMPLE]);
	printf("figure sampler_cpu_pct_1000w_100hz %.2f %%\n", fig[AUTO]);
	printf("figure sampler_cpu_vs_bare_pread_1000w %.2f x\n", fig[BARE_PREAD] > 0 ? fig[AUTO] / fig[BARE_PREAD] : 0);
	return 0;
}
