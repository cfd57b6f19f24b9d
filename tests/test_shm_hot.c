/* Hot slot reads through the segment's mapping: pread's results without a read call, truncation caught, other SIGBUS untouched. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "probe_stat.h"
#include "shm/shm_int.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("shmhot");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	fl_stats_close();
	ts_rmtree_free(dir);
}

TestSuite(shm_hot, .init = setup, .fini = teardown, .timeout = 30);

static struct probe_shm *open_path(const char *path)
{
	struct probe_shm *shm;
	int err = probe_shm_open(path, &shm);
	cr_assert_eq(err, 0, "probe_shm_open(%s): %s", path, strerror(-err));
	return shm;
}

/* The same read through a mapped handle and a pread one: equal results. */
static void expect_same(struct probe_shm *mapped, struct probe_shm *direct, const struct probe_shm_worker *w,
			int want_err)
{
	struct probe_shm_hot a, b;
	memset(&a, 0x55, sizeof(a));
	memset(&b, 0x55, sizeof(b));
	int ea = probe_shm_read_hot(mapped, w, &a), eb = probe_shm_read_hot(direct, w, &b);
	cr_assert_eq(ea, want_err, "mapped read: %d, want %d", ea, want_err);
	cr_assert_eq(eb, want_err, "pread read: %d, want %d", eb, want_err);
	if (ea == 0) {
		cr_assert_eq(a.poll_since_ns, b.poll_since_ns);
		cr_assert_eq(a.current_fiber, b.current_fiber);
		cr_assert_eq(a.tag_index, b.tag_index);
		cr_assert_str_eq(a.fiber_tag, b.fiber_tag);
	}
	cr_assert_eq(shm_hot_map_state(mapped), SHM_MAP_ON, "the mapped handle stays mapped");
	cr_assert_eq(shm_hot_map_state(direct), SHM_MAP_OFF);
}

Test(shm_hot, mapped_reads_equal_pread_without_a_read_call)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("hot", LOOPSTAT_BACKEND_IO_URING, 5);
	cr_assert(s);
	struct probe_shm *mapped = open_path(fl_stats_path()), *direct = open_path(fl_stats_path());
	shm_hot_use_pread(direct);
	struct probe_shm_worker w[2];
	cr_assert_eq(probe_shm_read(mapped, w, 2, 0), 1);
	cr_assert_eq(shm_hot_map_state(mapped), SHM_MAP_UNTRIED, "mapped at the first hot read, not at open");

	struct probe_shm_hot hot;
	cr_assert_eq(probe_shm_read_hot(mapped, &w[0], &hot), 0);
	cr_assert_eq(shm_hot_map_state(mapped), SHM_MAP_ON);
	expect_same(mapped, direct, &w[0], 0);
	unsigned render = fl_stats_tag_index(s, "render");
	unsigned longest = fl_stats_tag_index(s, "a-tag-of-thirty-one-characters!"); /* 31: the longest kept */
	unsigned over = fl_stats_tag_index(s, "a-tag-longer-than-thirty-one-characters");
	cr_assert(render && longest && over);
	fl_stat_set(&s->current_fiber, 8);
	fl_stat_set(&s->poll_since_ns, 123456);
	fl_stat_set(&s->current_tag, render);
	expect_same(mapped, direct, &w[0], 0);
	cr_assert_eq(probe_shm_read_hot(mapped, &w[0], &hot), 0);
	cr_assert_eq(hot.current_fiber, 8);
	cr_assert_eq(hot.poll_since_ns, 123456);
	cr_assert_str_eq(hot.fiber_tag, "render");
	fl_stat_set(&s->current_tag, longest);
	expect_same(mapped, direct, &w[0], 0);
	fl_stat_set(&s->current_tag, over);
	expect_same(mapped, direct, &w[0], 0);
	cr_assert_eq(probe_shm_read_hot(mapped, &w[0], &hot), 0);
	cr_assert_eq(strlen(hot.fiber_tag), LOOPSTAT_TAG_LEN - 1);
	/* a garbage len is bounded as copy_tag bounds it */
	__atomic_store_n(&s->tags[render - 1].len, 0xffffffffu, __ATOMIC_RELEASE);
	fl_stat_set(&s->current_tag, render);
	expect_same(mapped, direct, &w[0], 0);
	fl_stat_set(&s->current_tag, LOOPSTAT_TAG_MAX + 1);
	expect_same(mapped, direct, &w[0], 0);
	fl_stat_set(&s->current_tag, 0);

	/* no read call per hot read through the mapping; one each through pread */
	long before = ts_read_calls();
	for (int i = 0; i < 10000; i++)
		cr_assert_eq(probe_shm_read_hot(mapped, &w[0], &hot), 0);
	long mid = ts_read_calls();
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(probe_shm_read_hot(direct, &w[0], &hot), 0);
	long after = ts_read_calls();
	cr_assert_lt(mid - before, 3, "%ld read calls for 10000 mapped hot reads", mid - before);
	cr_assert_geq(after - mid, 1000, "%ld read calls for 1000 pread hot reads", after - mid);

	struct probe_shm_worker bad = w[0];
	bad.slot = 1u << 30;
	expect_same(mapped, direct, &bad, -ESTALE);
	bad = w[0];
	bad.generation++;
	expect_same(mapped, direct, &bad, -ESTALE);
	fl_stats_slot_release(s);
	expect_same(mapped, direct, &w[0], -ESTALE);
	probe_shm_close(mapped);
	probe_shm_close(direct);
}

