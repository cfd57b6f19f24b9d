/* Stats writer and segment reader round trip: slots per thread, live reads of moving counters. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("shm");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	fl_stats_close();
	ts_rmtree_free(dir);
}

TestSuite(shm_roundtrip, .init = setup, .fini = teardown, .timeout = 30);

static struct probe_shm *open_own(void)
{
	struct probe_shm *shm;
	const char *path = fl_stats_path();
	cr_assert(path, "writer has no segment");
	int err = probe_shm_open(path, &shm);
	cr_assert_eq(err, 0, "probe_shm_open(%s): %s", path, strerror(-err));
	return shm;
}

Test(shm_roundtrip, one_slot_values_and_tags)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("acceptor", LOOPSTAT_BACKEND_IO_URING, 7);
	cr_assert(s);
	/* "loopstat.<pid>.<16 random hex digits>" */
	char prefix[512];
	snprintf(prefix, sizeof(prefix), "%s/loopstat.%d.", dir, (int)getpid());
	const char *expect_path = fl_stats_path();
	cr_assert_eq(strncmp(expect_path, prefix, strlen(prefix)), 0, "%s", expect_path);
	cr_assert_eq(strlen(expect_path + strlen(prefix)), 16, "%s", expect_path);
	cr_assert_eq(strspn(expect_path + strlen(prefix), "0123456789abcdef"), 16, "%s", expect_path);
	struct stat st;
	cr_assert_eq(stat(expect_path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);

	fl_stat_add(&s->switches, 41);
	fl_stat_add(&s->switches, 1);
	fl_stat_set(&s->runqueue_len, 5);
	fl_stat_add(&s->poll_time_ns, 123456789);
	unsigned a = fl_stats_tag_index(s, "http");
	unsigned b = fl_stats_tag_index(s, "db");
	cr_assert_eq(a, 1);
	cr_assert_eq(b, 2);
	cr_assert_eq(fl_stats_tag_index(s, "http"), 1, "a known tag keeps its index");
	fl_stat_set(&s->current_tag, b);
	fl_stat_set(&s->current_fiber, 99);

	struct probe_shm *shm = open_own();
	struct probe_shm_worker w[4];
	cr_assert_eq(probe_shm_read(shm, w, 4, 0), 1);
	cr_assert_eq(w[0].pid, getpid());
	cr_assert_eq(w[0].tid, gettid());
	cr_assert_eq(w[0].backend, LOOPSTAT_BACKEND_IO_URING);
	cr_assert_eq(w[0].wait_fd, 7);
	cr_assert_str_eq(w[0].tag, "acceptor");
	cr_assert_str_eq(w[0].fiber_tag, "db");
	cr_assert_eq(w[0].values[PROBE_SHM_switches], 42);
	cr_assert_eq(w[0].values[PROBE_SHM_runqueue_len], 5);
	cr_assert_eq(w[0].values[PROBE_SHM_poll_time_ns], 123456789);
	cr_assert_eq(w[0].values[PROBE_SHM_current_fiber], 99);
	cr_assert_eq(w[0].values[PROBE_SHM_ops], 0);

	fl_stats_slot_release(s);
	cr_assert_eq(probe_shm_read(shm, w, 4, 0), 0, "an exited slot is not active");
	cr_assert_eq(probe_shm_read(shm, w, 4, 1), 1, "but is kept for the monitor");
	cr_assert_eq(w[0].state, LOOPSTAT_SLOT_EXITED);
	cr_assert_eq(w[0].values[PROBE_SHM_switches], 42);
	probe_shm_close(shm);
}

Test(shm_roundtrip, mode_from_environment_and_unlink_on_close)
{
	setenv(LOOPSTAT_SHM_MODE_ENV, "0640", 1);
	cr_assert_eq(fl_stats_open(NULL), 0);
	cr_assert_eq(fl_stats_open(NULL), 0, "idempotent");
	char path[512];
	snprintf(path, sizeof(path), "%s", fl_stats_path());
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640);
	fl_stats_close();
	cr_assert_neq(stat(path, &st), 0, "segment unlinked at close");
	cr_assert_null(fl_stats_path());
}

Test(shm_roundtrip, stale_file_of_same_pid_is_replaced)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/loopstat.%d", dir, (int)getpid());
	cr_assert_eq(ts_write_file(path, "left by a dead process", 22), 0);
	cr_assert_eq(fl_stats_open(NULL), 0);
	struct probe_shm *shm = open_own();
	probe_shm_close(shm);
}

