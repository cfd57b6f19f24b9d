/* Segment reader against forged, damaged, foreign and stale segments: clean errors, never a crash. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_shm.h"
#include "probe_stat.h"
#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("reject"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(shm_reject, .init = setup, .fini = teardown, .timeout = 30);

struct forge {
	struct loopstat_shm_header h;
	uint32_t header_size, slot_size, slots;
};

/* A well-formed segment image claiming `pid` with its real start time. */
static struct forge forge_for(pid_t pid)
{
	struct probe_stat st;
	struct forge f;
	memset(&f, 0, sizeof(f));
	int err = probe_stat_read(pid, 0, &st);
	f.h.start_time = err == 0 ? st.start_time : 12345;
	f.h.magic = LOOPSTAT_SHM_MAGIC;
	f.h.abi_major = LOOPSTAT_SHM_ABI_MAJOR;
	f.h.abi_minor = LOOPSTAT_SHM_ABI_MINOR;
	f.h.byte_order = LOOPSTAT_SHM_BYTE_ORDER;
	f.header_size = f.h.header_size = sizeof(struct loopstat_shm_header);
	f.slot_size = f.h.slot_size = sizeof(struct loopstat_shm_slot);
	f.slots = f.h.slot_count = 2;
	f.h.pid = pid;
	f.h.ready = 1;
	return f;
}

/* Writes the image (slot 0 active with switches = 77) and returns its path. */
static char *write_forge(const struct forge *f, size_t cut)
{
	size_t size = f->header_size + (size_t)f->slots * f->slot_size;
	char *img = calloc(1, size);
	memcpy(img, &f->h, sizeof(f->h) < size ? sizeof(f->h) : size);
	struct loopstat_shm_slot *s = (void *)(img + f->header_size);
	s->state = LOOPSTAT_SLOT_ACTIVE;
	s->tid = f->h.pid;
	s->switches = 77;
	s->wait_fd = -1;
	static char path[512];
	snprintf(path, sizeof(path), "%s/loopstat.%d", dir, (int)f->h.pid);
	cr_assert_eq(ts_write_file(path, img, cut ? cut : size), 0);
	free(img);
	return path;
}

static int open_err(const char *path)
{
	struct probe_shm *shm = NULL;
	int err = probe_shm_open(path, &shm);
	if (err == 0)
		probe_shm_close(shm);
	else
		cr_assert_null(shm);
	return err;
}

Test(shm_reject, well_formed_forgery_for_own_pid_is_accepted)
{
	struct forge f = forge_for(getpid());
	char *path = write_forge(&f, 0);
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	struct probe_shm_worker w[2];
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), 1);
	cr_assert_eq(w[0].values[PROBE_SHM_switches], 77);
	probe_shm_close(shm);
}

Test(shm_reject, wrong_magic)
{
	struct forge f = forge_for(getpid());
	f.h.magic ^= 1;
	cr_assert_eq(open_err(write_forge(&f, 0)), -EBADMSG);
}

Test(shm_reject, unknown_major_and_foreign_byte_order)
{
	struct forge f = forge_for(getpid());
	f.h.abi_major = LOOPSTAT_SHM_ABI_MAJOR + 1;
	cr_assert_eq(open_err(write_forge(&f, 0)), -EPROTONOSUPPORT);
	f = forge_for(getpid());
	f.h.byte_order = __builtin_bswap32(LOOPSTAT_SHM_BYTE_ORDER);
	cr_assert_eq(open_err(write_forge(&f, 0)), -EPROTONOSUPPORT);
}

Test(shm_reject, newer_minor_with_larger_structs_is_accepted)
{
	struct forge f = forge_for(getpid());
	f.h.abi_minor = LOOPSTAT_SHM_ABI_MINOR + 3;
	f.header_size = f.h.header_size = sizeof(struct loopstat_shm_header) + 64;
	f.slot_size = f.h.slot_size = sizeof(struct loopstat_shm_slot) + 128;
	f.slots = f.h.slot_count = 3;
	char *path = write_forge(&f, 0);
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	cr_assert_eq(probe_shm_abi_minor(shm), LOOPSTAT_SHM_ABI_MINOR + 3);
	struct probe_shm_worker w[3];
	cr_assert_eq(probe_shm_read(shm, w, 3, 0), 1, "strides come from the header");
	cr_assert_eq(w[0].values[PROBE_SHM_switches], 77);
	probe_shm_close(shm);
}

Test(shm_reject, not_ready)
{
	struct forge f = forge_for(getpid());
	f.h.ready = 0;
	cr_assert_eq(open_err(write_forge(&f, 0)), -EAGAIN);
}

Test(shm_reject, truncated_file)
{
	struct forge f = forge_for(getpid());
	size_t full = f.header_size + 2 * (size_t)f.slot_size;
	cr_assert_eq(open_err(write_forge(&f, full - 1)), -EBADMSG);
	cr_assert_eq(open_err(write_forge(&f, 40)), -EBADMSG);
	cr_assert_eq(open_err(write_forge(&f, 1)), -EBADMSG);
}