/* A legacy-named segment for this process, written through a shared
 * mapping as a writer would; slot `active` is ACTIVE for this thread, the
 * ones before it EXITED (a table read stops at the first free slot). */
struct forged {
	char  path[600];
	int   fd;          /* O_RDWR, for the truncations */
	char *map;         /* the writer's mapping */
	size_t size;
	struct loopstat_shm_slot *slot;
};

/* Minor 1's slot size: a slot of a size that does not divide a page, so
 * that some slot's hot fields straddle one (minor 2's 1024 bytes never do). */
#define SLOT_SIZE_V1 832u

/* The slot stride of a forged segment of minor `minor`. */
static size_t stride_of(uint16_t minor)
{
	return minor < 2 ? SLOT_SIZE_V1 : sizeof(struct loopstat_shm_slot);
}

static void forge(struct forged *f, uint16_t minor, uint32_t slots, uint32_t active)
{
	size_t stride = stride_of(minor);
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(getpid(), 0, &st), 0);
	snprintf(f->path, sizeof(f->path), "%s/loopstat.%d", dir, (int)getpid());
	f->size = sizeof(struct loopstat_shm_header) + (size_t)slots * stride;
	f->fd = open(f->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(f->fd, 0);
	cr_assert_eq(ftruncate(f->fd, (off_t)f->size), 0);
	f->map = mmap(NULL, f->size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	cr_assert_neq(f->map, MAP_FAILED);
	struct loopstat_shm_header *h = (void *)f->map;
	*h = (struct loopstat_shm_header){
		.magic = LOOPSTAT_SHM_MAGIC, .abi_major = LOOPSTAT_SHM_ABI_MAJOR, .abi_minor = minor,
		.byte_order = LOOPSTAT_SHM_BYTE_ORDER, .header_size = sizeof(*h),
		.slot_size = (uint32_t)stride, .slot_count = slots, .pid = getpid(),
		.start_time = st.start_time, .ready = 1,
	};
	char *s0 = f->map + sizeof(*h);
	for (uint32_t i = 0; i < active; i++)
		((struct loopstat_shm_slot *)(s0 + i * stride))->state = LOOPSTAT_SLOT_EXITED;
	f->slot = (struct loopstat_shm_slot *)(s0 + active * stride);
	f->slot->state = LOOPSTAT_SLOT_ACTIVE;
	f->slot->tid = gettid();
	f->slot->generation = 3;
	f->slot->current_fiber = 11;
	f->slot->poll_since_ns = 777;
}

static void unforge(struct forged *f)
{
	munmap(f->map, f->size);
	close(f->fd);
}

/* The first slot whose hot fields (up to poll_since_ns) cross a page
 * boundary: a cut there is mid-slot and leaves the fields' last page past EOF. */
static uint32_t straddling_slot(uint32_t slots, size_t *page_end)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (uint32_t i = 0; i < slots; i++) {
		size_t off = sizeof(struct loopstat_shm_header) + (size_t)i * SLOT_SIZE_V1;
		size_t last = off + offsetof(struct loopstat_shm_slot, poll_since_ns);
		if (off / page != last / page) {
			*page_end = (last / page) * page;
			return i;
		}
	}
	cr_assert_fail("no slot crosses a page");
	return 0;
}

