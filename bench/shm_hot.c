/*
 * shm_hot.c — cost of one probe_shm_read_hot (the sampler's per-tick read
 * of an instrumented worker's poll_since_ns and current fiber/tag): through
 * the segment's read-only mapping, the default, against the pread path it
 * replaced, on the same segment in the same run.
 *
 * One real segment (libfiberloop's stats writer, this process) with SLOTS
 * ACTIVE slots held by parked threads, each running a tagged fiber; two
 * handles on it, one forced to pread. The loops alternate in rounds so that
 * machine noise hits both alike, each timed on CLOCK_THREAD_CPUTIME_ID (the
 * sampling thread's own CPU, what sampler_cpu_pct counts), reading the
 * slots in turn as a sampler does. Figures: the median per-call cost of
 * each path and their ratio, and what the mapped read costs a sampler at
 * 1000 workers and 100 Hz, in % of a core.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "shm/shm_int.h"

#define SLOTS  16
#define ROUNDS 15
#define ITERS  100000

static pthread_barrier_t parked, release;

/* Takes a slot, tags it like a worker running a fiber, stays ACTIVE until told. */
static void *worker(void *arg)
{
	(void)arg;
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("bench", LOOPSTAT_BACKEND_IO_URING, -1);
	if (!s)
		exit(1);
	fl_stat_set(&s->current_tag, fl_stats_tag_index(s, "request-handler"));
	fl_stat_set(&s->current_fiber, 42);
	fl_stat_set(&s->poll_since_ns, 1);
	pthread_barrier_wait(&parked);
	pthread_barrier_wait(&release);
	fl_stats_slot_release(s);
	return NULL;
}

static double cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double per_call_ns(struct probe_shm *shm, const struct probe_shm_worker *w, int n)
{
	struct probe_shm_hot hot;
	double t = cpu_ns();
	for (int i = 0; i < ITERS; i++)
		if (probe_shm_read_hot(shm, &w[i % n], &hot) < 0)
			exit(2);
	return (cpu_ns() - t) / ITERS;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(void)
{
	char dir[] = "/dev/shm/loopstat-bench.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
	if (fl_stats_open(NULL) < 0)
		return 1;
	pthread_t th[SLOTS];
	pthread_barrier_init(&parked, NULL, SLOTS + 1);
	pthread_barrier_init(&release, NULL, SLOTS + 1);
	for (int i = 0; i < SLOTS; i++)
		pthread_create(&th[i], NULL, worker, NULL);
	pthread_barrier_wait(&parked);

	struct probe_shm *mapped, *direct;
	struct probe_shm_worker w[SLOTS];
	if (probe_shm_open(fl_stats_path(), &mapped) < 0 || probe_shm_open(fl_stats_path(), &direct) < 0)
		return 1;
	shm_hot_use_pread(direct);
	int n = probe_shm_read(mapped, w, SLOTS, 0);
	if (n != SLOTS)
		return 1;
	per_call_ns(mapped, w, n); /* warm: maps the segment */
	if (shm_hot_map_state(mapped) != SHM_MAP_ON)
		return 3;

	double m[ROUNDS], p[ROUNDS], r[ROUNDS];
	for (int k = 0; k < ROUNDS; k++) {
		m[k] = per_call_ns(mapped, w, n);
		p[k] = per_call_ns(direct, w, n);
		r[k] = m[k] / p[k];
	}
	for (int k = 0; k < ROUNDS; k++)
		printf("round %2d: mapped %6.1f ns, pread %6.1f ns\n", k, m[k], p[k]);
	double mm = median(m, ROUNDS), pm = median(p, ROUNDS), rm = median(r, ROUNDS);
	printf("hot read, %d slots in turn: mapped %.1f ns, pread %.1f ns per call (CPU of this thread)\n", n, mm,
	       pm);

	printf("figure shm_read_hot_ns %.1f ns\n", mm);
	printf("figure shm_read_hot_pread_ns %.1f ns\n", pm);
	printf("figure shm_read_hot_vs_pread %.3f x\n", rm);
	/* 1000 workers * 100 Hz = 1e5 reads/s; ns * 1e5 / 1e9 s = fraction, * 100 = % */
	printf("figure shm_read_hot_cpu_pct_1000w_100hz %.3f %%\n", mm * 1e5 / 1e7);

	probe_shm_close(mapped);
	probe_shm_close(direct);
	pthread_barrier_wait(&release);
	for (int i = 0; i < SLOTS; i++)
		pthread_join(th[i], NULL);
	fl_stats_close();
	rmdir(dir);
	return 0;
}