Test(shm_reject, sizes_inconsistent_with_file)
{
	struct forge f = forge_for(getpid());
	f.h.slot_count = 1u << 30;
	cr_assert_eq(open_err(write_forge(&f, 0)), -EBADMSG);
	f = forge_for(getpid());
	f.h.slot_size = 8;
	cr_assert_eq(open_err(write_forge(&f, 0)), -EBADMSG);
	f = forge_for(getpid());
	f.h.header_size = 0xfffffff0u;
	cr_assert_eq(open_err(write_forge(&f, 0)), -EBADMSG);
}

Test(shm_reject, truncated_and_grown_after_open)
{
	struct forge f = forge_for(getpid());
	char *path = write_forge(&f, 0);
	struct probe_shm *shm;
	struct probe_shm_worker w[2];
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	cr_assert_eq(truncate(path, 1 << 20), 0);
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), 1, "a grown file still reads");
	cr_assert_eq(truncate(path, 100), 0);
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), -EBADMSG, "a shrunk file is an error, not a SIGBUS");
	cr_assert_eq(truncate(path, 0), 0);
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), -EBADMSG);
	probe_shm_close(shm);
}

Test(shm_reject, random_bytes)
{
	srand(1234);
	char path[512];
	snprintf(path, sizeof(path), "%s/loopstat.%d", dir, (int)getpid());
	static const size_t sizes[] = { 0, 7, 64, 128, 900, 4096, 100000 };
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		for (int round = 0; round < 20; round++) {
			size_t n = sizes[k];
			unsigned char *b = malloc(n + 8);
			for (size_t i = 0; i < n; i++)
				b[i] = (unsigned char)rand();
			/* half the rounds pass the magic check, to reach the size checks */
			if (round % 2 && n >= 8)
				memcpy(b, &(uint64_t){ LOOPSTAT_SHM_MAGIC }, 8);
			cr_assert_eq(ts_write_file(path, b, n), 0);
			free(b);
			int err = open_err(path);
			cr_assert_lt(err, 0, "garbage of %zu bytes accepted", n);
		}
	}
}

Test(shm_reject, owner_differs_from_process_owner)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to chown");
	struct forge f = forge_for(getpid());
	char *path = write_forge(&f, 0);
	cr_assert_eq(chown(path, 65534, 65534), 0);
	cr_assert_eq(open_err(path), -EPERM);
}

Test(shm_reject, dead_writer)
{
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	struct forge f = forge_for(child);
	cr_assert_eq(open_err(write_forge(&f, 0)), -ESRCH);
}

Test(shm_reject, reused_pid)
{
	struct forge f = forge_for(getpid());
	f.h.start_time += 1;
	cr_assert_eq(open_err(write_forge(&f, 0)), -ESTALE);
}

Test(shm_reject, file_name_must_match_pid)
{
	struct forge f = forge_for(getpid());
	char *path = write_forge(&f, 0);
	char other[600];
	snprintf(other, sizeof(other), "%s/loopstat.1", dir);
	cr_assert_eq(rename(path, other), 0);
	cr_assert_eq(open_err(other), -EBADMSG);
}

static int sum_pids(const char *path, pid_t pid, void *arg)
{
	(void)path;
	*(int *)arg += pid;
	return 0;
}

Test(shm_reject, scan_lists_only_segment_names)
{
	char p[600];
	const char *names[] = { "loopstat.12", "loopstat.x", "loopstat.", "other.5", "loopstat.012", "loopstat.77" };
	for (size_t i = 0; i < 6; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		cr_assert_eq(ts_write_file(p, "", 0), 0);
	}
	int sum = 0;
	cr_assert_eq(probe_shm_scan(dir, sum_pids, &sum), 0);
	cr_assert_eq(sum, 12 + 77);
	cr_assert_eq(probe_shm_scan("/nonexistent-dir", sum_pids, &sum), -ENOENT);
}

static int count_live(const char *path, pid_t pid, void *arg)
{
	(void)path;
	(void)pid;
	++*(int *)arg;
	return PROBE_SHM_SCAN_LIVE;
}

static int count(const char *path, pid_t pid, void *arg)
{
	(void)path;
	(void)pid;
	++*(int *)arg;
	return 0;
}

/* A file the caller vouches for costs the scan no /proc look-up, so it is
 * not skipped for a gone pid either; one it does not is. */
Test(shm_reject, scan_trusts_a_caller_that_knows_the_writer_lives)
{
	pid_t child = fork();
	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	char p[600];
	snprintf(p, sizeof(p), "%s/loopstat.%d.abc123", dir, (int)child);
	cr_assert_eq(ts_write_file(p, "", 0), 0);
	int calls = 0;
	cr_assert_eq(probe_shm_scan(dir, count_live, &calls), 0);
	cr_assert_eq(probe_shm_scan(dir, count_live, &calls), 0);
	cr_assert_eq(calls, 2, "vouched for: looked at every scan");
	cr_assert_eq(probe_shm_scan(dir, count, &calls), 0);
	cr_assert_eq(calls, 3);
	cr_assert_eq(probe_shm_scan(dir, count, &calls), 0);
	cr_assert_eq(calls, 3, "not vouched for and its pid gone: skipped from then on");
}
