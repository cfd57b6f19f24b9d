/* The sampler's segment scan: one maps read per owner, refusals capped per owner. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_shm.h"
#include "shm/shm_int.h"
#include "support/children.h"
#include "support/support.h"

#define OWNERS 20

static char *dir;
static pid_t owners[OWNERS];

static void setup(void)
{
	dir = ts_tmpdir("owners");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	tc_kill_all(owners, OWNERS);
	ts_rmtree_free(dir);
}

TestSuite(shm_owners, .init = setup, .fini = teardown, .timeout = 30);

/* The scan's own account: every flood file is refused without a validation,
 * from one maps read per owner; an unchanged directory is not looked at
 * again, a changed one is, against the owners' maps as they are then. */
static int count_calls(const char *path, pid_t pid, void *arg)
{
	(void)path, (void)pid;
	++*(int *)arg;
	return 0;
}

Test(shm_owners, the_scan_refuses_unmapped_files_from_one_maps_read_per_owner)
{
	for (int i = 0; i < OWNERS; i++)
		if ((owners[i] = fork()) == 0) {
			pause();
			_exit(0);
		}
	int n = 2000;
	char path[512];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/loopstat.%d.f%x", dir, (int)owners[i % OWNERS], i);
		cr_assert_eq(ts_write_file(path, "x", 1), 0);
	}
	usleep(200000); /* settled: a listing of it can be kept */
	struct probe_shm_scan_counts c;
	int calls = 0;
	cr_assert_eq(probe_shm_scan_mapped(dir, count_calls, NULL, &calls), 0);
	probe_shm_scan_counts(&c);
	cr_expect_eq(calls, 0);
	cr_expect_eq(c.refused, (size_t)n);
	cr_expect_eq(c.unchecked, 0);
	cr_assert_eq(probe_shm_scan_mapped(dir, count_calls, NULL, &calls), 0);
	probe_shm_scan_counts(&c);
	cr_expect_eq(c.refused, 0, "the unchanged directory's kept listing holds none of them");
	snprintf(path, sizeof(path), "%s/other", dir);
	cr_assert_eq(ts_write_file(path, "x", 1), 0);
	cr_assert_eq(probe_shm_scan_mapped(dir, count_calls, NULL, &calls), 0);
	probe_shm_scan_counts(&c);
	cr_expect_eq(c.refused, (size_t)n);
	cr_expect_eq(calls, 0);
}

/* Files their process does map are validated, but only so many refused
 * ones per process and run: the rest wait, counted as unchecked. */
Test(shm_owners, refusals_of_mapped_files_are_capped_per_owner)
{
	enum { FILES = 50 };
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	if ((owners[0] = fork()) == 0) {
		for (int i = 0; i < FILES; i++) {
			char path[512];
			snprintf(path, sizeof(path), "%s/loopstat.%d.m%x", dir, (int)getpid(), i);
			int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
			if (fd < 0 || ftruncate(fd, 4096) < 0 ||
			    mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED)
				_exit(1);
			close(fd);
		}
		if (write(ready[1], "y", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	int calls = 0;
	struct probe_shm_scan_counts counts;
	cr_assert_eq(probe_shm_scan_mapped(dir, count_calls, NULL, &calls), 0);
	probe_shm_scan_counts(&counts);
	cr_expect_eq(calls, SHM_OWNER_REFUSALS);
	cr_expect_eq(counts.unchecked, (size_t)(FILES - SHM_OWNER_REFUSALS));
	cr_expect_eq(counts.refused, 0);
	cr_assert_eq(probe_shm_scan_mapped(dir, count_calls, NULL, &calls), 0);
	cr_expect_eq(calls, SHM_OWNER_REFUSALS, "no more validations in the same run");
}

static int unwanted(const char *path, pid_t pid, void *arg)
{
	(void)path, (void)pid;
	++*(int *)arg;
	return PROBE_SHM_SCAN_UNWANTED;
}

/* A file one caller did not want (not its target) is no refusal: another
 * caller in the same process, a sampler with other targets, is offered it. */
Test(shm_owners, files_not_wanted_spend_no_refusals)
{
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	if ((owners[0] = fork()) == 0) {
		char path[512];
		snprintf(path, sizeof(path), "%s/loopstat.%d.m0", dir, (int)getpid());
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || ftruncate(fd, 4096) < 0 || mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED ||
		    write(ready[1], "y", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	int skipped = 0, calls = 0;
	for (int i = 0; i < 2 * SHM_OWNER_REFUSALS; i++)
		cr_assert_eq(probe_shm_scan_mapped(dir, unwanted, NULL, &skipped), 0);
	cr_expect_eq(skipped, 2 * SHM_OWNER_REFUSALS);
	cr_assert_eq(probe_shm_scan_mapped(dir, count_calls, NULL, &calls), 0);
	cr_expect_eq(calls, 1, "still offered after %d scans that did not want it", skipped);
}