static struct probe_shm *open_forged(struct forged *f, struct probe_shm_worker *w)
{
	struct probe_shm *shm = open_path(f->path);
	cr_assert_eq(probe_shm_read(shm, w, 1, 0), 1);
	cr_assert_eq(w->tid, gettid());
	struct probe_shm_hot hot;
	cr_assert_eq(probe_shm_read_hot(shm, w, &hot), 0);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_ON);
	cr_assert_eq(hot.current_fiber, 11);
	cr_assert_eq(hot.poll_since_ns, 777);
	return shm;
}

/* Cut under the mapping at `cut`: an error, never a crash; then pread
 * for good, which works again once the file is grown back and rewritten. */
static void cut_then_grow(uint32_t active, off_t cut)
{
	struct forged f;
	struct probe_shm_worker w;
	struct probe_shm_hot hot;
	forge(&f, 1, 64, active);
	struct probe_shm *shm = open_forged(&f, &w);
	cr_assert_eq(ftruncate(f.fd, cut), 0);
	cr_assert_eq(probe_shm_read_hot(shm, &w, &hot), -EBADMSG, "cut at %ld", (long)cut);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_OFF, "the mapping is dropped for good");
	cr_assert_eq(probe_shm_read_hot(shm, &w, &hot), -EBADMSG, "pread: a short read");

	cr_assert_eq(ftruncate(f.fd, (off_t)f.size), 0);
	/* the writer republishes what the cut cleared */
	struct loopstat_shm_slot *s = f.slot;
	s->state = LOOPSTAT_SLOT_ACTIVE;
	s->tid = gettid();
	s->generation = 3;
	fl_stat_set(&s->current_fiber, 12);
	fl_stat_set(&s->poll_since_ns, 888);
	long before = ts_read_calls();
	cr_assert_eq(probe_shm_read_hot(shm, &w, &hot), 0);
	cr_assert_geq(ts_read_calls() - before, 1, "read through pread now");
	cr_assert_eq(hot.current_fiber, 12);
	cr_assert_eq(hot.poll_since_ns, 888);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_OFF);
	probe_shm_close(shm);
	unforge(&f);
}

Test(shm_hot, truncated_to_zero_while_mapped)
{
	cut_then_grow(0, 0);
}

Test(shm_hot, truncated_mid_slot_while_mapped)
{
	size_t page_end;
	uint32_t k = straddling_slot(64, &page_end);
	size_t off = sizeof(struct loopstat_shm_header) + (size_t)k * SLOT_SIZE_V1;
	cut_then_grow(k, (off_t)page_end);              /* at the page boundary inside the slot */
	cut_then_grow(k, (off_t)off + 40);              /* inside the slot's first page, after its head */
}

/* The writer's own slots through the real stats writer: cut to 0, read,
 * restore the image: the values come back, through pread. */
Test(shm_hot, stats_writer_segment_truncated_and_restored)
{
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("cut", LOOPSTAT_BACKEND_LIBEV, 4);
	cr_assert(s);
	fl_stat_set(&s->current_tag, fl_stats_tag_index(s, "db"));
	fl_stat_set(&s->current_fiber, 21);
	struct probe_shm *shm = open_path(fl_stats_path());
	struct probe_shm_worker w[2];
	struct probe_shm_hot hot;
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), 1);
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), 0);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_ON);

	int fd = open(fl_stats_path(), O_RDWR);
	cr_assert_geq(fd, 0);
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	char *img = malloc((size_t)st.st_size);
	cr_assert_eq(pread(fd, img, (size_t)st.st_size, 0), st.st_size);
	cr_assert_eq(ftruncate(fd, 0), 0); /* s must not be touched until it is grown back */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), -EBADMSG);
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), -EBADMSG);
	cr_assert_eq(pwrite(fd, img, (size_t)st.st_size, 0), st.st_size);
	free(img);
	close(fd);
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), 0);
	cr_assert_eq(hot.current_fiber, 21);
	cr_assert_str_eq(hot.fiber_tag, "db");
	fl_stat_set(&s->current_fiber, 22); /* the writer's mapping sees the restored file */
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), 0);
	cr_assert_eq(hot.current_fiber, 22);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_OFF);
	probe_shm_close(shm);
}

/* A cut inside the last page reads as zeros there, and mapped table reads
 * stat the file only with the tid listing: within a second a table read
 * sees the file shrunk and drops the mapping. */
