/* Table reads through the segment's mapping: pread's workers and values, the seqlock kept, no read or stat call, truncation caught. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "shm/shm_int.h"
#include "support/support.h"

#define THREADS 5   /* with the main thread's, slots past the first 4 KiB page */
#define MAXW    16

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("shmtable");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	fl_stats_close();
	ts_rmtree_free(dir);
}

TestSuite(shm_table_map, .init = setup, .fini = teardown, .timeout = 30);

/* Loop threads of the real stats writer: each holds one slot until told. */
struct holder {
	pthread_t th;
	int idx;
	struct loopstat_shm_slot *slot;
};
static pthread_barrier_t ready, done;

static void *hold(void *arg)
{
	struct holder *h = arg;
	char tag[16];
	snprintf(tag, sizeof(tag), "loop%d", h->idx);
	h->slot = fl_stats_slot_acquire(tag, h->idx % 2 ? LOOPSTAT_BACKEND_LIBEV : LOOPSTAT_BACKEND_IO_URING,
					10 + h->idx);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&done);
	fl_stats_slot_release(h->slot);
	return NULL;
}

static void start_holders(struct holder *h)
{
	cr_assert_eq(pthread_barrier_init(&ready, NULL, THREADS + 1), 0);
	cr_assert_eq(pthread_barrier_init(&done, NULL, THREADS + 1), 0);
	for (int i = 0; i < THREADS; i++) {
		h[i].idx = i;
		cr_assert_eq(pthread_create(&h[i].th, NULL, hold, &h[i]), 0);
	}
	pthread_barrier_wait(&ready);
	for (int i = 0; i < THREADS; i++)
		cr_assert(h[i].slot, "holder %d has a slot", i);
}

static void stop_holders(struct holder *h)
{
	pthread_barrier_wait(&done);
	for (int i = 0; i < THREADS; i++)
		pthread_join(h[i].th, NULL);
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&done);
}

static struct probe_shm *open_path(const char *path)
{
	struct probe_shm *shm;
	int err = probe_shm_open(path, &shm);
	cr_assert_eq(err, 0, "probe_shm_open(%s): %s", path, strerror(-err));
	return shm;
}

/* A handle whose table reads go through the mapping (made by a hot read). */
static struct probe_shm *open_mapped(const char *path)
{
	struct probe_shm *shm = open_path(path);
	struct probe_shm_worker w[MAXW];
	struct probe_shm_hot hot;
	cr_assert_gt(probe_shm_read(shm, w, MAXW, 0), 0);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_UNTRIED, "a table read does not map");
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), 0);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_ON);
	return shm;
}

static struct probe_shm *open_direct(const char *path)
{
	struct probe_shm *shm = open_path(path);
	struct probe_shm_worker w[MAXW];
	shm_hot_use_pread(shm);
	/* a read as open_mapped makes: the first run is sized by the last read */
	cr_assert_gt(probe_shm_read(shm, w, MAXW, 0), 0);
	return shm;
}

/* The same table read through both handles: the same workers, byte for
 * byte, and the same account of the read. Returns the count. */
static int expect_same(struct probe_shm *mapped, struct probe_shm *direct, int include_exited, int want)
{
	struct probe_shm_worker a[MAXW], b[MAXW];
	struct probe_shm_read_info ia, ib;
	memset(a, 0x55, sizeof(a));
	memset(b, 0x55, sizeof(b));
	int na = probe_shm_read(mapped, a, MAXW, include_exited), nb = probe_shm_read(direct, b, MAXW, include_exited);
	cr_assert_eq(na, want, "mapped read: %d, want %d", na, want);
	cr_assert_eq(nb, want, "pread read: %d, want %d", nb, want);
	for (int i = 0; i < na; i++) {
		cr_assert_eq(a[i].tid, b[i].tid, "worker %d", i);
		cr_assert_eq(a[i].slot, b[i].slot, "worker %d", i);
		cr_assert_str_eq(a[i].tag, b[i].tag);
		cr_assert_str_eq(a[i].fiber_tag, b[i].fiber_tag);
		for (int v = 0; v < PROBE_SHM_NVALUES; v++)
			cr_assert_eq(a[i].values[v], b[i].values[v], "worker %d value %s", i, probe_shm_values[v].name);
		cr_assert_eq(memcmp(&a[i], &b[i], sizeof(a[i])), 0, "worker %d differs", i);
	}
	probe_shm_last_read(mapped, &ia);
	probe_shm_last_read(direct, &ib);
	cr_assert_eq(ia.rejected, ib.rejected);
	cr_assert_eq(ia.slots, ib.slots);
	cr_assert_eq(ia.over_budget, ib.over_budget);
	cr_assert_eq(ia.bytes, ib.bytes);
	cr_assert_eq(shm_hot_map_state(mapped), SHM_MAP_ON, "the mapped handle stays mapped");
	cr_assert_eq(shm_hot_map_state(direct), SHM_MAP_OFF);
	return na;
}

