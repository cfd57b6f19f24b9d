/* Segment re-validation cost: the writer's tid list, its maps scan and the opening of its /proc files are not redone while nothing changed, and what changed is still caught. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_proc.h"
#include "probe_shm.h"
#include "probe_stat.h"
#include "shm/shm_int.h"
#include "support/probe_child.h"
#include "support/publisher.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("recheck");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	tp_kill_all();
	fl_stats_close();
	unsetenv(PROBE_PROC_ROOT_ENV);
	ts_rmtree_free(dir);
}

TestSuite(shm_recheck, .init = setup, .fini = teardown, .timeout = 30);

/* ---- the tid list ---------------------------------------------------------- */

struct thread_slot {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int published, done;
	pid_t tid;
};

static void *publish_slot(void *arg)
{
	struct thread_slot *t = arg;
	void *slot = fl_stats_slot_acquire("late", LOOPSTAT_BACKEND_LIBEV, -1);
	pthread_mutex_lock(&t->mu);
	t->tid = gettid();
	t->published = slot ? 1 : -1;
	pthread_cond_broadcast(&t->cv);
	while (!t->done)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static void start_thread(pthread_t *th, struct thread_slot *t)
{
	*t = (struct thread_slot){ .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	cr_assert_eq(pthread_create(th, NULL, publish_slot, t), 0);
	pthread_mutex_lock(&t->mu);
	while (!t->published)
		pthread_cond_wait(&t->cv, &t->mu);
	pthread_mutex_unlock(&t->mu);
	cr_assert_eq(t->published, 1, "the thread could not take a slot");
}

static void stop_thread(pthread_t th, struct thread_slot *t)
{
	pthread_mutex_lock(&t->mu);
	t->done = 1;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(th, NULL);
}

static int has_tid(const struct probe_shm_worker *w, int n, pid_t tid)
{
	for (int i = 0; i < n; i++)
		if (w[i].tid == tid)
			return 1;
	return 0;
}

Test(shm_recheck, a_new_thread_is_accepted_by_the_next_read)
{
	cr_assert(fl_stats_slot_acquire("main", LOOPSTAT_BACKEND_LIBEV, -1));
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(fl_stats_path(), &shm), 0);
	struct probe_shm_worker w[4];
	cr_assert_eq(probe_shm_read(shm, w, 4, 0), 1);
	cr_assert_eq(probe_shm_read(shm, w, 4, 0), 1);
	cr_assert_eq(shm_recheck_counts(shm).tid_loads, 1, "a read that finds every tid listed lists nothing");
	struct probe_shm_read_info info;
	probe_shm_last_read(shm, &info);
	cr_assert_leq(info.bytes, 2 * sizeof(struct loopstat_shm_slot), "%zu bytes: the used slot and the free one after it",
		      info.bytes);

	/* a thread born since the listing: its tid is missing, so we list again */
	pthread_t th1, th2;
	struct thread_slot t1, t2;
	start_thread(&th1, &t1);
	cr_assert_eq(probe_shm_read(shm, w, 4, 0), 2, "the new thread's slot at the first read after it");
	cr_assert(has_tid(w, 2, t1.tid));
	cr_assert_eq(shm_recheck_counts(shm).tid_loads, 2);
	long long t_miss = ts_now_ms();

	/* a second one within the second: listing again is what a writer naming
	 * made-up tids could make us do at every read, so it waits for the
	 * list's age (1 s) */
	start_thread(&th2, &t2);
	int n = probe_shm_read(shm, w, 4, 0);
	if (ts_now_ms() - t_miss < 800) {
		cr_assert_eq(n, 2, "not listed again within a second of the last listing for a miss");
		cr_assert_eq(shm_recheck_counts(shm).tid_loads, 2);
	}
	long long t0 = ts_now_ms();
	while ((n = probe_shm_read(shm, w, 4, 0)) != 3 && ts_now_ms() - t0 < 3000)
		usleep(20000);
	cr_assert_eq(n, 3);
	cr_assert(has_tid(w, 3, t2.tid));
	cr_assert_leq(ts_now_ms() - t_miss, 1000 + 200, "accepted %lld ms after the last listing",
		      ts_now_ms() - t_miss);

	/* an exited thread drops out at the next listing, a second later at most */
	stop_thread(th2, &t2);
	t0 = ts_now_ms();
	while (has_tid(w, n = probe_shm_read(shm, w, 4, 0), t2.tid) && ts_now_ms() - t0 < 3000)
		usleep(20000);
	cr_assert(!has_tid(w, n, t2.tid), "the exited thread's slot (still ACTIVE) is refused");
	cr_assert_leq(ts_now_ms() - t0, 1000 + 200);
	stop_thread(th1, &t1);
	probe_shm_close(shm);
}

/* A legacy-named segment for this process: slot 0 names this thread, slot 1
 * a tid that is no thread of ours. */
static char *forge_phantom(void)
{
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(getpid(), 0, &st), 0);
	struct loopstat_shm_header h = {
		.magic = LOOPSTAT_SHM_MAGIC, .abi_major = LOOPSTAT_SHM_ABI_MAJOR, .abi_minor = LOOPSTAT_SHM_ABI_MINOR,
		.byte_order = LOOPSTAT_SHM_BYTE_ORDER, .header_size = sizeof(h),
		.slot_size = sizeof(struct loopstat_shm_slot), .slot_count = 4, .pid = getpid(),
		.start_time = st.start_time, .ready = 1,
	};
	static char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/loopstat.%d", dir, (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	struct loopstat_shm_slot s[4] = { { .state = LOOPSTAT_SLOT_ACTIVE, .tid = gettid(), .wait_fd = -1 },
					  { .state = LOOPSTAT_SLOT_ACTIVE, .tid = 0x3fff0001, .wait_fd = -1 } };
	cr_assert_eq(pwrite(fd, s, sizeof(s), sizeof(h)), (ssize_t)sizeof(s));
	close(fd);
	return path;
}