Test(shm_roundtrip, segment_of_own_image_before_exec_is_replaced)
{
	/* After execve() the pid and start time are the same, and the old
	 * image's segment, with an ACTIVE slot, is still on disk. */
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("old-image", LOOPSTAT_BACKEND_IO_URING, 3);
	cr_assert(s);
	fl_stat_set(&s->ops, 77);
	char path[512];
	snprintf(path, sizeof(path), "%s", fl_stats_path());
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	static char img[1 << 20];
	size_t n = fread(img, 1, sizeof(img), f);
	fclose(f);
	fl_stats_close();
	cr_assert_eq(ts_write_file(path, img, n), 0);

	struct loopstat_shm_slot *fresh = fl_stats_slot_acquire("new-image", LOOPSTAT_BACKEND_LIBEV, 4);
	cr_assert(fresh, "no slot after exec: %s", strerror(errno));
	struct probe_shm *shm = open_own();
	struct probe_shm_worker w[4];
	cr_assert_eq(probe_shm_read(shm, w, 4, 1), 1, "the old image's slot is gone");
	cr_assert_str_eq(w[0].tag, "new-image");
	cr_assert_eq(w[0].values[PROBE_SHM_ops], 0);
	probe_shm_close(shm);
}

Test(shm_roundtrip, slots_stay_writable_after_close)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire(NULL, LOOPSTAT_BACKEND_IO_URING, 3);
	cr_assert(s);
	fl_stats_close(); /* as at exit while another thread's loop still runs */
	fl_stat_add(&s->switches, 1);
	cr_assert_eq(s->switches, 1);
}

Test(shm_roundtrip, slots_are_reused_oldest_exited_first_with_new_generation)
{
	struct fl_stats_options o = { .slot_count = 2 };
	cr_assert_eq(fl_stats_open(&o), 0);
	struct loopstat_shm_slot *a = fl_stats_slot_acquire(NULL, LOOPSTAT_BACKEND_LIBEV, 3);
	struct loopstat_shm_slot *b = fl_stats_slot_acquire(NULL, LOOPSTAT_BACKEND_LIBEV, 4);
	cr_assert(a && b && a != b);
	errno = 0;
	cr_assert_null(fl_stats_slot_acquire(NULL, LOOPSTAT_BACKEND_LIBEV, 5));
	cr_assert_eq(errno, ENOSPC);
	fl_stat_add(&a->ops, 10);
	uint64_t gen = a->generation;
	fl_stats_slot_release(a);
	struct loopstat_shm_slot *c = fl_stats_slot_acquire(NULL, LOOPSTAT_BACKEND_IO_URING, 6);
	cr_assert_eq(c, a, "the exited slot is taken again");
	cr_assert_gt(c->generation, gen);
	cr_assert_eq(c->ops, 0, "a new holder starts from zero");
	cr_assert_eq(c->wait_fd, 6);
}

#define WRITERS 4

static pthread_barrier_t ready;
static int stop_writers;
static uint64_t written[WRITERS];

/* Counts until told to stop, so that reads overlap writes throughout. */
static void *writer(void *arg)
{
	int idx = (int)(intptr_t)arg;
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("writer", LOOPSTAT_BACKEND_IO_URING, -1);
	cr_assert(s);
	pthread_barrier_wait(&ready);
	uint64_t i = 0;
	while (!__atomic_load_n(&stop_writers, __ATOMIC_RELAXED)) {
		fl_stat_add(&s->switches, 1);
		fl_stat_add(&s->ops, 2);
		fl_stat_set(&s->runqueue_len, i % 17);
		i++;
	}
	written[idx] = i;
	pthread_barrier_wait(&ready); /* stay ACTIVE until the reader has looked */
	pthread_barrier_wait(&ready);
	fl_stats_slot_release(s);
	return NULL;
}

/* Takes and releases a slot over and over: the reader must never see a
 * slot half reset. */
static void *churner(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop_writers, __ATOMIC_RELAXED)) {
		struct loopstat_shm_slot *s = fl_stats_slot_acquire("churn", LOOPSTAT_BACKEND_LIBEV, 9);
		cr_assert(s);
		fl_stat_set(&s->ops, 5);
		fl_stats_slot_release(s);
	}
	return NULL;
}