Test(shm_hot, table_read_of_a_shrunk_file_drops_the_mapping)
{
	struct forged f;
	struct probe_shm_worker w;
	struct probe_shm_hot hot;
	forge(&f, LOOPSTAT_SHM_ABI_MINOR, 64, 0);
	struct probe_shm *shm = open_forged(&f, &w);
	cr_assert_eq(ftruncate(f.fd, (off_t)f.size - 1), 0);
	cr_assert_eq(probe_shm_read_hot(shm, &w, &hot), 0, "slot 0's page is whole");
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_ON);
	cr_assert_eq(probe_shm_read(shm, &w, 1, 0), 1, "mapped: slot 0 read, the cut not reached");
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_ON);
	usleep(1100 * 1000); /* past TIDS_TTL_NS: the listing, and the size check, are due */
	cr_assert_eq(probe_shm_read(shm, &w, 1, 0), -EBADMSG);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_OFF);
	cr_assert_eq(probe_shm_read_hot(shm, &w, &hot), 0, "pread: slot 0 is still in the file");
	probe_shm_close(shm);
	unforge(&f);
}

Test(shm_hot, minor_0_writer_has_no_poll_since)
{
	struct forged f;
	struct probe_shm_worker w;
	struct probe_shm_hot hot;
	forge(&f, 0, 8, 2);
	struct probe_shm *shm = open_path(f.path);
	cr_assert_eq(probe_shm_read(shm, &w, 1, 0), 1);
	cr_assert_eq(probe_shm_read_hot(shm, &w, &hot), 0);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_ON);
	cr_assert_eq(hot.current_fiber, 11);
	cr_assert_eq(hot.poll_since_ns, 0, "its padding there means nothing");
	probe_shm_close(shm);
	unforge(&f);
}

/* A minor-1 writer's 832-byte slots are read, their lack of the span
 * histogram as zeros: its padding where span_h0 now lies means nothing. */
Test(shm_hot, minor_1_writer_has_no_span_histogram)
{
	struct forged f;
	struct probe_shm_worker w[3];
	forge(&f, 1, 8, 2);
	uint64_t junk = 99;
	memcpy((char *)f.slot + offsetof(struct loopstat_shm_slot, span_h0), &junk, sizeof(junk));
	struct probe_shm *shm = open_path(f.path);
	cr_assert_eq(probe_shm_read(shm, w, 3, 1), 3);
	cr_assert_eq(w[2].values[PROBE_SHM_current_fiber], 11);
	cr_assert_eq(w[2].values[PROBE_SHM_poll_since_ns], 777);
	for (int k = 0; k < LOOPSTAT_SPAN_BUCKETS; k++)
		cr_assert_eq(w[2].values[PROBE_SHM_span_h0 + k], 0, "span_h%d", k);
	probe_shm_close(shm);
	unforge(&f);
}

/* A segment whose sizes are not 8-byte multiples is read with pread (an
 * aligned load is what makes a mapped read single-copy atomic). */
Test(shm_hot, unaligned_geometry_falls_back_to_pread)
{
	struct forged f;
	struct probe_shm_worker w;
	struct probe_shm_hot hot;
	forge(&f, LOOPSTAT_SHM_ABI_MINOR, 4, 0);
	struct loopstat_shm_header *h = (void *)f.map;
	h->slot_size = sizeof(struct loopstat_shm_slot) + 4;
	h->slot_count = 3;
	struct probe_shm *shm = open_path(f.path);
	cr_assert_eq(probe_shm_read(shm, &w, 1, 0), 1);
	cr_assert_eq(probe_shm_read_hot(shm, &w, &hot), 0);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_OFF);
	cr_assert_eq(hot.current_fiber, 11);
	probe_shm_close(shm);
	unforge(&f);
}

/* ---- SIGBUS that is not a guarded read's ---- */

/* In a child (stderr to /dev/null): raise(SIGBUS), or touch a page of a
 * scratch mapping past its file's end. Returns the child's wait status. */
enum bus_how { BUS_RAISE, BUS_FAULT };

static int bus_child(enum bus_how how, void (*before)(void))
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* under ASan the expected death comes with a report: not the suite's */
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 2);
		if (before)
			before();
		if (how == BUS_RAISE) {
			raise(SIGBUS);
		} else {
			char path[600];
			snprintf(path, sizeof(path), "%s/scratch.%d", dir, (int)getpid());
			int fd = open(path, O_RDWR | O_CREAT, 0600);
			if (fd < 0 || ftruncate(fd, 8192) < 0)
				_exit(90);
			volatile char *p = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
			if (p == MAP_FAILED || ftruncate(fd, 0) < 0)
				_exit(91);
			(void)p[4096];
		}
		_exit(99); /* survived */
	}
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static const char *hot_path;

