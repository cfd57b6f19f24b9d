/*
 * shm_hostile.c — what hostile segment files cost the reader.
 *
 * In a private directory under /dev/shm: one real segment (this process,
 * one ACTIVE slot) and JUNK junk files (a third each: suffixed garbage
 * claiming this pid, legacy names of free pids, non-segment names). Times
 * probe_shm_scan with the sampler's callback (open every candidate): the
 * first scan (every junk file validated once), a re-scan that lists the
 * directory again, and a re-scan of the unchanged directory; the baseline
 * is a scan of the same directory holding only the real segment. Then the
 * cost of one probe_shm_read of a 1 GiB sparse segment and of a segment of
 * 1024 ACTIVE phantom slots, against a read of the real 64-slot segment.
 * Last, a flood: FLOOD well-formed segment files naming OWNERS live
 * processes that map none of them, scanned as the sampler scans
 * (probe_shm_scan_mapped) and, renamed so that nothing remembers them, as
 * a scan that validates every file does.
 */
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "probe_stat.h"

#define JUNK   100000
#define READS  2000
#define FLOOD  100000
#define OWNERS 20

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int open_each(const char *path, pid_t pid, void *arg)
{
	(void)pid;
	struct probe_shm *shm;
	(*(int *)arg)++;
	if (probe_shm_open(path, &shm) == 0)
		probe_shm_close(shm);
	return 0;
}

static double scan_ms(const char *dir, int *calls)
{
	*calls = 0;
	double t = now();
	probe_shm_scan(dir, open_each, calls);
	return (now() - t) * 1e3;
}

static int rm(const char *p, const struct stat *st, int f, struct FTW *w)
{
	(void)st, (void)f, (void)w;
	return remove(p);
}

/* A legacy-named segment for this process with `active` phantom slots
 * (slot 0 names this thread) in a file of file_size bytes. */
static void forge(const char *path, uint32_t slot_size, uint32_t slots, off_t file_size, uint32_t active)
{
	struct probe_stat st;
	probe_stat_read(getpid(), 0, &st);
	struct loopstat_shm_header h = {
		.magic = LOOPSTAT_SHM_MAGIC, .abi_major = LOOPSTAT_SHM_ABI_MAJOR, .abi_minor = LOOPSTAT_SHM_ABI_MINOR,
		.byte_order = LOOPSTAT_SHM_BYTE_ORDER, .header_size = sizeof(h), .slot_size = slot_size,
		.slot_count = slots, .pid = getpid(), .start_time = st.start_time, .ready = 1,
	};
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, file_size) < 0 || pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		exit(1);
	char *buf = calloc(1, slot_size);
	for (uint32_t i = 0; i < active; i++) {
		struct loopstat_shm_slot *s = (void *)buf;
		s->state = LOOPSTAT_SLOT_ACTIVE;
		s->tid = i ? (pid_t)(0x3fff0000 + i) : gettid();
		if (pwrite(fd, buf, slot_size, (off_t)sizeof(h) + (off_t)i * slot_size) != (ssize_t)slot_size)
			exit(1);
	}
	free(buf);
	close(fd);
}

/* A well-formed one-slot segment of live process pid, which maps none. */
static void forge_for(const char *path, pid_t pid)
{
	struct probe_stat st;
	if (probe_stat_read(pid, 0, &st) < 0)
		exit(1);
	struct loopstat_shm_header h = {
		.magic = LOOPSTAT_SHM_MAGIC, .abi_major = LOOPSTAT_SHM_ABI_MAJOR, .abi_minor = LOOPSTAT_SHM_ABI_MINOR,
		.byte_order = LOOPSTAT_SHM_BYTE_ORDER, .header_size = sizeof(h),
		.slot_size = sizeof(struct loopstat_shm_slot), .slot_count = 1, .pid = pid,
		.start_time = st.start_time, .ready = 1,
	};
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)(sizeof(h) + sizeof(struct loopstat_shm_slot))) < 0 ||
	    pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		exit(1);
	close(fd);
}

static double scan_mapped_ms(const char *dir, int *calls)
{
	*calls = 0;
	double t = now();
	probe_shm_scan_mapped(dir, open_each, NULL, calls);
	return (now() - t) * 1e3;
}

