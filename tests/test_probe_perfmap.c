/* Perf maps: JIT names read from real children's /tmp/perf-PID.map, and hostile maps (links, FIFOs, other owners, garbage, bounds) refused or bounded. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe_perfmap.h"
#include "support/probe_child.h"

static pid_t child;
static char path[64];

static void setup(void)
{
	child = tchild_fork(tchild_park_pause, NULL);
	cr_assert(child > 0);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)child);
	unlink(path);
}

static void teardown(void)
{
	unlink(path);
	tchild_reap(child);
}

static void write_map(const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);
	cr_assert(f, "fopen(%s): %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

/* The name at addr, "" when none. */
static const char *name_at(struct probe_perfmap *m, uint64_t addr, uint64_t *off)
{
	const char *n = NULL;
	uint64_t o = 0;
	int r = probe_perfmap_lookup(m, child, addr, &n, &o);
	cr_assert(r >= 0, "lookup: %s", strerror(-r));
	if (off)
		*off = o;
	return r == 1 ? n : "";
}

TestSuite(probe_perfmap, .init = setup, .fini = teardown, .timeout = PROBE_TEST_TIMEOUT);

Test(probe_perfmap, names_newest_wins_garbage_skipped)
{
	write_map("1000 100 LazyCompile:*burnCpuForAWhile /srv/app.js:3\n"
		  "not a line at all\n"
		  "zz 10 bad start\n"
		  "2000 0 empty size\n"
		  "3000 100 py::handler:/srv/app.py\x01\x1b[31m\n"
		  "1080 10 JS:~inner /srv/app.js:9\n"
		  "0x4000 20 Interpreter\n"
		  "ffffffffffffffff 10 wraps around\n"
		  "5000 10 no newline at the end", "w");
	struct probe_perfmap *m = probe_perfmap_new();
	cr_assert(m);
	uint64_t off;
	cr_expect_str_eq(name_at(m, 0x1010, &off), "LazyCompile:*burnCpuForAWhile /srv/app.js:3");
	cr_expect_eq(off, 0x10);
	cr_expect_str_eq(name_at(m, 0x1085, &off), "JS:~inner /srv/app.js:9", "a later overlapping line wins");
	cr_expect_eq(off, 5);
	cr_expect_str_eq(name_at(m, 0x10f0, NULL), "LazyCompile:*burnCpuForAWhile /srv/app.js:3");
	cr_expect_str_eq(name_at(m, 0x3000, NULL), "py::handler:/srv/app.py??[31m", "control bytes cleaned");
	cr_expect_str_eq(name_at(m, 0x4010, NULL), "Interpreter");
	cr_expect_str_eq(name_at(m, 0x1100, NULL), "", "end is exclusive");
	cr_expect_str_eq(name_at(m, 0x2000, NULL), "");
	cr_expect_str_eq(name_at(m, 0x5005, NULL), "", "a partial last line waits for its newline");
	cr_expect_eq(probe_perfmap_status(m, child), 0);
	probe_perfmap_delete(m);
}

Test(probe_perfmap, long_name_cut_at_a_word)
{
	char line[2048];
	int n = snprintf(line, sizeof(line), "1000 10 JS:*f ");
	while (n < 1500)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "word%d ", n);
	snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	write_map(line, "w");
	struct probe_perfmap *m = probe_perfmap_new();
	const char *name = name_at(m, 0x1000, NULL);
	size_t len = strlen(name);
	cr_assert(len > 100 && len <= PROBE_PERFMAP_NAME_MAX, "length %zu", len);
	cr_expect(strncmp(line + 8, name, len) == 0 && line[8 + len] == ' ', "cut at a space: '%s'", name + len - 10);
	probe_perfmap_delete(m);
}