/* Sets distinct values in every counter and gauge of a slot. */
static void fill(struct loopstat_shm_slot *s, uint64_t base)
{
	uint64_t k = 0;
#define FILL_X(n, kd, u, d) fl_stat_set(&s->n, base + k++);
	LOOPSTAT_SLOT_VALUES(FILL_X)
#undef FILL_X
	fl_stat_set(&s->current_tag, fl_stats_tag_index(s, "req"));
}

Test(shm_table_map, mapped_table_read_equals_pread)
{
	struct holder h[THREADS];
	struct loopstat_shm_slot *own = fl_stats_slot_acquire("main", LOOPSTAT_BACKEND_IO_URING, 7);
	cr_assert(own);
	start_holders(h);
	/* the same thread's second ACTIVE slot is refused; released, it is EXITED */
	struct loopstat_shm_slot *dup = fl_stats_slot_acquire("dup", LOOPSTAT_BACKEND_LIBEV, 8);
	cr_assert(dup);
	struct probe_shm *mapped = open_mapped(fl_stats_path()), *direct = open_direct(fl_stats_path());
	expect_same(mapped, direct, 0, THREADS + 1);
	struct probe_shm_read_info info;
	probe_shm_last_read(mapped, &info);
	cr_assert_eq(info.rejected, 1, "the duplicate tid's slot");
	fl_stats_slot_release(dup);
	expect_same(mapped, direct, 1, THREADS + 2);
	expect_same(mapped, direct, 0, THREADS + 1);

	fill(own, 1000);
	for (int i = 0; i < THREADS; i++)
		fill(h[i].slot, 2000 + 100 * (uint64_t)i);
	expect_same(mapped, direct, 0, THREADS + 1);
	struct probe_shm_worker w[MAXW];
	cr_assert_eq(probe_shm_read(mapped, w, MAXW, 0), THREADS + 1);
	cr_assert_eq(w[0].values[PROBE_SHM_switches], 1000, "the values are the writer's");
	cr_assert_str_eq(w[0].fiber_tag, "req");
	/* the buffer bounds the copy, not the count */
	cr_assert_eq(probe_shm_read(mapped, w, 2, 0), THREADS + 1);

	stop_holders(h);
	expect_same(mapped, direct, 0, 1);
	expect_same(mapped, direct, 1, THREADS + 2);
	probe_shm_close(mapped);
	probe_shm_close(direct);
}

/* An odd generation (a slot being reset) makes the mapped read retry and
 * give up as pread does; even again, it reads. */
Test(shm_table_map, odd_generation_is_retried_then_refused)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("gen", LOOPSTAT_BACKEND_LIBEV, 3);
	cr_assert(s);
	struct probe_shm *mapped = open_mapped(fl_stats_path()), *direct = open_direct(fl_stats_path());
	int fd = open(fl_stats_path(), O_RDWR);
	cr_assert_geq(fd, 0);
	off_t at = offsetof(struct loopstat_shm_header, generation);
	uint64_t gen, odd;
	cr_assert_eq(pread(fd, &gen, sizeof(gen), at), sizeof(gen));
	cr_assert_eq(gen % 2, 0);
	odd = gen + 1;
	cr_assert_eq(pwrite(fd, &odd, sizeof(odd), at), sizeof(odd));
	struct probe_shm_worker w[MAXW];
	cr_assert_eq(probe_shm_read(mapped, w, MAXW, 0), -EAGAIN);
	cr_assert_eq(probe_shm_read(direct, w, MAXW, 0), -EAGAIN);
	cr_assert_eq(shm_hot_map_state(mapped), SHM_MAP_ON);
	gen += 2;
	cr_assert_eq(pwrite(fd, &gen, sizeof(gen), at), sizeof(gen));
	expect_same(mapped, direct, 0, 1);
	close(fd);
	probe_shm_close(mapped);
	probe_shm_close(direct);
}

/* In a child: pread and the stat calls refused by seccomp. Mapped table
 * reads still work (they make none); a pread handle's fail. */
enum { OK = 0, BAD_SECCOMP = 1, BAD_MAPPED = 2, BAD_COUNT = 4, BAD_DIRECT_WORKED = 8 };

static int child_no_syscalls(struct probe_shm *mapped, struct probe_shm *direct)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTRECOVERABLE), SCMP_SYS(pread64), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTRECOVERABLE), SCMP_SYS(fstat), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTRECOVERABLE), SCMP_SYS(newfstatat), 0) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTRECOVERABLE), SCMP_SYS(statx), 0) < 0 ||
	    seccomp_load(ctx) < 0)
		return BAD_SECCOMP;
	seccomp_release(ctx);
	int bad = OK;
	struct probe_shm_worker w[MAXW];
	for (int i = 0; i < 200; i++) {
		int n = probe_shm_read(mapped, w, MAXW, 0);
		if (n < 0)
			bad |= BAD_MAPPED;
		else if (n != 1)
			bad |= BAD_COUNT;
	}
	if (probe_shm_read(direct, w, MAXW, 0) != -ENOTRECOVERABLE)
		bad |= BAD_DIRECT_WORKED;
	return bad;
}