/* Opens the parent's segment and hot-reads it: the mapping, and with it
 * libprobes' SIGBUS handler, exist in this process. */
static void map_one(void)
{
	struct probe_shm *shm;
	struct probe_shm_worker w;
	struct probe_shm_hot hot;
	if (probe_shm_open(hot_path, &shm) < 0 || probe_shm_read(shm, &w, 1, 0) != 1 ||
	    probe_shm_read_hot(shm, &w, &hot) < 0 || shm_hot_map_state(shm) != SHM_MAP_ON)
		_exit(80);
	/* left open: the mapping stays */
}

static void exit_42(int sig)
{
	(void)sig;
	_exit(42);
}

static void own_handler_then_map(void)
{
	struct sigaction sa = { .sa_handler = exit_42 };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	map_one();
}

/* After libprobes' install, the application replaces it: new segments
 * are not mapped (their truncation would not be caught). */
static void map_then_replace(void)
{
	map_one();
	struct sigaction sa = { .sa_handler = exit_42 };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	struct probe_shm *shm;
	struct probe_shm_worker w;
	struct probe_shm_hot hot;
	if (probe_shm_open(hot_path, &shm) < 0 || probe_shm_read(shm, &w, 1, 0) != 1 ||
	    probe_shm_read_hot(shm, &w, &hot) < 0)
		_exit(81);
	if (shm_hot_map_state(shm) != SHM_MAP_OFF)
		_exit(82);
}

Test(shm_hot, a_sigbus_not_ours_keeps_its_default, .timeout = 60)
{
	/* the process's own SIGBUS behaviour, before libprobes maps anything
	 * (a sanitizer's report under ASan, else death by SIGBUS) */
	int raised = bus_child(BUS_RAISE, NULL), faulted = bus_child(BUS_FAULT, NULL);
	cr_assert(WIFSIGNALED(raised) || WIFEXITED(raised));
	cr_assert(!WIFEXITED(raised) || WEXITSTATUS(raised) != 99);
#ifndef __SANITIZE_ADDRESS__
	cr_assert(WIFSIGNALED(raised) && WTERMSIG(raised) == SIGBUS, "status %#x", raised);
	cr_assert(WIFSIGNALED(faulted) && WTERMSIG(faulted) == SIGBUS, "status %#x", faulted);
#endif
	cr_assert(fl_stats_slot_acquire("bus", LOOPSTAT_BACKEND_LIBEV, 3));
	hot_path = fl_stats_path();
	struct sigaction before, after;
	cr_assert_eq(sigaction(SIGBUS, NULL, &before), 0);

	/* a handler installed before libprobes' is chained to */
	int st = bus_child(BUS_RAISE, own_handler_then_map);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 42, "status %#x", st);
	st = bus_child(BUS_FAULT, own_handler_then_map);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 42, "status %#x", st);
	/* one installed after it: later segments are read with pread */
	st = bus_child(BUS_RAISE, map_then_replace);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 42, "status %#x", st);

	/* with libprobes' handler in place (in this process, then inherited) */
	struct probe_shm *shm = open_path(hot_path);
	struct probe_shm_worker w[2];
	struct probe_shm_hot hot;
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), 1);
	cr_assert_eq(probe_shm_read_hot(shm, &w[0], &hot), 0);
	cr_assert_eq(shm_hot_map_state(shm), SHM_MAP_ON);
	cr_assert_eq(sigaction(SIGBUS, NULL, &after), 0);
	cr_assert(after.sa_flags & SA_SIGINFO);
	cr_assert_neq((void *)after.sa_sigaction, (void *)before.sa_sigaction, "libprobes' handler is installed");
	st = bus_child(BUS_RAISE, NULL);
	cr_assert_eq(st, raised, "raise: status %#x, without libprobes' handler %#x", st, raised);
	st = bus_child(BUS_FAULT, NULL);
	cr_assert_eq(st, faulted, "fault: status %#x, without libprobes' handler %#x", st, faulted);
	st = bus_child(BUS_FAULT, map_one);
	cr_assert_eq(st, faulted, "fault with a mapping: status %#x, without %#x", st, faulted);
	probe_shm_close(shm);
}
