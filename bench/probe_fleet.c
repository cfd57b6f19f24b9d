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
 * path at the probes' level: the same batch left to choose by measurement
 * (PROBE_SC_PATH_AUTO, kept across the runs of a size as the monitor keeps
 * it). Last, the monitor's own sampler (monitor/collect/sampler.c, at 100 Hz with
 * its shortcuts, schedstat, discovery and shm reads), timed after a
 * second's warm-up, as the whole process's CPU while the main thread
 * sleeps: the headline figures, at 1000 workers, also as ratios to bare
 * preads measured in the same run on the same fleet.
 *
 * Three fleets of 1000: idle (every worker parked in epoll_wait), half
 * woken (half of them woken by a 10 ms epoll timeout, so at about every
 * tick: their schedstat always moves; on 2 cores a fleet cannot literally
 * run half the time), and instrumented (each a libfiberloop segment slot
 * whose poll_since_ns is set while it sits in epoll_wait).
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/feed.h"
#include "probe_classify.h"
#include "probe_schedstat.h"
#include "probe_syscall.h"
#include "probe_syscall_batch.h"
#include "fiberloop_stats.h"
#include "collect/sample_batch.h"
#include "collect/sampler.h"
#include "collect/targets.h"

#define HZ       100
#define SECONDS  2
#define REPS     3
#define MAX_N    1000
/* Descriptors at the instrumented fleet's peak (5007 measured before the
 * writer checks held theirs): per worker, the bench's syscall and
 * schedstat files, the sampler's two for its thread, the segment and the
 * four /proc files its writer checks hold (stat, status, /proc/PID, maps);
 * and some slack. */
#define NEED_FDS (9 * MAX_N + 64)

/* BARE_SCHEDSTAT: a bare pread of each schedstat file, the floor under any
 * check-before-read design (one small per-thread read at every tick) */
enum mode { SAMPLE, SAMPLE_SCHEDSTAT, BARE_PREAD, BARE_SCHEDSTAT, BATCH, AUTO, MONITOR, MONITOR_EVERY_TICK, NMODES };
enum fleet { IDLE, HALF_WOKEN, INSTRUMENTED };

/* a parked worker's stride doubles each second from 1 to its target
 * (collect/precision.h): 5 s reach the steady state at 100 Hz */
#define WARMUP_S 5

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

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A worker of the fleet: parked in epoll_wait for good, or woken every
 * 10 ms, or parked with a published slot that says so. */
static void worker_main(enum fleet kind, int woken, int ready_fd)
{
	int ep = epoll_create1(0);
	struct epoll_event ev;
	struct loopstat_shm_slot *slot = NULL;
	if (kind == INSTRUMENTED && !(slot = fl_stats_slot_acquire("fleet", LOOPSTAT_BACKEND_LIBEV, ep)))
		_exit(1);
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	close(ready_fd);
	for (;;) {
		if (slot)
			fl_stat_set(&slot->poll_since_ns, mono_ns());
		epoll_wait(ep, &ev, 1, woken ? 10 : -1);
	}
}