Test(shm_recheck, a_phantom_tid_is_refused_without_a_listing_per_read)
{
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(forge_phantom(), &shm), 0);
	struct probe_shm_worker w[4];
	long long t0 = ts_now_ms();
	int reads = 0;
	/* the sampler's rate (10 Hz) would take seconds; as fast as we can for
	 * 1.5 s is the same question asked harder */
	while (ts_now_ms() - t0 < 1500) {
		cr_assert_eq(probe_shm_read(shm, w, 4, 0), 1, "the phantom slot is refused at every read");
		cr_assert_eq(w[0].tid, gettid());
		struct probe_shm_read_info info;
		probe_shm_last_read(shm, &info);
		cr_assert_eq(info.rejected, 1);
		reads++;
	}
	long long elapsed = ts_now_ms() - t0;
	uint64_t loads = shm_recheck_counts(shm).tid_loads;
	cr_log_info("%d reads in %lld ms listed /proc/PID/task %llu times", reads, elapsed, (unsigned long long)loads);
	cr_assert_gt(reads, 20);
	/* the first read lists, then once a second at most: by age or for the miss */
	cr_assert_leq(loads, 2 + (uint64_t)(elapsed / 1000) * 2, "%llu listings in %lld ms",
		      (unsigned long long)loads, elapsed);
	cr_assert_geq(loads, 2, "a miss or the list's age made it list again within 1.5 s");
	probe_shm_close(shm);
}

/* ---- the maps scan ---------------------------------------------------------- */


