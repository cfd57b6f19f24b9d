/* Stats writer against its own segment's other users: strict mode, no writable-by-others file, private geometry. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop.h"
#include "fiberloop_stats.h"
#include "fl_internal.h"
#include "support/support.h"
#include "support/users.h"

static char *dir;
static struct ts_user user;

static void setup(void)
{
	dir = ts_tmpdir("distrust");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
	unsetenv(LOOPSTAT_SHM_MODE_ENV);
}

static void teardown(void)
{
	fl_stats_close();
	ts_user_del(&user);
	ts_rmtree_free(dir);
}

TestSuite(stats_distrust, .init = setup, .fini = teardown, .timeout = 30);

static int entries(const char *d)
{
	int n = 0;
	DIR *dd = opendir(d);
	cr_assert(dd);
	struct dirent *de;
	while ((de = readdir(dd)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(dd);
	return n;
}

Test(stats_distrust, mode_parser_takes_octal_digits_only_and_refuses_writable_by_others)
{
	static const struct { const char *text; int err; mode_t mode; } cases[] = {
		{ "0600", 0, 0600 },  { "600", 0, 0600 },       { "0640", 0, 0640 },   { "0644", 0, 0644 },
		{ "0755", 0, 0755 },  { "0400", 0, 0400 },      { "0666", -EPERM, 0 }, { "0777", -EPERM, 0 },
		{ "0002", -EPERM, 0 }, { "0622", -EPERM, 0 },  { "0620", -EPERM, 0 }, { "1777", -EINVAL, 0 },
		{ "4600", -EINVAL, 0 }, { "640 ", -EINVAL, 0 }, { " 640", -EINVAL, 0 }, { "abc", -EINVAL, 0 },
		{ "", -EINVAL, 0 },   { "0", -EINVAL, 0 },      { "0x1a4", -EINVAL, 0 }, { "08", -EINVAL, 0 },
		{ "+600", -EINVAL, 0 }, { "-600", -EINVAL, 0 }, { "0200", -EINVAL, 0 },
		{ "77777777777777777777777", -EINVAL, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mode_t m = 01234;
		int err = fl__stats_parse_mode(cases[i].text, &m);
		cr_expect_eq(err, cases[i].err, "\"%s\": %d, want %d", cases[i].text, err, cases[i].err);
		if (cases[i].err == 0)
			cr_expect_eq(m, cases[i].mode, "\"%s\": %o", cases[i].text, (unsigned)m);
	}
	mode_t m;
	cr_assert_eq(fl__stats_check_mode(0666, &m), -EPERM, "fl_stats_options.mode is held to the same rule");
	cr_assert_eq(fl__stats_check_mode(0640, &m), 0);
}

static void *one_snooze(void *arg)
{
	fl_snooze();
	return arg;
}

/* In a child with stderr on a pipe: open with LOOPSTAT_SHM_MODE=text, then
 * run a loop. Exit 0 when the open was refused and the loop still ran. */
