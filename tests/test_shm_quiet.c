/* Table reads answered from the last one while every slot sits in the same blocking poll: the same answer
 * a copy would give, never an older one. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "shm/shm_int.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("shmquiet");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	fl_stats_close();
	ts_rmtree_free(dir);
}

TestSuite(shm_quiet, .init = setup, .fini = teardown, .timeout = 30);

/* A handle whose table reads go through the mapping (made by a hot read). */
static struct probe_shm *open_mapped(struct probe_shm_worker *w)
{
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(fl_stats_path(), &shm), 0);
	cr_assert_eq(probe_shm_read(shm, w, 1, 0), 1);
	struct probe_shm_hot hot;
	cr_assert_eq(probe_shm_read_hot(shm, w, &hot), 0);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_ON);
	return shm;
}

static void read_one(struct probe_shm *shm, struct probe_shm_worker *w)
{
	memset(w, 0x55, sizeof(*w));
	cr_assert_eq(probe_shm_read(shm, w, 1, 0), 1);
}

Test(shm_quiet, a_slot_parked_in_its_poll_is_read_from_the_last_read_and_its_leaving_at_once)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("quiet", LOOPSTAT_BACKEND_LIBEV, 3);
	cr_assert(s);
	fl_stat_set(&s->polls, 7);
	fl_stat_set(&s->poll_since_ns, ts_mono_ns());
	struct probe_shm_worker w, a, b;
	struct probe_shm *shm = open_mapped(&w); /* the first copy */
	cr_assert_eq(shm_recheck_counts(shm).quiet_reads, 0);
	read_one(shm, &b);
	cr_assert_eq(shm_recheck_counts(shm).quiet_reads, 0, "a poll seen once is copied again: the second copy makes it reusable");
	read_one(shm, &a);
	cr_assert_eq(shm_recheck_counts(shm).quiet_reads, 1, "seen twice the same: answered from the last read");
	cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0, "the same answer a copy gave");
	cr_assert_eq(a.values[PROBE_SHM_polls], 7);

	/* the poll ends, the writer counts it and starts another */
	fl_stat_set(&s->poll_since_ns, 0);
	fl_stat_set(&s->polls, 8);
	read_one(shm, &a);
	cr_assert_eq(shm_recheck_counts(shm).quiet_reads, 1);
	cr_assert_eq(a.values[PROBE_SHM_polls], 8, "the poll's end is seen at the next read");
	cr_assert_eq(a.values[PROBE_SHM_poll_since_ns], 0);
	uint64_t since = ts_mono_ns();
	fl_stat_set(&s->poll_since_ns, since);
	read_one(shm, &a);
	read_one(shm, &b);
	cr_assert_eq(shm_recheck_counts(shm).quiet_reads, 1, "a new poll is copied twice again");
	read_one(shm, &a);
	cr_assert_eq(shm_recheck_counts(shm).quiet_reads, 2);
	cr_assert_eq(a.values[PROBE_SHM_poll_since_ns], since, "the new poll, not the one kept before");

	/* a released slot moves the table's generation: read, and gone */
	fl_stats_slot_release(s);
	cr_assert_eq(probe_shm_read(shm, &a, 1, 0), 0, "the released slot is no longer listed");
	cr_assert_eq(shm_recheck_counts(shm).quiet_reads, 2);
	probe_shm_close(shm);
}

Test(shm_quiet, a_parked_segment_costs_no_listing_and_its_threads_are_checked_alive)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("quiet", LOOPSTAT_BACKEND_LIBEV, 3);
	cr_assert(s);
	fl_stat_set(&s->poll_since_ns, ts_mono_ns());
	struct probe_shm_worker w;
	struct probe_shm *shm = open_mapped(&w);
	struct shm_recheck_counts c0 = shm_recheck_counts(shm);
	uint64_t end = ts_mono_ns() + 1300000000ull;
	while (ts_mono_ns() < end) {
		read_one(shm, &w);
		usleep(10000);
	}
	struct shm_recheck_counts c1 = shm_recheck_counts(shm);
	cr_log_info("1.3 s of reads: %llu answered from the last, %llu listings", (unsigned long long)c1.quiet_reads,
		    (unsigned long long)(c1.tid_loads - c0.tid_loads));
	cr_assert_gt(c1.quiet_reads, 80);
	cr_assert_eq(c1.tid_loads, c0.tid_loads, "a thread in its poll has not exited: no listing");
	fl_stats_slot_release(s);
	probe_shm_close(shm);
}

/* A loop thread that ends inside its poll, its slot never told (as one
 * cancelled in epoll_wait would). */
