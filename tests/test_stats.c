/* Stats: the shm slot's counters equal the known numbers of a known workload; poll_time_ns matches wall time of a sleeping loop. */
#include "support/fl_test.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define N_SNOOZE 100
#define K_SLEEP  5

struct snap {
#define X(name, kind, unit, desc) uint64_t name;
	LOOPSTAT_SLOT_VALUES(X)
#undef X
};

static struct snap take(const struct loopstat_shm_slot *s)
{
	struct snap v;
#define X(name, kind, unit, desc) v.name = __atomic_load_n(&s->name, __ATOMIC_RELAXED);
	LOOPSTAT_SLOT_VALUES(X)
#undef X
	return v;
}

static void *snoozes(void *arg)
{
	(void)arg;
	for (int i = 0; i < N_SNOOZE; i++)
		fl_snooze();
	return NULL;
}

/* The slot the monitor would read: found in the segment file by tid. */
static const struct loopstat_shm_slot *slot_in_file(void **map, size_t *len)
{
	const char *path = fl_stats_path();
	cr_assert_not_null(path, "no segment created");
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	struct stat st;
	fstat(fd, &st);
	*len = (size_t)st.st_size;
	*map = mmap(NULL, *len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert(*map != MAP_FAILED);
	const struct loopstat_shm_header *h = *map;
	for (unsigned i = 0; i < h->slot_count; i++) {
		const struct loopstat_shm_slot *s =
			(const void *)((const char *)*map + h->header_size + (size_t)i * h->slot_size);
		if (s->state == LOOPSTAT_SLOT_ACTIVE && s->tid == (int32_t)syscall(SYS_gettid))
			return s;
	}
	cr_assert_fail("no active slot for this thread");
	return NULL;
}

static void *known_main(void *arg)
{
	(void)arg;
	void *map;
	size_t len;
	const struct loopstat_shm_slot *s = slot_in_file(&map, &len);
	cr_assert_eq(s->backend, strcmp(fl_test_backend, "io_uring") == 0 ? LOOPSTAT_BACKEND_IO_URING
									     : LOOPSTAT_BACKEND_LIBEV);
	cr_assert(s->wait_fd >= 0);
	cr_assert_eq(s->current_fiber, fl_fiber_id(fl_current()));
	fl_fiber_set_tag(fl_current(), "stats-main");
	cr_assert_eq(s->current_tag, 1);
	cr_assert_str_eq(s->tags[0].name, "stats-main");
	cr_assert_eq(s->fibers_live, 1);

	struct snap a = take(s);
	/* 1: N snoozes of a lone fiber: await (1 switch), N self-switches,
	 * its exit (1); no op is pending, so no poll at all */
	fl_fiber *f = fl_spin(snoozes, NULL, "snoozer");
	fl_await(f, NULL);
	/* 2: K sleeps: one op, one blocking poll, one completion, one switch each */
	for (int i = 0; i < K_SLEEP; i++)
		cr_assert_eq(fl_sleep(0.001), 0);
	/* 3: one write to a pipe: io_uring completes it in one blocking poll;
	 * libev's write succeeds at once and yields (a switch, no poll: the
	 * lone fiber has nothing pending) */
	int uring = strcmp(fl_test_backend, "io_uring") == 0;
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(fl_write(p[1], "hello", 5), 5);
	struct snap b = take(s);

	cr_assert_eq(b.switches - a.switches, N_SNOOZE + 2 + K_SLEEP + 1, "switches %lu",
		     (unsigned long)(b.switches - a.switches));
	cr_assert_eq(b.ops - a.ops, K_SLEEP + 1);
	cr_assert_eq(b.completions - a.completions, K_SLEEP + 1);
	cr_assert_eq(b.polls - a.polls, K_SLEEP + uring, "polls %lu", (unsigned long)(b.polls - a.polls));
	cr_assert_eq(b.polls_blocking - a.polls_blocking, K_SLEEP + uring);
	cr_assert(b.poll_time_ns - a.poll_time_ns >= K_SLEEP * 1000000ull);
	cr_assert_eq(b.fibers_spawned - a.fibers_spawned, 1);
	cr_assert_eq(b.fibers_done - a.fibers_done, 1);
	cr_assert_eq(b.fibers_live, 1);
	cr_assert_eq(b.pending_ops, 0);
	cr_assert_eq(b.runqueue_len, 0);
	cr_assert_eq(b.current_fiber, fl_fiber_id(fl_current()));
	cr_assert_eq(b.current_tag, 1);
	close(p[0]);
	close(p[1]);
	munmap(map, len);
	return NULL;
}

Test(stats, known_workload_gives_known_counts, .timeout = 20, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	fl_test_run(known_main, NULL);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sleepy_main(void *arg)
{
	(void)arg;
	const struct loopstat_shm_slot *s = fl_stats_slot();
	uint64_t p0 = s->poll_time_ns;
	double t0 = now_s();
	for (int i = 0; i < 10; i++)
		cr_assert_eq(fl_sleep(0.05), 0);
	double wall = now_s() - t0;
	double polled = (double)(s->poll_time_ns - p0) / 1e9;
	cr_assert(polled >= wall * 0.95 && polled <= wall, "poll %.4f s vs wall %.4f s", polled, wall);
	return NULL;
}

Test(stats, poll_time_matches_wall_when_only_sleeping, .timeout = 20, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	fl_test_run(sleepy_main, NULL);
}

/* ---- busy with kernel work: poll_time_ns is time blocked, not submitting -- */

#define BUSY_CHUNK (256 * 1024)
#define BUSY_ROUNDS 400

struct busy {
	int   p[2];
	char *wbuf, *rbuf;
};

static void *busy_writer(void *arg)
{
	struct busy *b = arg;
	for (int i = 0; i < BUSY_ROUNDS; i++)
		cr_assert_eq(fl_write(b->p[1], b->wbuf, BUSY_CHUNK), BUSY_CHUNK);
	return NULL;
}

static void *busy_main(void *arg)
{
	(void)arg;
	struct busy b;
	cr_assert_eq(pipe2(b.p, O_CLOEXEC), 0);
	/* room for a whole chunk: every write and read completes inline, the
	 * copying is the kernel's work at submission */
	cr_assert(fcntl(b.p[1], F_SETPIPE_SZ, 1024 * 1024) >= BUSY_CHUNK);
	b.wbuf = calloc(1, BUSY_CHUNK);
	b.rbuf = malloc(BUSY_CHUNK);
	const struct loopstat_shm_slot *s = fl_stats_slot();
	uint64_t p0 = s->poll_time_ns;
	double t0 = now_s();
	fl_fiber *w = fl_spin(busy_writer, &b, NULL);
	fl_fiber_ref(w);
	for (int i = 0; i < BUSY_ROUNDS; i++)
		cr_assert_eq(fl_read_full(b.p[0], b.rbuf, BUSY_CHUNK), BUSY_CHUNK);
	fl_await(w, NULL);
	fl_fiber_unref(w);
	double wall = now_s() - t0;
	double polled = (double)(s->poll_time_ns - p0) / 1e9;
	cr_assert(polled < wall * 0.5, "poll %.4f s vs wall %.4f s: submission work counted as idle", polled, wall);
	free(b.wbuf);
	free(b.rbuf);
	close(b.p[0]);
	close(b.p[1]);
	return NULL;
}

Test(stats, poll_time_excludes_submission_work, .timeout = 30, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	fl_test_run(busy_main, NULL);
}

/* ---- poll_since_ns: a blocking poll in progress is visible ---------------- */

struct watcher {
	const struct loopstat_shm_slot *slot;
	uint64_t since, now;
};

static void *watch_poll(void *arg)
{
	struct watcher *w = arg;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	w->since = __atomic_load_n(&w->slot->poll_since_ns, __ATOMIC_RELAXED);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	w->now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return NULL;
}

static void *poll_since_main(void *arg)
{
	(void)arg;
	struct watcher w = { .slot = fl_stats_slot() };
	pthread_t t;
	cr_assert_eq(w.slot->poll_since_ns, 0, "a running fiber is not in a poll");
	cr_assert_eq(pthread_create(&t, NULL, watch_poll, &w), 0);
	cr_assert_eq(fl_sleep(0.2), 0);
	pthread_join(t, NULL);
	cr_assert_neq(w.since, 0, "poll in progress not published");
	double in_poll = (double)(w.now - w.since) / 1e6;
	cr_assert(in_poll >= 30 && in_poll <= 200, "in poll for %.1f ms by the reader's clock", in_poll);
	cr_assert_eq(w.slot->poll_since_ns, 0);
	return NULL;
}

Test(stats, poll_in_progress_is_published, .timeout = 10, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	fl_test_run(poll_since_main, NULL);
}

static void *segment_main(void *arg)
{
	(void)arg;
	cr_assert_not_null(fl_stats_path());
	cr_assert_eq(strncmp(fl_stats_path(), getenv("LOOPSTAT_SHM_DIR"), strlen(getenv("LOOPSTAT_SHM_DIR"))), 0);
	return NULL;
}

Test(stats, slot_lives_in_the_configured_directory, .timeout = 10, .init = fl_test_shm_setup,
     .fini = fl_test_shm_done)
{
	fl_test_run(segment_main, NULL);
}

static void *fallback_main(void *arg)
{
	(void)arg;
	struct loopstat_shm_slot *s = fl_stats_slot();
	cr_assert_not_null(s);
	uint64_t sw = s->switches;
	fl_snooze();
	cr_assert_eq(s->switches, sw + 1, "the private slot still counts");
	return NULL;
}

Test(stats, no_shm_falls_back_to_private_slot, .timeout = 10)
{
	setenv("LOOPSTAT_SHM_DIR", "/nonexistent/loopstat", 1);
	fl_test_run(fallback_main, NULL);
	cr_assert_null(fl_stats_path());
}