/* The flood's figures: the sampler's scans, and a scan validating each file. */
static void flood(void)
{
	char dir[] = "/dev/shm/loopstat-flood.XXXXXX", p[600], q[600];
	if (!mkdtemp(dir))
		exit(1);
	pid_t owner[OWNERS];
	for (int i = 0; i < OWNERS; i++)
		if ((owner[i] = fork()) == 0) {
			pause();
			_exit(0);
		}
	for (int i = 0; i < FLOOD; i++) {
		snprintf(p, sizeof(p), "%s/loopstat.%d.f%x", dir, (int)owner[i % OWNERS], i);
		forge_for(p, owner[i % OWNERS]);
	}
	int c1, c2, c3, c4;
	struct probe_shm_scan_counts counts;
	double first = scan_mapped_ms(dir, &c1);
	probe_shm_scan_counts(&counts);
	double second = scan_mapped_ms(dir, &c2); /* the directory is new: listed again */
	sleep(1); /* settled: the listing can be kept */
	scan_mapped_ms(dir, &c3);
	double steady = scan_mapped_ms(dir, &c3);
	for (int i = 0; i < FLOOD; i++) {
		snprintf(p, sizeof(p), "%s/loopstat.%d.f%x", dir, (int)owner[i % OWNERS], i);
		snprintf(q, sizeof(q), "%s/loopstat.%d.g%x", dir, (int)owner[i % OWNERS], i);
		if (rename(p, q) < 0)
			exit(1);
	}
	double every = scan_ms(dir, &c4);
	printf("flood of %d segments naming %d live processes that map none: sampler's scan first %.1f ms "
	       "(%d validations, %zu refused, %zu unchecked), re-listed %.1f ms (%d), unchanged %.3f ms (%d); "
	       "validating each file: %.1f ms (%d)\n",
	       FLOOD, OWNERS, first, c1, counts.refused, counts.unchecked, second, c2, steady, c3, every, c4);
	printf("figure shm_flood_100k_first_ms %.1f ms\n", first);
	printf("figure shm_flood_100k_relist_ms %.1f ms\n", second);
	printf("figure shm_flood_100k_steady_ms %.3f ms\n", steady);
	printf("figure shm_flood_100k_validate_each_ms %.1f ms\n", every);
	printf("figure shm_flood_100k_first_vs_validate_each %.3f x\n", first / every);
	for (int i = 0; i < OWNERS; i++) {
		kill(owner[i], SIGKILL);
		waitpid(owner[i], NULL, 0);
	}
	nftw(dir, rm, 16, FTW_DEPTH | FTW_PHYS);
}

static double read_us(const char *path, struct probe_shm_read_info *info)
{
	struct probe_shm *shm;
	struct probe_shm_worker w[4];
	if (probe_shm_open(path, &shm) < 0)
		exit(1);
	double t = now();
	for (int i = 0; i < READS; i++)
		probe_shm_read(shm, w, 4, 0);
	double us = (now() - t) * 1e6 / READS;
	probe_shm_last_read(shm, info);
	probe_shm_close(shm);
	return us;
}

int main(void)
{
	char dir[] = "/dev/shm/loopstat-bench.XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
	if (!fl_stats_slot_acquire("real", LOOPSTAT_BACKEND_LIBEV, -1))
		return 1;
	int calls;
	scan_ms(dir, &calls);
	sleep(1); /* let the directory settle, as it would between sweeps */
	double base = scan_ms(dir, &calls);
	double base2 = scan_ms(dir, &calls);
	base = base < base2 ? base : base2;

	char p[600];
	for (int i = 0; i < JUNK; i++) {
		if (i % 3 == 0)
			snprintf(p, sizeof(p), "%s/loopstat.%d.%x", dir, (int)getpid(), i);
		else if (i % 3 == 1)
			snprintf(p, sizeof(p), "%s/loopstat.%d", dir, 4194304 + i);
		else
			snprintf(p, sizeof(p), "%s/loopstat.%dx", dir, i);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || write(fd, "junk", 4) != 4)
			return 1;
		close(fd);
	}
	int c1, c2, c3;
	double first = scan_ms(dir, &c1);
	double relist = scan_ms(dir, &c2);
	double steady = scan_ms(dir, &c3);
	printf("scan, real segment only: %.3f ms\n", base);
	printf("scan with %d junk files: first %.1f ms (%d calls), re-list %.1f ms (%d calls), "
	       "unchanged directory %.3f ms (%d calls), %zu files remembered\n",
	       JUNK, first, c1, relist, c2, steady, c3, probe_shm_cache_size());

	struct probe_shm_read_info info;
	double real = read_us(fl_stats_path(), &info);
	printf("read, real 64-slot segment: %.1f us (%zu bytes)\n", real, info.bytes);
	char forged[600];
	snprintf(forged, sizeof(forged), "%s/loopstat.%d", dir, (int)getpid());
	forge(forged, 1024, 65000, (off_t)1 << 30, 1);
	double sparse = read_us(forged, &info);
	printf("read, 1 GiB sparse segment (65000 slots claimed): %.1f us (%zu bytes)\n", sparse, info.bytes);
	forge(forged, sizeof(struct loopstat_shm_slot), 1024, (off_t)(128 + 1024 * sizeof(struct loopstat_shm_slot)),
	      1024);
	double phantom = read_us(forged, &info);
	printf("read, 1024 ACTIVE phantom slots: %.1f us (%zu bytes, %u rejected)\n", phantom, info.bytes,
	       info.rejected);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("maxrss %ld KiB\n", ru.ru_maxrss);

	printf("figure shm_scan_100k_junk_first_ms %.1f ms\n", first);
	printf("figure shm_scan_100k_junk_relist_ms %.1f ms\n", relist);
	printf("figure shm_scan_100k_junk_steady_ms %.3f ms\n", steady);
	printf("figure shm_scan_100k_junk_steady_vs_clean %.2f x\n", steady / base);
	printf("figure shm_read_sparse_1g_us %.1f us\n", sparse);
	printf("figure shm_read_sparse_1g_vs_real %.2f x\n", sparse / real);
	printf("figure shm_read_phantom_1024_us %.1f us\n", phantom);
	printf("figure shm_read_phantom_1024_vs_real %.2f x\n", phantom / real);
	fl_stats_close();
	nftw(dir, rm, 16, FTW_DEPTH | FTW_PHYS);
	/* in a process of its own: nothing the scans above remember helps it */
	fflush(stdout);
	pid_t f = fork();
	if (f == 0) {
		flood();
		fflush(stdout);
		_exit(0);
	}
	int status;
	waitpid(f, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