static void *dies_in_poll(void *arg)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("doomed", LOOPSTAT_BACKEND_LIBEV, 3);
	cr_assert(s);
	fl_stat_set(&s->poll_since_ns, ts_mono_ns());
	*(volatile pid_t *)arg = gettid();
	while (*(volatile pid_t *)arg > 0)
		usleep(1000);
	return NULL;
}

Test(shm_quiet, a_thread_that_ended_in_its_poll_is_no_longer_listed_within_a_second)
{
	pthread_t th;
	volatile pid_t tid = 0;
	cr_assert_eq(pthread_create(&th, NULL, dies_in_poll, (void *)&tid), 0);
	while (!tid)
		usleep(1000);
	struct probe_shm_worker w;
	struct probe_shm *shm = open_mapped(&w);
	cr_assert_eq(w.tid, tid);
	read_one(shm, &w);
	read_one(shm, &w);
	cr_assert_eq(shm_recheck_counts(shm).quiet_reads, 1);
	tid = -1;
	pthread_join(th, NULL);
	uint64_t t0 = ts_mono_ns(), gone = 0;
	struct probe_shm_worker out[1];
	while (!gone && ts_mono_ns() - t0 < 3000000000ull) {
		if (probe_shm_read(shm, out, 1, 0) == 0)
			gone = ts_mono_ns() - t0;
		usleep(10000);
	}
	cr_log_info("the ended thread's slot refused after %.3f s", (double)gone / 1e9);
	cr_assert_gt(gone, 0, "refused once its thread is found gone");
	cr_assert_lt(gone, 1500000000ull, "within about a second");
	probe_shm_close(shm);
}

/* A loop as the runtime runs one: 2 ms in epoll_wait with poll_since_ns
 * set, then a poll counted and a few switches. */
static volatile int stop;
static struct loopstat_shm_slot *loop_slot;

static void *loop(void *arg)
{
	(void)arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	while (!stop) {
		struct epoll_event ev;
		fl_stat_set(&loop_slot->poll_since_ns, ts_mono_ns());
		epoll_wait(ep, &ev, 1, 2);
		fl_stat_set(&loop_slot->poll_since_ns, 0);
		fl_stat_set(&loop_slot->polls, loop_slot->polls + 1);
		fl_stat_set(&loop_slot->switches, loop_slot->switches + 3);
	}
	close(ep);
	return NULL;
}

static void *loop_main(void *arg)
{
	loop_slot = fl_stats_slot_acquire("loop", LOOPSTAT_BACKEND_LIBEV, 3);
	cr_assert(loop_slot);
	*(volatile int *)arg = 1;
	loop(NULL);
	fl_stats_slot_release(loop_slot);
	return NULL;
}

Test(shm_quiet, never_older_than_a_copy_taken_before_it)
{
	pthread_t th;
	volatile int up = 0;
	cr_assert_eq(pthread_create(&th, NULL, loop_main, (void *)&up), 0);
	while (!up)
		usleep(1000);
	struct probe_shm_worker w, before, copy, after;
	struct probe_shm *quiet = open_mapped(&w), *direct;
	cr_assert_eq(probe_shm_open(fl_stats_path(), &direct), 0);
	shm_hot_use_pread(direct); /* never mapped, so always copied */
	unsigned long rounds = 0;
	uint64_t end = ts_mono_ns() + 1000000000ull;
	while (ts_mono_ns() < end) {
		read_one(quiet, &before);
		read_one(direct, &copy);
		read_one(quiet, &after);
		rounds++;
		/* a read can only be as old as the moment it was made */
		cr_assert_leq(copy.values[PROBE_SHM_polls], after.values[PROBE_SHM_polls],
			      "round %lu: a read after a copy showed %llu polls, the copy %llu", rounds,
			      (unsigned long long)after.values[PROBE_SHM_polls],
			      (unsigned long long)copy.values[PROBE_SHM_polls]);
		cr_assert_leq(before.values[PROBE_SHM_polls], copy.values[PROBE_SHM_polls]);
		cr_assert_leq(copy.values[PROBE_SHM_switches], after.values[PROBE_SHM_switches]);
	}
	uint64_t reused = shm_recheck_counts(quiet).quiet_reads;
	cr_log_info("%lu rounds, %llu reads answered from the last, %llu polls", rounds, (unsigned long long)reused,
		    (unsigned long long)after.values[PROBE_SHM_polls]);
	cr_assert_gt(reused, rounds / 10, "a loop that spends most of its time in its poll is mostly not copied");
	cr_assert_gt(after.values[PROBE_SHM_polls], 100);
	stop = 1;
	pthread_join(th, NULL);
	probe_shm_close(quiet);
	probe_shm_close(direct);
}