Test(probe_perfmap, grows_read_again_after_a_second)
{
	write_map("1000 100 first\n", "w");
	struct probe_perfmap *m = probe_perfmap_new();
	cr_expect_str_eq(name_at(m, 0x1000, NULL), "first");
	write_map("2000 100 second\n1000 100 first-recompiled\n", "a");
	cr_expect_str_eq(name_at(m, 0x2000, NULL), "", "not looked at again within a second");
	struct timespec d = { 1, 100000000 };
	nanosleep(&d, NULL);
	cr_expect_str_eq(name_at(m, 0x2000, NULL), "second");
	cr_expect_str_eq(name_at(m, 0x1000, NULL), "first-recompiled");
	/* replaced by a shorter file: read from the start */
	unlink(path);
	write_map("3000 10 third\n", "w");
	nanosleep(&d, NULL);
	cr_expect_str_eq(name_at(m, 0x3000, NULL), "third");
	cr_expect_str_eq(name_at(m, 0x2000, NULL), "", "the old file's lines are gone");
	probe_perfmap_delete(m);
}

Test(probe_perfmap, link_refused)
{
	char real[64];
	snprintf(real, sizeof(real), "/tmp/perfmap-real-%d", (int)getpid());
	FILE *f = fopen(real, "w");
	cr_assert(f);
	fputs("1000 100 through-a-link\n", f);
	fclose(f);
	cr_assert(symlink(real, path) == 0);
	struct probe_perfmap *m = probe_perfmap_new();
	cr_expect_str_eq(name_at(m, 0x1000, NULL), "");
	cr_expect_eq(probe_perfmap_status(m, child), -ELOOP);
	probe_perfmap_delete(m);
	unlink(real);
}

Test(probe_perfmap, fifo_refused_without_blocking)
{
	cr_assert(mkfifo(path, 0600) == 0);
	struct probe_perfmap *m = probe_perfmap_new();
	cr_expect_str_eq(name_at(m, 0x1000, NULL), "");
	cr_expect_eq(probe_perfmap_status(m, child), -EPERM);
	probe_perfmap_delete(m);
}

Test(probe_perfmap, other_owner_refused)
{
	write_map("1000 100 planted\n", "w");
	cr_assert(chown(path, 12345, 12345) == 0, "chown: %s", strerror(errno));
	struct probe_perfmap *m = probe_perfmap_new();
	cr_expect_str_eq(name_at(m, 0x1000, NULL), "");
	cr_expect_eq(probe_perfmap_status(m, child), -EPERM);
	probe_perfmap_delete(m);
}

static void park_as_nobody(void *arg, int ready_fd)
{
	(void)arg;
	if (setgid(65534) != 0 || setuid(65534) != 0)
		_exit(2);
	prctl(PR_SET_DUMPABLE, 1);   /* keep /proc/PID ours to read, owned by the user */
	tchild_ready(ready_fd);
	for (;;)
		pause();
}

Test(probe_perfmap, owner_is_the_targets_user)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to run a child as another user");
	tchild_reap(child);
	child = tchild_fork(park_as_nobody, NULL);
	cr_assert(child > 0);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)child);
	write_map("1000 100 users-own\n", "w");
	cr_assert(chown(path, 65534, 65534) == 0);
	struct probe_perfmap *m = probe_perfmap_new();
	cr_expect_str_eq(name_at(m, 0x1000, NULL), "users-own");
	probe_perfmap_forget(m, child);
	cr_assert(chown(path, 12345, 12345) == 0);
	cr_expect_str_eq(name_at(m, 0x1000, NULL), "", "another user's file in the target's /tmp");
	cr_expect_eq(probe_perfmap_status(m, child), -EPERM);
	probe_perfmap_delete(m);
}

Test(probe_perfmap, entry_bound_keeps_what_was_read)
{
	FILE *f = fopen(path, "w");
	cr_assert(f);
	for (unsigned i = 0; i < PROBE_PERFMAP_ENTRIES_MAX + 100; i++)
		fprintf(f, "%x 10 f%u\n", 0x100000 + i * 0x10, i);
	fclose(f);
	struct probe_perfmap *m = probe_perfmap_new();
	cr_expect_str_eq(name_at(m, 0x100000 + 7 * 0x10, NULL), "f7");
	cr_expect_str_eq(name_at(m, 0x100000 + (uint64_t)(PROBE_PERFMAP_ENTRIES_MAX + 50) * 0x10, NULL), "");
	cr_expect_eq(probe_perfmap_status(m, child), -EFBIG);
	probe_perfmap_delete(m);
}
