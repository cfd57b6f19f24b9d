/* Segment re-validation cost: the writer's tid list and its maps scan are not re-read while nothing changed, and are when something did. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_proc.h"
#include "probe_shm.h"
#include "probe_stat.h"
#include "shm_int.h"
#include "support/probe_child.h"
#include "support/support.h"

static char *dir;
static pid_t child = -1;

static void setup(void)
{
	dir = ts_tmpdir("recheck");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	fl_stats_close();
	unsetenv(PROBE_PROC_ROOT_ENV);
	ts_rmtree_free(dir);
}

TestSuite(shm_recheck, .init = setup, .fini = teardown, .timeout = 30);

static struct shm_recheck_counts counts(const struct probe_shm *shm)
{
	struct shm_recheck_counts c;
	shm_recheck_counts(shm, &c);
	return c;
}

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
	cr_assert_eq(counts(shm).tid_loads, 1, "a read that finds every tid listed lists nothing");
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
	cr_assert_eq(counts(shm).tid_loads, 2);
	long long t_miss = ts_now_ms();

	/* a second one within the second: listing again is what a writer naming
	 * made-up tids could make us do at every read, so it waits for the
	 * list's age (1 s) */
	start_thread(&th2, &t2);
	int n = probe_shm_read(shm, w, 4, 0);
	if (ts_now_ms() - t_miss < 800) {
		cr_assert_eq(n, 2, "not listed again within a second of the last listing for a miss");
		cr_assert_eq(counts(shm).tid_loads, 2);
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
	uint64_t loads = counts(shm).tid_loads;
	cr_log_info("%d reads in %lld ms listed /proc/PID/task %llu times", reads, elapsed, (unsigned long long)loads);
	cr_assert_gt(reads, 20);
	/* the first read lists, then once a second at most: by age or for the miss */
	cr_assert_leq(loads, 2 + (uint64_t)(elapsed / 1000) * 2, "%llu listings in %lld ms",
		      (unsigned long long)loads, elapsed);
	cr_assert_geq(loads, 2, "a miss or the list's age made it list again within 1.5 s");
	probe_shm_close(shm);
}

/* ---- the maps scan ---------------------------------------------------------- */

/* Child: publish a slot, report, wait for the word, exec /bin/sleep. */
static pid_t spawn_publisher(int *go_fd)
{
	int ready[2], go[2];
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		char ok = fl_stats_slot_acquire("pre-exec", LOOPSTAT_BACKEND_LIBEV, -1) ? 'y' : 'n';
		if (write(ready[1], &ok, 1) != 1 || read(go[0], &ok, 1) != 1)
			_exit(125);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	child = pid;
	char ok = 0;
	cr_assert_eq(read(ready[0], &ok, 1), 1);
	cr_assert_eq(ok, 'y', "the child could not publish");
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	*go_fd = go[1];
	return pid;
}

Test(shm_recheck, an_unchanged_image_skips_the_maps_scan_and_an_exec_is_still_caught)
{
	int go;
	pid_t pid = spawn_publisher(&go);
	char path[PATH_MAX];
	cr_assert_eq(ts_shm_segment(dir, pid, path, sizeof(path)), 0);
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	cr_assert_eq(counts(shm).maps_scans, 1, "a suffixed segment is checked mapped at open");
	for (int i = 0; i < 5; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0);
	struct shm_recheck_counts c = counts(shm);
	cr_assert_eq(c.maps_scans, 1, "the image has not changed: no scan");
	cr_assert_eq(c.maps_skipped, 5);

	cr_assert_eq(write(go, "x", 1), 1);
	int err = 0;
	long long t0 = ts_now_ms();
	while ((err = probe_shm_check_writer(shm)) == 0 && ts_now_ms() - t0 < 5000)
		usleep(10000);
	cr_assert_eq(err, -ENOLINK, "the exec'd writer no longer maps its segment");
	c = counts(shm);
	cr_assert_geq(c.maps_scans, 2, "the new image made it scan");
	cr_assert_leq(ts_now_ms() - t0, 1000, "caught at the first check after the exec, not at the periodic scan");
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
	struct shm_recheck_counts c = counts(shm);
	cr_assert_eq(c.maps_scans, 4, "nothing to compare: the open and every check scan maps");
	cr_assert_eq(c.maps_skipped, 0);
	/* and the scan still decides: the mapping gone from maps */
	cr_assert_eq(tchild_fixture_write(root, rel, "00400000-00401000 r-xp 00000000 08:01 1 /bin/x\n"), 0);
	cr_assert_eq(probe_shm_check_writer(shm), -ENOLINK);
	probe_shm_close(shm);
	unsetenv(PROBE_PROC_ROOT_ENV);
	tchild_fixture_remove(root);
}
