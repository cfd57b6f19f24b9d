/* Segment re-validation without the dear reads: the owner check by fstat while the image is unchanged, and no /proc/PID/stat read while the writer's held mm lives; what changed is still caught. */
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
#include "support/publisher.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("held");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	tp_kill_all();
	fl_stats_close();
	unsetenv(PROBE_PROC_ROOT_ENV);
	ts_rmtree_free(dir);
}

TestSuite(shm_held, .init = setup, .fini = teardown, .timeout = 30);


/* ---- the owner check without status ---------------------------------------- */

Test(shm_held, an_unchanged_writer_reads_no_status_after_the_open)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	struct probe_shm *shm = tp_open_segment(dir, pid);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert(c.held);
	cr_assert_eq(c.status_reads, 1, "the open's check reads both uids");
	for (int i = 0; i < 50; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0, "check %d of the live writer", i);
	struct shm_recheck_counts d = shm_recheck_counts(shm);
	cr_assert_leq(d.status_reads, c.status_reads + 1, "%llu status reads in 50 checks of an unchanged image",
		      (unsigned long long)(d.status_reads - c.status_reads));
	cr_assert_geq(d.maps_skipped, 49, "the image was unchanged");
	probe_shm_close(shm);
	close(go);
}

/* Child (run as root): publish a root-owned segment, report, then on the
 * word setresuid(ruid, euid, -1) and report again, parked until killed
 * (the alarm outlives the credential change, which clears PDEATHSIG). */
static pid_t spawn_uid_changer(uid_t ruid, uid_t euid, int *go_fd, int *done_fd)
{
	int ready[2], go[2], done[2];
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(done), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		alarm(30);
		char ok = fl_stats_slot_acquire("uid", LOOPSTAT_BACKEND_LIBEV, -1) ? 'y' : 'n';
		if (write(ready[1], &ok, 1) != 1 || read(go[0], &ok, 1) != 1)
			_exit(125);
		ok = setresuid(ruid, euid, (uid_t)-1) == 0 ? 'y' : 'n';
		if (write(done[1], &ok, 1) != 1)
			_exit(125);
		for (;;)
			pause();
	}
	tp_adopt(pid);
	char ok = 0;
	cr_assert_eq(read(ready[0], &ok, 1), 1);
	cr_assert_eq(ok, 'y', "the child could not publish");
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(done[1]);
	*go_fd = go[1];
	*done_fd = done[0];
	return pid;
}

/* Opens the child's segment (owned by root), checks it a few times, and
 * has the child change its uids. */
static struct probe_shm *open_then_setresuid(uid_t ruid, uid_t euid, int *go, int *done)
{
	if (geteuid() != 0)
		cr_skip_test("needs root: a root writer that changes its uids");
	pid_t pid = spawn_uid_changer(ruid, euid, go, done);
	char path[PATH_MAX];
	cr_assert_eq(ts_shm_segment(dir, pid, path, sizeof(path)), 0);
	struct stat seg;
	cr_assert_eq(stat(path, &seg), 0);
	cr_assert_eq(seg.st_uid, 0, "the root child's segment is root's");
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	cr_assert(shm_recheck_counts(shm).held);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0);
	cr_assert_eq(write(*go, "x", 1), 1);
	char ok = 0;
	cr_assert_eq(read(*done, &ok, 1), 1);
	cr_assert_eq(ok, 'y', "the child's setresuid failed");
	return shm;
}

Test(shm_held, an_euid_change_is_caught_at_the_next_check_without_status)
{
	int go, done;
	struct probe_shm *shm = open_then_setresuid((uid_t)-1, 65534, &go, &done);
	uint64_t reads = shm_recheck_counts(shm).status_reads;
	cr_assert_eq(probe_shm_check_writer(shm), -EPERM, "the writer's euid is no longer the segment owner's");
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert_eq(c.status_reads, reads, "told by the fstat of /proc/PID, not by status");
	cr_assert_eq(c.maps_scans, 1, "the image did not change: only the open scanned");
	probe_shm_close(shm);
	close(go);
	close(done);
}

Test(shm_held, a_real_uid_change_is_caught_by_the_periodic_full_check)
{
	int go, done;
	struct probe_shm *shm = open_then_setresuid(65534, (uid_t)-1, &go, &done);
	uint64_t reads = shm_recheck_counts(shm).status_reads;
	/* the euid is still root's: passed while the image is unchanged */
	for (int i = 0; i < 5; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0, "check %d: the image is unchanged", i);
	cr_assert_eq(shm_recheck_counts(shm).status_reads, reads);
	/* the last scan dated past MAPS_MAX_AGE_NS (10 s): both uids read */
	shm_recheck_age(shm, 60ull * 1000000000ull);
	cr_assert_eq(probe_shm_check_writer(shm), -EPERM, "the writer's real uid is no longer the owner's");
	cr_assert_eq(shm_recheck_counts(shm).status_reads, reads + 1, "told by status");
	probe_shm_close(shm);
	close(go);
	close(done);
}

/* ---- the held mm: no stat read while it lives ------------------------------ */

/* Waits (by path, not through the handle) until pid's exec has replaced
 * its mm: its comm is "sleep" (set after exec_mmap() has released the old
 * mm; its exe link changes just before). */
static void wait_exec(pid_t pid)
{
	char path[64], comm[64] = "";
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	long long t0 = ts_now_ms();
	while (probe_read_file(path, comm, sizeof(comm)) <= 0 || strcmp(comm, "sleep\n") != 0) {
		cr_assert_lt(ts_now_ms() - t0, 5000, "pid %d still runs %s", (int)pid, comm);
		usleep(2000);
	}
}