static int spawn_all(int n, enum fleet kind)
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
			worker_main(kind, kind == HALF_WOKEN && i % 2, fds[1]);
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
		for (int i = 0; i < n && (mode == BARE_PREAD || mode == BARE_SCHEDSTAT); i++) {
			char buf[256];
			int fd = mode == BARE_PREAD ? workers[i].sc.fd : workers[i].ss.fd;
			if (pread(fd, buf, sizeof(buf), 0) > 0)
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

/* what the monitor's last run measured a schedstat and a syscall-file read to cost */
static uint64_t last_check_ns, last_read_ns;
/* and how many workers it found instrumented, and the share of samples taken without a read */
static unsigned last_instrumented;
static double last_saved_pct;

/* The monitor's sampler on the fleet: CPU% of a core over SECONDS after
 * WARMUP_S (its shortcuts judge their worth over the first second, its
 * strides settle over the first few): by default (precision-targeted), or
 * with every worker sampled at every tick (precision_pts < 0). */
static double run_monitor(int n, double precision_pts)
{
	static struct targets t;
	targets_init(&t);
	for (int i = 0; i < n; i++)
		t.pids[t.npids++] = workers[i].pid;
	struct sampler_opts o = { .rate_hz = HZ, .targets = &t, .precision_pts = precision_pts };
	struct sampler *s;
	if (sampler_new(&o, &s) < 0 || sampler_start(s) < 0) {
		fprintf(stderr, "probe_fleet: cannot start the sampler\n");
		exit(1);
	}
	sleep(WARMUP_S);
	double w0 = now_s(), c0 = cpu_s();
	sleep(SECONDS);
	double pct = 100.0 * (cpu_s() - c0) / (now_s() - w0);
	sampler_read_costs(s, &last_check_ns, &last_read_ns);
	struct model m;
	last_instrumented = 0;
	last_saved_pct = 0;
	if (model_of_sampler(s, 0, &m) < 0) {
		fprintf(stderr, "probe_fleet: model_of_sampler failed: no figure\n");
		exit(1);
	}
	/* a sampler that dropped workers would read as a cheaper one */
	size_t sampled = 0;
	uint64_t nsamples = 0, saved = 0;
	for (size_t i = 0; i < m.n; i++) {
		last_instrumented += m.workers[i].instrumented;
		nsamples += m.workers[i].samples;
		saved += m.workers[i].shortcut_samples + m.workers[i].unchanged_samples;
		sampled += m.workers[i].samples > 0;
	}
	if (m.n != (size_t)n || sampled != (size_t)n) {
		fprintf(stderr, "probe_fleet: the sampler saw %zu of %d workers, %zu of them sampled: no figure\n", m.n,
			n, sampled);
		exit(1);
	}
	last_saved_pct = nsamples ? 100.0 * (double)saved / (double)nsamples : 0;
	model_done(&m);
	sampler_delete(s);
	targets_done(&t);
	return pct;
}

/* a / b; a baseline that measured nothing is no ratio: the run fails */
static double ratio(double a, double b)
{
	if (!(b > 0) || !isfinite(a)) {
		fprintf(stderr, "probe_fleet: a baseline measured %g: no figure\n", b);
		exit(1);
	}
	return a / b;
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

static const char *const mode_names[NMODES] = { "pread", "pread+schedstat", "bare pread", "bare schedstat",
						 "batch", "auto", "monitor", "monitor at every tick" };
static const char *const fleet_names[] = { "idle", "half-woken", "instrumented" };

static void open_probes(int n)
{
	for (int i = 0; i < n; i++) {
		probe_syscall_open(&workers[i].sc, workers[i].pid, workers[i].pid);
		probe_schedstat_open(&workers[i].ss, workers[i].pid, workers[i].pid);
		probes[i] = &workers[i].sc;
	}
}

static void close_probes(int n)
{
	for (int i = 0; i < n; i++) {
		probe_syscall_close(&workers[i].sc);
		probe_schedstat_close(&workers[i].ss);
	}
}

static void median_of(double pct[NMODES][REPS], double *med)
{
	for (int m = 0; m < NMODES; m++) {
		double v[REPS];
		memcpy(v, pct[m], sizeof(v));
		med[m] = median3(v);
	}
}

/* Every mode on an idle fleet of n: returns the medians in med. */
static int idle_fleet(int n, double *med)
{
	if (spawn_all(n, IDLE) < 0) {
		fprintf(stderr, "probe_fleet: cannot start %d workers: %s\n", n, strerror(errno));
		return -1;
	}
	open_probes(n);
	if (probe_sc_batch_new(SAMPLE_BATCH_SQ, &batch) < 0 || probe_sc_batch_new(SAMPLE_BATCH_SQ, &autob) < 0) {
		fprintf(stderr, "probe_fleet: probe_sc_batch_new: %s\n", strerror(ENOMEM));
		return -1;
	}
	probe_sc_batch_set_path(batch, PROBE_SC_PATH_RING);
	double pct[NMODES][REPS], poll_pct = 0, batch_poll_pct = 0, ignored;
	double thr[REPS], iowq[REPS];
	/* interleaved, so that load from other processes hits every mode alike */
	for (int r = 0; r < REPS; r++) {
		pct[SAMPLE][r] = run(n, SAMPLE, &poll_pct);
		pct[SAMPLE_SCHEDSTAT][r] = run(n, SAMPLE_SCHEDSTAT, &ignored);
		pct[BARE_PREAD][r] = run(n, BARE_PREAD, &ignored);
		pct[BARE_SCHEDSTAT][r] = run(n, BARE_SCHEDSTAT, &ignored);
		pct[BATCH][r] = run(n, BATCH, &batch_poll_pct);
		thr[r] = last_thread_pct;
		iowq[r] = last_iowq_pct;
		pct[AUTO][r] = run(n, AUTO, &ignored);
		pct[MONITOR_EVERY_TICK][r] = run_monitor(n, -1);
		pct[MONITOR][r] = run_monitor(n, 0);
	}
	median_of(pct, med);
	int auto_batch = probe_sc_batch_last_path(autob) == PROBE_SC_PATH_RING;
	printf("workers %4d at %d Hz: sampler cpu %.2f%% of a core (runs %.2f %.2f %.2f), "
	       "bare pread only %.2f%%, bare schedstat %.2f%%, with schedstat %.2f%%, %.2f us per worker-sample, "
	       "poll seen %.1f%%, %.1f context switches per tick\n",
	       n, HZ, med[SAMPLE], pct[SAMPLE][0], pct[SAMPLE][1], pct[SAMPLE][2], med[BARE_PREAD],
	       med[BARE_SCHEDSTAT], med[SAMPLE_SCHEDSTAT], med[SAMPLE] * 1e4 / (n * HZ), poll_pct, last_csw[SAMPLE]);
	printf("workers %4d at %d Hz: batch (%s) %.2f%% of a core (runs %.2f %.2f %.2f; last run: "
	       "sampling thread %.2f%% + io-wq threads %.2f%%), %.2f us per worker-sample, poll seen %.1f%%, "
	       "%.1f context switches per tick\n",
	       n, HZ, probe_sc_batch_ring(batch) == 1 ? "io_uring" : "pread fallback", med[BATCH], pct[BATCH][0],
	       pct[BATCH][1], pct[BATCH][2], thr[REPS - 1], iowq[REPS - 1], med[BATCH] * 1e4 / (n * HZ),
	       batch_poll_pct, last_csw[BATCH]);
	printf("workers %4d at %d Hz: probes' measured choice (now %s) %.2f%% of a core (runs %.2f %.2f %.2f), "
	       "%.2fx bare pread\n",
	       n, HZ, auto_batch ? "the batch" : "pread", med[AUTO], pct[AUTO][0], pct[AUTO][1], pct[AUTO][2],
	       ratio(med[AUTO], med[BARE_PREAD]));
	printf("workers %4d at %d Hz: the monitor's sampler %.2f%% of a core (runs %.2f %.2f %.2f), %.2fx bare pread "
	       "(its costs: schedstat %llu ns, syscall file %llu ns a read; %.1f%% of samples without a read)\n",
	       n, HZ, med[MONITOR], pct[MONITOR][0], pct[MONITOR][1], pct[MONITOR][2],
	       ratio(med[MONITOR], med[BARE_PREAD]), (unsigned long long)last_check_ns,
	       (unsigned long long)last_read_ns, last_saved_pct);
	printf("workers %4d at %d Hz: the monitor's sampler at every tick %.2f%% of a core (runs %.2f %.2f %.2f), "
	       "%.2fx bare pread\n",
	       n, HZ, med[MONITOR_EVERY_TICK], pct[MONITOR_EVERY_TICK][0], pct[MONITOR_EVERY_TICK][1],
	       pct[MONITOR_EVERY_TICK][2], ratio(med[MONITOR_EVERY_TICK], med[BARE_PREAD]));
	probe_sc_batch_delete(batch);
	probe_sc_batch_delete(autob);
	batch = autob = NULL;
	close_probes(n);
	reap_all(n);
	return 0;
}

/* The monitor against bare preads on another fleet of n: *monitor, *bare. */
static int other_fleet(int n, enum fleet kind, double *monitor, double *bare)
{
	if (spawn_all(n, kind) < 0) {
		fprintf(stderr, "probe_fleet: cannot start %d %s workers: %s\n", n, fleet_names[kind], strerror(errno));
		return -1;
	}
	open_probes(n);
	double pct[NMODES][REPS] = { { 0 } }, med[NMODES], ignored;
	for (int r = 0; r < REPS; r++) {
		pct[BARE_PREAD][r] = run(n, BARE_PREAD, &ignored);
		pct[MONITOR_EVERY_TICK][r] = run_monitor(n, -1);
		pct[MONITOR][r] = run_monitor(n, 0);
	}
	median_of(pct, med);
	*monitor = med[MONITOR];
	*bare = med[BARE_PREAD];
	printf("workers %4d at %d Hz, %s fleet: the monitor's sampler %.2f%% of a core (runs %.2f %.2f %.2f), "
	       "bare pread %.2f%%, %.2fx (its costs: schedstat %llu ns, syscall file %llu ns a read; %u instrumented, "
	       "%.1f%% of samples without a read)\n",
	       n, HZ, fleet_names[kind], med[MONITOR], pct[MONITOR][0], pct[MONITOR][1], pct[MONITOR][2],
	       med[BARE_PREAD], ratio(med[MONITOR], med[BARE_PREAD]),
	       (unsigned long long)last_check_ns, (unsigned long long)last_read_ns, last_instrumented, last_saved_pct);
	printf("workers %4d at %d Hz, %s fleet: the monitor's sampler at every tick %.2f%% of a core, %.2fx bare pread\n",
	       n, HZ, fleet_names[kind], med[MONITOR_EVERY_TICK],
	       ratio(med[MONITOR_EVERY_TICK], med[BARE_PREAD]));
	close_probes(n);
	reap_all(n);
	return 0;
}

/* What SIGKILLed workers left in the segment directory, and the directory. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[512];
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
			unlink(path);
	if (d)
		closedir(d);
	rmdir(dir);
}

/* No argument: everything. One fleet's name: only the monitor against bare
 * preads on 1000 workers of that fleet (for profiling one case). */
int main(int argc, char **argv)
{
	double null_ns = null_syscall_ns();
	static const int sizes[] = { 1, 10, 100, 1000 };
	double fig[NMODES] = { 0 };

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < NEED_FDS) {
		rl.rlim_cur = rl.rlim_max < NEED_FDS ? rl.rlim_max : NEED_FDS;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* the instrumented fleet's segments, and nobody else's */
	char dir[] = "/tmp/probe_fleet.XXXXXX";
	if (!mkdtemp(dir)) {
		perror("probe_fleet: mkdtemp");
		return 1;
	}
	setenv("LOOPSTAT_SHM_DIR", dir, 1);
	for (int f = IDLE; argc > 1 && f <= INSTRUMENTED; f++) {
		double mon, bare;
		if (strcmp(argv[1], fleet_names[f]) == 0) {
			int rc = other_fleet(MAX_N, (enum fleet)f, &mon, &bare);
			remove_dir(dir);
			return rc < 0;
		}
	}
	if (argc > 1) {
		fprintf(stderr, "usage: probe_fleet [idle|half-woken|instrumented]\n");
		remove_dir(dir);
		return 2;
	}
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		double med[NMODES];
		if (idle_fleet(sizes[k], med) < 0)
			return 1;
		if (sizes[k] == MAX_N)
			memcpy(fig, med, sizeof(fig));
	}
	double woken = 0, woken_bare = 0, instr = 0, instr_bare = 0;
	if (other_fleet(MAX_N, HALF_WOKEN, &woken, &woken_bare) < 0 ||
	    other_fleet(MAX_N, INSTRUMENTED, &instr, &instr_bare) < 0)
		return 1;
	remove_dir(dir);
	/* every ratio before any figure line, so a failed one prints none */
	double r_mon = ratio(fig[MONITOR], fig[BARE_PREAD]), r_tick = ratio(fig[MONITOR_EVERY_TICK], fig[BARE_PREAD]);
	double r_floor = ratio(fig[BARE_SCHEDSTAT], fig[BARE_PREAD]), r_woken = ratio(woken, woken_bare);
	double r_instr = ratio(instr, instr_bare);
	printf("null syscall (getppid) %.0f ns on this machine: %.1f%% of a core is syscall entry alone "
	       "for 1000 workers at %d Hz\n", null_ns, null_ns * 1000 * HZ / 1e7, HZ);
	printf("1000 workers:");
	for (int m = 0; m < NMODES; m++)
		printf(" %s %.2f %%%s", mode_names[m], fig[m], m + 1 < NMODES ? "," : "\n");
	/* the raw figures of the probes' paths, kept for comparison with older runs */
	printf("raw sampler_cpu_pct_1000w_100hz_pread %.2f %%\n", fig[SAMPLE]);
	printf("raw sampler_cpu_pct_1000w_100hz_probes_choice %.2f %%\n", fig[AUTO]);
	printf("figure sampler_cpu_pct_1000w_100hz %.2f %%\n", fig[MONITOR]);
	printf("figure sampler_cpu_vs_bare_pread_1000w %.2f x\n", r_mon);
	printf("raw sampler_cpu_vs_bare_pread_1000w_every_tick %.2f x\n", r_tick);
	printf("floor bare_schedstat_vs_bare_pread_1000w %.2f x (what one check per thread per tick costs at least)\n",
	       r_floor);
	printf("figure sampler_cpu_vs_bare_pread_1000w_half_woken %.2f x\n", r_woken);
	printf("figure sampler_cpu_pct_1000w_100hz_instrumented %.2f %%\n", instr);
	printf("figure sampler_cpu_vs_bare_pread_1000w_instrumented %.2f x\n", r_instr);
	return 0;
}