Test(shm_recheck, an_unchanged_image_skips_the_maps_scan_and_an_exec_is_still_caught)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	struct probe_shm *shm = tp_open_segment(dir, pid);
	cr_assert_eq(shm_recheck_counts(shm).maps_scans, 1, "a suffixed segment is checked mapped at open");
	for (int i = 0; i < 5; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert_eq(c.maps_scans, 1, "the image has not changed: no scan");
	cr_assert_eq(c.maps_skipped, 5);
	cr_assert(c.held, "the checks read held /proc files");
	uint64_t opens = c.proc_opens;

	cr_assert_eq(write(go, "x", 1), 1);
	int err = 0;
	long long t0 = ts_now_ms();
	while ((err = probe_shm_check_writer(shm)) == 0 && ts_now_ms() - t0 < 5000)
		usleep(10000);
	cr_assert_eq(err, -ENOLINK, "the exec'd writer no longer maps its segment");
	c = shm_recheck_counts(shm);
	cr_assert_geq(c.maps_scans, 2, "the new image made it scan");
	cr_assert_leq(ts_now_ms() - t0, 1000, "caught at the first check after the exec, not at the periodic scan");
	cr_assert_eq(c.proc_opens, opens, "the held files read the exec'd image without being opened again");
	probe_shm_close(shm);
	close(go);
}

/* A fixture /proc for this process whose stat line hides the image (as
 * the kernel does to a reader that may not ptrace the task). */
Test(shm_recheck, a_hidden_image_scans_every_time)
{
	cr_assert(fl_stats_slot_acquire("main", LOOPSTAT_BACKEND_LIBEV, -1));
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(getpid(), 0, &st), 0);
	for (int i = 0; i < PROBE_STAT_IMAGE_FIELDS; i++)
		cr_assert_gt(st.image[i], 1, "root sees image field %d of its own stat", i);
	struct stat seg;
	cr_assert_eq(stat(fl_stats_path(), &seg), 0);

	char root[PATH_MAX], text[1024];
	cr_assert_eq(tchild_fixture_dir(root, sizeof(root)), 0);
	/* fields 4-44 with start time in 22, then 45-52 as the kernel shows them
	 * unprivileged: startcode/endcode 1, startstack 0, the rest 0 */
	int n = snprintf(text, sizeof(text), "%d (x) S", (int)getpid());
	for (int f = 4; f <= 52; f++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, " %llu",
			      f == 22 ? (unsigned long long)st.start_time : f == 26 || f == 27 ? 1ull : 0ull);
	snprintf(text + n, sizeof(text) - (size_t)n, "\n");
	char rel[64];
	snprintf(rel, sizeof(rel), "%d/stat", (int)getpid());
	cr_assert_eq(tchild_fixture_write(root, rel, text), 0);
	snprintf(rel, sizeof(rel), "%d/status", (int)getpid());
	snprintf(text, sizeof(text), "Name:\tx\nUid:\t%u\t%u\t%u\t%u\n", (unsigned)getuid(), (unsigned)geteuid(),
		 (unsigned)geteuid(), (unsigned)geteuid());
	cr_assert_eq(tchild_fixture_write(root, rel, text), 0);
	snprintf(rel, sizeof(rel), "%d/maps", (int)getpid());
	snprintf(text, sizeof(text), "7f0000000000-7f0000001000 r--s 00000000 %02x:%02x %llu %s\n",
		 major(seg.st_dev), minor(seg.st_dev), (unsigned long long)seg.st_ino, fl_stats_path());
	cr_assert_eq(tchild_fixture_write(root, rel, text), 0);
	setenv(PROBE_PROC_ROOT_ENV, root, 1);

	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(fl_stats_path(), &shm), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert_eq(c.maps_scans, 4, "nothing to compare: the open and every check scan maps");
	cr_assert_eq(c.maps_skipped, 0);
	/* a fixture file pins no process: it is opened at every check */
	cr_assert(!c.held);
	uint64_t opens = c.proc_opens;
	cr_assert_eq(probe_shm_check_writer(shm), 0);
	cr_assert_eq(shm_recheck_counts(shm).proc_opens, opens + 2, "stat and status opened for the check");
	/* and the scan still decides: the mapping gone from maps */
	cr_assert_eq(tchild_fixture_write(root, rel, "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n"), 0);
	cr_assert_eq(probe_shm_check_writer(shm), -ENOLINK);
	probe_shm_close(shm);
	unsetenv(PROBE_PROC_ROOT_ENV);
	tchild_fixture_remove(root);
}