Test(shm_table_map, mapped_table_reads_make_no_read_or_stat_call)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("quiet", LOOPSTAT_BACKEND_IO_URING, 3);
	cr_assert(s);
	struct probe_shm *mapped = open_mapped(fl_stats_path()), *direct = open_direct(fl_stats_path());
	struct probe_shm_worker w[MAXW];
	/* a pread handle: a pread per read; a mapped one: none */
	long before = ts_read_calls();
	for (int i = 0; i < 100; i++)
		cr_assert_eq(probe_shm_read(direct, w, MAXW, 0), 1);
	long mid = ts_read_calls();
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(probe_shm_read(mapped, w, MAXW, 0), 1);
	long after = ts_read_calls();
	cr_assert_geq(mid - before, 200, "%ld read calls for 100 pread table reads", mid - before);
	cr_assert_lt(after - mid, 3, "%ld read calls for 1000 mapped table reads", after - mid);

	/* and no stat call: the tid list was just made, so none is due */
	cr_assert_eq(probe_shm_read(mapped, w, MAXW, 0), 1);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(child_no_syscalls(mapped, direct));
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child status %#x", status);
	cr_assert_eq(WEXITSTATUS(status), OK, "child: %#x (1 seccomp, 2 mapped failed, 4 count, 8 pread not refused)",
		     WEXITSTATUS(status));
	probe_shm_close(mapped);
	probe_shm_close(direct);
}

/* The writer's segment cut to nothing under a mapped table read: an
 * error, no crash, the mapping dropped; then pread (and its size check). */
Test(shm_table_map, truncated_while_mapped_fails_then_preads)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("cut", LOOPSTAT_BACKEND_LIBEV, 4);
	cr_assert(s);
	fl_stat_set(&s->ops, 31);
	struct probe_shm *shm = open_mapped(fl_stats_path());
	int fd = open(fl_stats_path(), O_RDWR);
	cr_assert_geq(fd, 0);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	char *img = malloc((size_t)st.st_size);
	cr_assert_eq(pread(fd, img, (size_t)st.st_size, 0), st.st_size);
	cr_assert_eq(ftruncate(fd, 0), 0); /* s must not be touched until it is grown back */
	struct probe_shm_worker w[MAXW];
	cr_assert_eq(probe_shm_read(shm, w, MAXW, 0), -EBADMSG, "a fault, caught");
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_OFF, "the mapping is dropped for good");
	cr_assert_eq(probe_shm_read(shm, w, MAXW, 0), -EBADMSG, "pread: the file is short");
	cr_assert_eq(pwrite(fd, img, (size_t)st.st_size, 0), st.st_size);
	free(img);
	close(fd);
	long before = ts_read_calls();
	cr_assert_eq(probe_shm_read(shm, w, MAXW, 0), 1);
	cr_assert_geq(ts_read_calls() - before, 2, "read through pread now");
	cr_assert_eq(w[0].values[PROBE_SHM_ops], 31);
	fl_stat_set(&s->ops, 32); /* the writer's mapping sees the restored file */
	cr_assert_eq(probe_shm_read(shm, w, MAXW, 0), 1);
	cr_assert_eq(w[0].values[PROBE_SHM_ops], 32);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_OFF);
	probe_shm_close(shm);
}

/* A cut at a page boundary inside the used slots: the slots before it are
 * read, the first page past it faults: an error, never a crash. */
Test(shm_table_map, cut_inside_the_used_slots)
{
	struct holder h[THREADS];
	struct loopstat_shm_slot *own = fl_stats_slot_acquire("main", LOOPSTAT_BACKEND_IO_URING, 7);
	cr_assert(own);
	start_holders(h);
	struct probe_shm *shm = open_mapped(fl_stats_path());
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const char *base = (const char *)own;
	const char *last = (const char *)h[0].slot;
	for (int i = 1; i < THREADS; i++)
		if ((const char *)h[i].slot > last)
			last = (const char *)h[i].slot;
	/* slot 0 (the main thread's, taken first) is at header_size: cut at
	 * the start of the last used slot's page */
	int fd = open(fl_stats_path(), O_RDWR);
	cr_assert_geq(fd, 0);
	struct loopstat_shm_header hd;
	cr_assert_eq(pread(fd, &hd, sizeof(hd), 0), sizeof(hd));
	size_t off_last = hd.header_size + (size_t)(last - base);
	size_t cut = off_last / page * page;
	cr_assert_gt(cut, 0);
	if (cut <= hd.header_size)
		cr_skip_test("the used slots share the header's page (page %zu)", page);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	char *img = malloc((size_t)st.st_size);
	cr_assert_eq(pread(fd, img, (size_t)st.st_size, 0), st.st_size);
	cr_assert_eq(ftruncate(fd, (off_t)cut), 0);
	struct probe_shm_worker w[MAXW];
	cr_assert_eq(probe_shm_read(shm, w, MAXW, 0), -EBADMSG);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_OFF);
	cr_assert_eq(pwrite(fd, img, (size_t)st.st_size, 0), st.st_size);
	free(img);
	close(fd);
	cr_assert_eq(probe_shm_read(shm, w, MAXW, 0), THREADS + 1, "pread reads the restored file");
	stop_holders(h);
	probe_shm_close(shm);
}