/* Opens the child's segment and checks it until the held mm answers. */
static struct probe_shm *open_held_mm(pid_t pid)
{
	struct probe_shm *shm = tp_open_segment(dir, pid);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert(c.held);
	cr_assert(c.maps_held, "the open's scan found the segment mapped: its maps is held");
	cr_assert_eq(c.stat_reads, 1, "the open's check reads stat");
	for (int i = 0; i < 3; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0);
	cr_assert_eq(shm_recheck_counts(shm).stat_skipped, 3, "the writer's mm still lives: no stat read");
	return shm;
}

Test(shm_held, an_unchanged_writer_reads_no_stat_after_the_open)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	struct probe_shm *shm = open_held_mm(pid);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	for (int i = 0; i < 200; i++)
		cr_assert_eq(probe_shm_check_writer(shm), 0, "check %d of the live writer", i);
	struct shm_recheck_counts d = shm_recheck_counts(shm);
	cr_assert_leq(d.stat_reads, c.stat_reads + 1, "%llu stat reads in 200 checks of an unchanged writer",
		      (unsigned long long)(d.stat_reads - c.stat_reads));
	cr_assert_geq(d.stat_skipped, c.stat_skipped + 199);
	cr_assert_eq(d.status_reads, c.status_reads, "nor status");
	cr_assert_eq(d.maps_scans, 1, "nor a maps scan: only the open's");
	cr_assert_eq(d.proc_opens, c.proc_opens);
	/* the periodic full check still reads stat, status and maps */
	shm_recheck_age(shm, 60ull * 1000000000ull);
	cr_assert_eq(probe_shm_check_writer(shm), 0);
	struct shm_recheck_counts e = shm_recheck_counts(shm);
	cr_assert_eq(e.stat_reads, d.stat_reads + 1);
	cr_assert_eq(e.status_reads, d.status_reads + 1);
	cr_assert_eq(e.maps_scans, 2);
	cr_assert(e.maps_held, "the new scan's maps held in place of the old");
	cr_assert_eq(probe_shm_check_writer(shm), 0);
	cr_assert_eq(shm_recheck_counts(shm).stat_skipped, e.stat_skipped + 1, "and the next check reads no stat again");
	probe_shm_close(shm);
	close(go);
}

Test(shm_held, an_exec_is_caught_at_the_next_check_by_the_held_mm)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	struct probe_shm *shm = open_held_mm(pid);
	struct shm_recheck_counts c = shm_recheck_counts(shm);
	cr_assert_eq(write(go, "x", 1), 1);
	wait_exec(pid);
	cr_assert_eq(probe_shm_check_writer(shm), -ENOLINK, "the first check after the exec: a new mm");
	struct shm_recheck_counts d = shm_recheck_counts(shm);
	cr_assert_eq(d.stat_skipped, c.stat_skipped, "the old mm is gone: the full check ran");
	cr_assert_eq(d.stat_reads, c.stat_reads + 1);
	cr_assert_eq(d.maps_scans, c.maps_scans + 1, "and scanned the new image's maps");
	cr_assert(!d.maps_held);
	probe_shm_close(shm);
	close(go);
}

Test(shm_held, a_killed_writer_is_caught_at_the_next_check_by_the_held_mm)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	struct probe_shm *shm = open_held_mm(pid);
	/* dead, not reaped: exit released its mm before it became a zombie */
	cr_assert_eq(kill(pid, SIGKILL), 0);
	siginfo_t si;
	cr_assert_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	uint64_t reads = shm_recheck_counts(shm).stat_reads;
	cr_assert_eq(probe_shm_check_writer(shm), -ENOLINK, "the zombie maps nothing");
	cr_assert_eq(shm_recheck_counts(shm).stat_reads, reads + 1, "told by the full check");
	probe_shm_close(shm);
	close(go);
}

Test(shm_held, a_reaped_writer_is_caught_at_the_next_check_by_the_held_mm)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN);
	struct probe_shm *shm = open_held_mm(pid);
	uint64_t reads = shm_recheck_counts(shm).stat_reads;
	tp_reap(pid);
	cr_assert_eq(probe_shm_check_writer(shm), -ESRCH, "the reaped writer is gone");
	cr_assert_eq(shm_recheck_counts(shm).stat_reads, reads + 1, "told by the held stat");
	cr_assert_eq(probe_shm_check_writer(shm), -ESRCH, "and stays gone");
	probe_shm_close(shm);
	close(go);
}

/* What the held mm cannot tell: a process sharing it (CLONE_VM, not a
 * thread) keeps it alive after the writer's exec. The periodic full check
 * is what catches that. */
Test(shm_held, an_exec_under_a_shared_mm_is_caught_by_the_periodic_full_check)
{
	int go;
	pid_t pid = tp_spawn_publisher(&go, TP_FROM_MAIN_MM_SHARED);
	struct probe_shm *shm = open_held_mm(pid);
	cr_assert_eq(write(go, "x", 1), 1);
	wait_exec(pid);
	int err = probe_shm_check_writer(shm);
	cr_log_info("the first check after the exec under a shared mm: %d", err);
	shm_recheck_age(shm, 60ull * 1000000000ull);
	cr_assert_eq(probe_shm_check_writer(shm), -ENOLINK, "the full check scans the new image's maps");
	probe_shm_close(shm);
	close(go);
}