static int refused_in_child(const char *text, char *err_out, size_t len)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		setenv(LOOPSTAT_SHM_MODE_ENV, text, 1);
		int rc = fl_stats_open(NULL);
		void *res = NULL;
		int run = fl_run(one_snooze, (void *)1, NULL, &res);
		_exit(rc < 0 && fl_stats_path() == NULL && run == 0 && res == (void *)1 ? 0 : 1);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t n;
	while (got < len - 1 && (n = read(p[0], err_out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	err_out[got] = '\0';
	close(p[0]);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(stats_distrust, unsafe_or_malformed_mode_is_refused_loudly_and_the_loop_runs_unpublished)
{
	static const char *bad[] = { "0666", "0777", "0002", "1777", "640 ", "abc" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[1024];
		cr_assert_eq(refused_in_child(bad[i], err, sizeof(err)), 0, "mode \"%s\" not refused", bad[i]);
		cr_assert(strstr(err, "libfiberloop: stats segment not published"), "\"%s\": %s", bad[i], err);
		cr_assert(strstr(err, "LOOPSTAT_SHM_MODE=") && strstr(err, "refused"), "\"%s\": %s", bad[i], err);
		if (bad[i][0] == '0')
			cr_assert(strstr(err, "group/other write"), "\"%s\": %s", bad[i], err);
		cr_assert_eq(entries(dir), 0, "\"%s\" left a file", bad[i]);
	}
	/* and an accepted mode still publishes, with that mode */
	setenv(LOOPSTAT_SHM_MODE_ENV, "0640", 1);
	cr_assert_eq(fl_stats_open(NULL), 0);
	struct stat st;
	cr_assert_eq(stat(fl_stats_path(), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640);
}

struct attempt {
	const char *path;
	int rdwr_errno, trunc_errno, rdonly_ok;
};

static int other_user_attacks(void *arg)
{
	struct attempt *a = arg;
	int fd = open(a->path, O_RDWR);
	int rdwr = fd < 0 ? errno : 0;
	int tr = truncate(a->path, 0) < 0 ? errno : 0;
	int ro = open(a->path, O_RDONLY);
	int rdonly = ro >= 0;
	/* a read-only descriptor cannot shrink it either */
	int ftr = ro >= 0 && ftruncate(ro, 0) == 0;
	return (rdwr == EACCES) | (tr == EACCES) << 1 | rdonly << 2 | ftr << 3;
}

Test(stats_distrust, another_user_cannot_truncate_the_segment)
{
	ts_user_add(&user);
	cr_assert_eq(chmod(dir, 0755), 0); /* the user may look, as in /dev/shm */
	static const mode_t modes[] = { 0600, 0640, 0644 };
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct fl_stats_options o = { .mode = modes[i] };
		cr_assert_eq(fl_stats_open(&o), 0);
		struct loopstat_shm_slot *s = fl_stats_slot_acquire("victim", LOOPSTAT_BACKEND_LIBEV, -1);
		cr_assert(s);
		struct stat before, after;
		cr_assert_eq(stat(fl_stats_path(), &before), 0);
		struct attempt a = { .path = fl_stats_path() };
		int r = ts_as_user(&user, other_user_attacks, &a, 10000);
		cr_assert_geq(r, 0, "the other user's child died");
		cr_assert(r & 1, "mode %o: the other user opened it for writing", (unsigned)modes[i]);
		cr_assert(r & 2, "mode %o: the other user truncated it", (unsigned)modes[i]);
		cr_assert_eq(!!(r & 4), modes[i] == 0644, "mode %o: read access", (unsigned)modes[i]);
		cr_assert_eq(r & 8, 0, "mode %o: truncated through a read-only fd", (unsigned)modes[i]);
		/* the writer is alive and its mapping intact: these stores would SIGBUS otherwise */
		fl_stat_add(&s->switches, 5);
		fl_stat_add(&s->poll_since_ns, 1);
		cr_assert_eq(stat(fl_stats_path(), &after), 0);
		cr_assert_eq(after.st_size, before.st_size);
		fl_stats_slot_release(s);
		fl_stats_close();
	}
}

Test(stats_distrust, writer_geometry_is_private)
{
	struct fl_stats_options o = { .slot_count = 4 };
	cr_assert_eq(fl_stats_open(&o), 0);
	struct loopstat_shm_slot *s0 = fl_stats_slot_acquire("s0", LOOPSTAT_BACKEND_LIBEV, -1);
	cr_assert(s0);
	char *base = (char *)s0 - sizeof(struct loopstat_shm_header);
	struct loopstat_shm_header *h = (void *)base;
	cr_assert_eq(h->magic, LOOPSTAT_SHM_MAGIC, "slot 0 follows the header");
	struct stat before;
	cr_assert_eq(stat(fl_stats_path(), &before), 0);

	/* someone with write access rewrites the geometry in the file */
	int fd = open(fl_stats_path(), O_RDWR);
	cr_assert_geq(fd, 0);
	uint32_t evil[3] = { 0x7ffffff0u, 1, 1u << 20 }; /* header_size, slot_size, slot_count */
	cr_assert_eq(pwrite(fd, evil, sizeof(evil), offsetof(struct loopstat_shm_header, header_size)),
		     (ssize_t)sizeof(evil));
	close(fd);
	cr_assert_eq(h->slot_count, 1u << 20, "the forged geometry is visible in the mapping");

	char *lo = base + sizeof(struct loopstat_shm_header);
	char *hi = lo + 4 * sizeof(struct loopstat_shm_slot);
	for (int i = 1; i < 4; i++) {
		char tag[16];
		snprintf(tag, sizeof(tag), "s%d", i);
		struct loopstat_shm_slot *s = fl_stats_slot_acquire(tag, LOOPSTAT_BACKEND_LIBEV, -1);
		cr_assert(s, "slot %d: %s", i, strerror(errno));
		cr_assert((char *)s >= lo && (char *)s + sizeof(*s) <= hi, "slot %d out of bounds", i);
		cr_assert_eq(((char *)s - lo) % sizeof(*s), 0, "slot %d not on the writer's stride", i);
		cr_assert_str_eq(s->tag, tag);
		fl_stat_add(&s->ops, (uint64_t)i);
	}
	errno = 0;
	cr_assert_null(fl_stats_slot_acquire("s4", LOOPSTAT_BACKEND_LIBEV, -1), "the 5th slot does not exist");
	cr_assert_eq(errno, ENOSPC);
	/* each tag is in the file where the writer's own geometry puts it */
	fd = open(fl_stats_path(), O_RDONLY);
	for (int i = 0; i < 4; i++) {
		struct loopstat_shm_slot s;
		cr_assert_eq(pread(fd, &s, sizeof(s), (off_t)(sizeof(struct loopstat_shm_header) + i * sizeof(s))),
			     (ssize_t)sizeof(s));
		char tag[16];
		snprintf(tag, sizeof(tag), "s%d", i);
		cr_assert_str_eq(s.tag, tag);
	}
	close(fd);
	struct stat after;
	cr_assert_eq(stat(fl_stats_path(), &after), 0);
	cr_assert_eq(after.st_size, before.st_size, "nothing written past the end");
}