/* ---- the held /proc files --------------------------------------------------- */

Test(shm_recheck, the_checks_open_the_writer_files_once_and_see_it_reaped)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	struct probe_shm *shm = tp_open_segment(dir, pid);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert(c.held, "/proc/PID/stat, status and /proc/PID held from the open's check on");
	cr_assert_eq(c.proc_opens, 3, "%llu opens at open: stat, status and /proc/PID once each",
		     (unsigned long long)c.proc_opens);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0, "check %d while the writer lives", i);
	cr_assert_eq(shm_recheck_counts(shm).proc_opens, 3, "100 checks opened none of them again");

	tp_reap(pid);
	cr_assert_eq(probe_shm_check_writer(shm), -ESRCH, "the reaped writer is gone");
	cr_assert_eq(probe_shm_check_writer(shm), -ESRCH, "and stays gone");
	cr_assert_eq(shm_recheck_counts(shm).proc_opens, 3, "told by the held files");
	probe_shm_close(shm);
	close(go);
}

/* A child at exactly `pid` (clone3 set_tid, root only), parked until killed;
 * -errno when the pid cannot be had. */
static pid_t spawn_at(pid_t pid)
{
	struct clone_args a = { .exit_signal = SIGCHLD, .set_tid = (uintptr_t)&pid, .set_tid_size = 1 };
	long r = syscall(SYS_clone3, &a, sizeof(a));
	if (r == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	return r < 0 ? -errno : (pid_t)r;
}

Test(shm_recheck, a_reused_pid_reads_as_gone_through_the_held_files)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	char path[PATH_MAX];
	cr_assert_eq(ts_shm_segment(dir, pid, path, sizeof(path)), 0);
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	cr_assert(shm_recheck_counts(shm).held);
	cr_assert_eq(probe_shm_check_writer(shm), 0);
	uint64_t opens = shm_recheck_counts(shm).proc_opens;
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(pid, 0, &st), 0);
	uint64_t writer_start = st.start_time;

	/* the writer reaped and its pid taken by another process of the same
	 * user: the path /proc/PID names the newcomer now */
	tp_reap(pid);
	pid_t again = spawn_at(pid);
	if (again == -EPERM || again == -EEXIST || again == -ENOSYS)
		cr_skip_test("cannot take pid %d again: %s", (int)pid, strerror(-again));
	cr_assert_eq(again, pid, "clone3 set_tid: %s", again < 0 ? strerror(-again) : "another pid");
	tp_adopt(again);
	cr_assert_eq(probe_stat_read(pid, 0, &st), 0, "pid %d is alive again", (int)pid);
	int same_tick = st.start_time == writer_start;
	cr_log_info("the newcomer started %s clock tick as the writer", same_tick ? "in the same" : "in another");

	/* the held files still mean the writer. Read by path, the newcomer (a
	 * fork of the same parent, mostly started in the writer's clock tick,
	 * so with its start time, owner and image) passed every check until
	 * the periodic maps scan, up to 10 s later */
	cr_assert_eq(probe_shm_check_writer(shm), -ESRCH, "the held files say the writer is gone");
	cr_assert_eq(shm_recheck_counts(shm).proc_opens, opens, "told without opening /proc/%d again", (int)pid);
	probe_shm_close(shm);
	/* a fresh open goes by the path: the newcomer's start time refuses it,
	 * or, started in the writer's tick, the maps scan (it maps nothing) */
	struct probe_shm *again_shm;
	cr_assert_eq(probe_shm_open(path, &again_shm), same_tick ? -ENOLINK : -ESTALE);
	close(go);
}

/* Makes fd numbers up to the highest one open taken (holes filled with
 * /dev/null, listed in fill), so that the next opens get hi+1, hi+2, ...:
 * returns hi+1. */