Test(shm_roundtrip, threads_write_their_own_slots_while_read)
{
	pthread_t th[WRITERS], churn;
	cr_assert_eq(fl_stats_open(NULL), 0);
	pthread_barrier_init(&ready, NULL, WRITERS + 1);
	for (int i = 0; i < WRITERS; i++)
		pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i);
	pthread_barrier_wait(&ready);
	pthread_create(&churn, NULL, churner, NULL);

	struct probe_shm *shm = open_own();
	struct probe_shm_worker w[WRITERS + 1];
	uint64_t last[WRITERS] = { 0 };
	pid_t tids[WRITERS] = { 0 };
	int reads = 0, retried = 0;
	for (int k = 0; k < 3000; k++) {
		int n = probe_shm_read(shm, w, WRITERS + 1, 0);
		if (n == -EAGAIN) { /* the churner kept the table moving: allowed, not torn */
			retried++;
			continue;
		}
		cr_assert_geq(n, WRITERS, "read returned %d", n);
		int wi = 0;
		for (int i = 0; i < n; i++) {
			if (strcmp(w[i].tag, "churn") == 0) {
				cr_assert_eq(w[i].wait_fd, 9, "half-reset churn slot seen");
				cr_assert_eq(w[i].backend, LOOPSTAT_BACKEND_LIBEV);
				continue;
			}
			cr_assert_str_eq(w[i].tag, "writer", "half-reset slot seen: tag '%s'", w[i].tag);
			cr_assert_leq(wi, WRITERS - 1);
			if (!tids[wi])
				tids[wi] = w[i].tid;
			cr_assert_eq(w[i].tid, tids[wi], "slot order is stable");
			uint64_t sw = w[i].values[PROBE_SHM_switches];
			cr_assert_geq(sw, last[wi], "counter went backwards: %lu < %lu", sw, last[wi]);
			cr_assert_lt(w[i].values[PROBE_SHM_runqueue_len], 17);
			last[wi] = sw;
			wi++;
		}
		cr_assert_eq(wi, WRITERS);
		reads++;
	}
	__atomic_store_n(&stop_writers, 1, __ATOMIC_RELAXED);
	pthread_join(churn, NULL);
	pthread_barrier_wait(&ready);
	cr_assert_eq(probe_shm_read(shm, w, WRITERS + 1, 0), WRITERS);
	for (int i = 0; i < WRITERS; i++) {
		int idx = -1;
		for (int j = 0; j < WRITERS; j++)
			if (w[i].values[PROBE_SHM_switches] == written[j])
				idx = j;
		cr_assert_geq(idx, 0, "final count %lu is no writer's", w[i].values[PROBE_SHM_switches]);
		cr_assert_eq(w[i].values[PROBE_SHM_ops], 2 * written[idx]);
		cr_assert_neq(w[i].tid, getpid(), "each writer thread has its own tid");
		for (int j = 0; j < i; j++)
			cr_assert_neq(w[i].tid, w[j].tid);
	}
	pthread_barrier_wait(&ready);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(probe_shm_read(shm, w, WRITERS + 1, 0), 0);
	probe_shm_close(shm);
	cr_assert_gt(reads, 1000, "only %d of 3000 reads succeeded (%d retried)", reads, retried);
}

/* The per-tick read of a slot's hot fields follows the writer at once, and
 * refuses the slot once its thread released it or another took it. */
Test(shm_roundtrip, hot_fields_follow_and_a_reused_slot_is_stale)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("hot", LOOPSTAT_BACKEND_LIBEV, 5);
	cr_assert(s);
	unsigned t = fl_stats_tag_index(s, "render");
	fl_stat_set(&s->current_fiber, 7);
	struct probe_shm *shm = open_own();
	struct probe_shm_worker w[2];
	struct probe_shm_hot hot;
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), 1);
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), 0);
	cr_assert_eq(hot.current_fiber, 7);
	cr_assert_eq(hot.poll_since_ns, 0);
	cr_assert_str_eq(hot.fiber_tag, "");
	/* changed after the table was read: the hot read sees it */
	fl_stat_set(&s->current_tag, t);
	fl_stat_set(&s->current_fiber, 8);
	fl_stat_set(&s->poll_since_ns, 123456);
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), 0);
	cr_assert_eq(hot.current_fiber, 8);
	cr_assert_eq(hot.poll_since_ns, 123456);
	cr_assert_str_eq(hot.fiber_tag, "render");
	cr_assert_eq(hot.tag_index, t);
	fl_stat_set(&s->current_tag, LOOPSTAT_TAG_MAX + 1);
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), 0);
	cr_assert_str_eq(hot.fiber_tag, "", "a tag index out of range names nothing");
	cr_assert_eq(hot.tag_index, 0);
	struct probe_shm_worker bad = w[0];
	bad.slot = 1u << 30;
	cr_assert_eq(probe_shm_read_hot(shm, &bad, &hot), -ESTALE);
	fl_stats_slot_release(s);
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), -ESTALE, "a released slot is not the worker's");
	struct loopstat_shm_slot *again = fl_stats_slot_acquire("hot2", LOOPSTAT_BACKEND_LIBEV, 5);
	cr_assert(again);
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), -ESTALE, "a reacquired slot has a new generation");
	fl_stats_slot_release(again);
	probe_shm_close(shm);
}