static int fill_fds(int *fill, int max, int *nfill)
{
	int hi = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			hi = fd;
	*nfill = 0;
	for (int fd = 0; fd < hi; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		cr_assert_lt(*nfill, max);
		int f = open("/dev/null", O_RDONLY | O_CLOEXEC);
		cr_assert_geq(f, 0);
		cr_assert_lt(f, hi, "holes fill from the bottom");
		fill[(*nfill)++] = f;
	}
	return hi + 1;
}

/* The fd numbers filled by fill_fds, to close after the test. */
struct fd_room {
	int fill[256], nfill;
};

/* pid's segment opened with room for `room` descriptors more than are
 * open now (the limit given back right after); fails the test if it
 * cannot be opened. */
static struct probe_shm *open_with_fd_room(pid_t pid, int room, struct fd_room *r)
{
	char path[PATH_MAX];
	cr_assert_eq(ts_shm_segment(dir, pid, path, sizeof(path)), 0);
	int next = fill_fds(r->fill, 256, &r->nfill);
	struct rlimit old, rl;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = (rlim_t)(next + room);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	struct probe_shm *shm;
	int err = probe_shm_open(path, &shm);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	cr_assert_eq(err, 0, "the segment opens without its held files: %s", strerror(-err));
	return shm;
}

static void fd_room_done(struct fd_room *r)
{
	for (int i = 0; i < r->nfill; i++)
		close(r->fill[i]);
}

Test(shm_recheck, without_descriptors_to_hold_the_checks_open_per_check)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	/* room for the segment and one file at a time (the open's check), not
	 * for the three held ones */
	struct fd_room room;
	struct probe_shm *shm = open_with_fd_room(pid, 2, &room);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert(!c.held, "EMFILE at the second held file: none held");
	for (int i = 0; i < 5; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0);
	cr_assert_eq(shm_recheck_counts(shm).proc_opens, c.proc_opens + 10, "stat and status opened at each of 5 checks");
	/* the descriptors back: still per check, and still as strict */
	tp_reap(pid);
	cr_assert_eq(probe_shm_check_writer(shm), -ESRCH);
	probe_shm_close(shm);
	fd_room_done(&room);
	close(go);
}

Test(shm_recheck, an_exec_from_another_thread_is_caught_through_the_held_files)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_THREAD);
	struct probe_shm *shm = tp_open_segment(dir, pid);
	cr_assert(shm_recheck_counts(shm).held);
	cr_assert_eq(probe_shm_check_writer(shm), 0);
	uint64_t opens = shm_recheck_counts(shm).proc_opens;

	/* the exec'ing thread becomes the leader under the process's pid: the
	 * held files read the new image, not a gone task */
	cr_assert_eq(write(go, "x", 1), 1);
	int err = 0;
	long long t0 = ts_now_ms();
	while ((err = probe_shm_check_writer(shm)) == 0 && ts_now_ms() - t0 < 5000)
		usleep(10000);
	cr_assert_eq(err, -ENOLINK, "the exec'd writer no longer maps its segment: %s", strerror(-err));
	cr_assert_eq(shm_recheck_counts(shm).proc_opens, opens, "caught without opening the files again");
	char exe[PATH_MAX] = "", link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	cr_assert(strstr(exe, "sleep"), "pid %d runs %s", (int)pid, exe);
	probe_shm_close(shm);
	close(go);
}

Test(shm_recheck, without_a_descriptor_for_the_directory_nothing_is_held)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	/* room for the segment, stat and status, not for /proc/PID */
	struct fd_room room;
	struct probe_shm *shm = open_with_fd_room(pid, 3, &room);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert(!c.held, "EMFILE at the directory: stat and status are not held either");
	for (int i = 0; i < 5; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0);
	struct shm_recheck_counts d = shm_recheck_counts(shm);
	cr_assert_eq(d.proc_opens, c.proc_opens + 10, "stat and status opened at each of 5 checks");
	cr_assert_eq(d.status_reads, c.status_reads + 5, "both uids read at every check, as before");
	probe_shm_close(shm);
	fd_room_done(&room);
	close(go);
}
