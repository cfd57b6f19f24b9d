/* Segment reader against hostile users: phantom slots, huge sparse files, junk floods, exec leftovers, setuid, pre-claimed names. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fiberloop_stats.h"
#include "probe_shm.h"
#include "probe_stat.h"
#include "support/children.h"
#include "support/support.h"
#include "support/users.h"

static char *dir;
static struct ts_user user;
static pid_t child = -1;

static void setup(void)
{
	dir = ts_tmpdir("hostile");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	fl_stats_close();
	ts_user_del(&user);
	ts_rmtree_free(dir);
}

TestSuite(shm_hostile, .init = setup, .fini = teardown, .timeout = 60);

static double now_s(void) { return (double)ts_now_ms() / 1000.0; }

static long maxrss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* A legacy-named segment for this process: header with slots of slot_size,
 * slot_count of them; the file is `file_size` bytes (sparse past what is
 * written). Slot i < nactive is ACTIVE naming tid_of(i). */
static char *forge(uint32_t slot_size, uint32_t slot_count, off_t file_size, uint32_t nactive,
		   pid_t (*tid_of)(uint32_t))
{
	struct probe_stat st;
	cr_assert_eq(probe_stat_read(getpid(), 0, &st), 0);
	struct loopstat_shm_header h = {
		.magic = LOOPSTAT_SHM_MAGIC, .abi_major = LOOPSTAT_SHM_ABI_MAJOR, .abi_minor = LOOPSTAT_SHM_ABI_MINOR,
		.byte_order = LOOPSTAT_SHM_BYTE_ORDER, .header_size = sizeof(h), .slot_size = slot_size,
		.slot_count = slot_count, .pid = getpid(), .start_time = st.start_time, .ready = 1,
	};
	static char path[512];
	snprintf(path, sizeof(path), "%s/loopstat.%d", dir, (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, file_size), 0);
	cr_assert_eq(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	char *slot = calloc(1, slot_size);
	for (uint32_t i = 0; i < nactive; i++) {
		struct loopstat_shm_slot *s = (void *)slot;
		s->state = LOOPSTAT_SLOT_ACTIVE;
		s->tid = tid_of(i);
		s->wait_fd = -1;
		s->switches = i;
		cr_assert_eq(pwrite(fd, slot, slot_size, (off_t)sizeof(h) + (off_t)i * slot_size), (ssize_t)slot_size);
	}
	free(slot);
	close(fd);
	return path;
}

/* slot 0: this thread; then tids that are no thread of ours: free tids past
 * pid_max, 0, -1, init's, another process's, and ours again */
static pid_t phantom_tid(uint32_t i)
{
	switch (i) {
	case 0: return gettid();
	case 1: return 0;
	case 2: return -1;
	case 3: return 1;
	case 4: return getppid();
	case 5: return gettid();
	default: return (pid_t)(0x3fff0000 + i);
	}
}

Test(shm_hostile, phantom_slots_are_rejected)
{
	char *path = forge(sizeof(struct loopstat_shm_slot), 1024, 1024 * (off_t)sizeof(struct loopstat_shm_slot) +
							      (off_t)sizeof(struct loopstat_shm_header),
			   1024, phantom_tid);
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	static struct probe_shm_worker w[1024];
	double t0 = now_s();
	for (int round = 0; round < 50; round++) {
		cr_assert_eq(probe_shm_read(shm, w, 1024, 0), 1, "only the slot naming a thread of ours");
		struct probe_shm_read_info info;
		probe_shm_last_read(shm, &info);
		/* every slot but the first refused, and the read gave up on the
		 * table once refusals far outnumbered our threads */
		cr_assert_eq(info.rejected, info.slots - 1);
		cr_assert_geq(info.rejected, 64);
		cr_assert_lt(info.slots, 1024);
		cr_assert(info.over_budget);
	}
	double per_read = (now_s() - t0) / 50;
	cr_log_info("phantom segment (1024 ACTIVE slots): %.1f us per read", per_read * 1e6);
	cr_assert_eq(w[0].tid, gettid());
	cr_assert_lt(per_read, 0.02, "a read of 1024 phantom slots took %.3f s", per_read);
	probe_shm_close(shm);
}

static pid_t self_tid(uint32_t i)
{
	return i == 0 ? gettid() : (pid_t)(0x3fff0000 + i);
}

Test(shm_hostile, oversized_sparse_segment_reads_in_bounded_time_and_memory)
{
	/* 1 GiB sparse file; the header claims 65000 slots of 1 KiB (~64 MiB, the most accepted) */
	char *path = forge(1024, 65000, (off_t)1 << 30, 1, self_tid);
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	long rss0 = maxrss_kb();
	double t0 = now_s();
	struct probe_shm_worker w[4];
	for (int round = 0; round < 1000; round++)
		cr_assert_eq(probe_shm_read(shm, w, 4, 0), 1);
	double per_read = (now_s() - t0) / 1000;
	struct probe_shm_read_info info;
	probe_shm_last_read(shm, &info);
	cr_log_info("sparse 1 GiB segment: %.1f us per read, %zu bytes read, maxrss +%ld KiB", per_read * 1e6,
		    info.bytes, maxrss_kb() - rss0);
	cr_assert_leq(info.bytes, 8192, "read %zu bytes: up to the first never-used slot only", info.bytes);
	cr_assert_lt(per_read, 0.001);
	cr_assert_lt(maxrss_kb() - rss0, 4096, "maxrss grew by %ld KiB", maxrss_kb() - rss0);
	probe_shm_close(shm);

	/* slots ACTIVE far into the file: one read stops at its byte budget */
	path = forge(1024, 65000, (off_t)1 << 30, 4096, self_tid);
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	t0 = now_s();
	cr_assert_eq(probe_shm_read(shm, w, 4, 0), 1);
	probe_shm_last_read(shm, &info);
	cr_assert(info.over_budget);
	cr_assert_leq(info.bytes, PROBE_SHM_READ_BUDGET);
	cr_assert_lt(now_s() - t0, 0.1);
	probe_shm_close(shm);

	/* a header claiming more than the reader ever reads is refused outright */
	path = forge(16384, 65536, (off_t)1 << 30, 1, self_tid);
	cr_assert_eq(probe_shm_open(path, &shm), -EBADMSG);
}

struct tally {
	size_t calls, live;
	pid_t want;
	char live_path[512];
};

/* The sampler's way: every candidate is opened, the live ones kept. */
static int open_each(const char *path, pid_t pid, void *arg)
{
	struct tally *t = arg;
	struct probe_shm *shm;
	t->calls++;
	if (probe_shm_open(path, &shm) == 0) {
		if (pid == t->want) {
			t->live++;
			snprintf(t->live_path, sizeof(t->live_path), "%s", path);
		}
		probe_shm_close(shm);
	}
	return 0;
}

#define JUNK 100000

Test(shm_hostile, scan_among_100000_junk_files_is_bounded, .timeout = 120)
{
	/* /dev/shm itself, where the flood would be */
	char tmpl[] = "/dev/shm/lst-junk.XXXXXX";
	cr_assert(mkdtemp(tmpl));
	setenv(LOOPSTAT_SHM_DIR_ENV, tmpl, 1);
	char *jdir = strdup(tmpl);
	cr_assert(fl_stats_slot_acquire("real", LOOPSTAT_BACKEND_LIBEV, -1));
	char p[600];
	double t0 = now_s();
	for (int i = 0; i < JUNK; i++) {
		/* a third each: suffixed garbage claiming us, legacy names of
		 * free pids, names that are not segment names at all */
		if (i % 3 == 0)
			snprintf(p, sizeof(p), "%s/loopstat.%d.%x", jdir, (int)getpid(), i);
		else if (i % 3 == 1)
			snprintf(p, sizeof(p), "%s/loopstat.%d", jdir, 4194304 + i);
		else
			snprintf(p, sizeof(p), "%s/loopstat.%dx", jdir, i);
		int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
		cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
		cr_assert_eq(write(fd, "junk", 4), 4);
		close(fd);
	}
	cr_log_info("created %d junk files in %.2f s", JUNK, now_s() - t0);

	struct tally first = { .want = getpid() }, again = { .want = getpid() }, steady = { .want = getpid() };
	t0 = now_s();
	cr_assert_eq(probe_shm_scan(jdir, open_each, &first), 0);
	double t_first = now_s() - t0;
	t0 = now_s();
	cr_assert_eq(probe_shm_scan(jdir, open_each, &again), 0);
	double t_again = now_s() - t0;
	/* the directory has not changed since the last listing */
	t0 = now_s();
	cr_assert_eq(probe_shm_scan(jdir, open_each, &steady), 0);
	double t_steady = now_s() - t0;
	cr_log_info("scan with %d junk files: first %.1f ms (%zu calls), next %.1f ms (%zu calls), "
		    "unchanged directory %.2f ms (%zu calls), %zu cached",
		    JUNK, t_first * 1e3, first.calls, t_again * 1e3, again.calls, t_steady * 1e3, steady.calls,
		    probe_shm_cache_size());
	cr_assert_eq(first.live, 1, "the real segment is found among the junk");
	cr_assert_eq(again.live, 1, "and again");
	cr_assert_eq(steady.live, 1, "and again");
	cr_assert_str_eq(steady.live_path, fl_stats_path());
	cr_assert_eq(first.calls, 1 + 2 * ((JUNK + 2) / 3) - (JUNK % 3 == 1), "only segment names are offered");
	cr_assert_eq(again.calls, 1, "refused files are not offered again");
	cr_assert_eq(steady.calls, 1);
	cr_assert_lt(t_again, 1.0, "a re-scan took %.3f s", t_again);
	cr_assert_lt(t_steady, 0.05, "a re-scan of an unchanged directory took %.3f s", t_steady);

	/* a new segment name is seen at once: the directory's mtime moved */
	snprintf(p, sizeof(p), "%s/loopstat.%d.newname", jdir, (int)getpid());
	cr_assert_eq(ts_write_file(p, "", 0), 0);
	struct tally grown = { .want = getpid() };
	cr_assert_eq(probe_shm_scan(jdir, open_each, &grown), 0);
	cr_assert_eq(grown.calls, 2, "the new file is offered");

	/* a file that goes away leaves the cache at the next complete scan */
	snprintf(p, sizeof(p), "%s/loopstat.%d.%x", jdir, (int)getpid(), 0);
	cr_assert_eq(unlink(p), 0);
	size_t before = probe_shm_cache_size();
	cr_assert_eq(probe_shm_scan(jdir, open_each, &again), 0);
	cr_assert_eq(probe_shm_scan(jdir, open_each, &again), 0);
	cr_assert_lt(probe_shm_cache_size(), before);

	fl_stats_close();
	ts_rmtree_free(jdir);
}

static int record(const char *path, pid_t pid, void *arg)
{
	(void)pid;
	char *seen = arg;
	const char *dot = strrchr(path, '.');
	seen[strtol(dot + 1, NULL, 16)]++;
	return 0;
}

Test(shm_hostile, budgeted_scan_gives_every_file_its_turn)
{
	char p[600];
	enum { N = 2500, BUDGET = 1000 };
	for (int i = 0; i < N; i++) {
		snprintf(p, sizeof(p), "%s/loopstat.%d.%x", dir, (int)getpid(), i);
		cr_assert_eq(ts_write_file(p, "", 0), 0);
	}
	static char seen[N];
	probe_shm_scan_budget(BUDGET);
	for (int scan = 0; scan < 3; scan++) {
		int before = 0, after = 0;
		for (int i = 0; i < N; i++)
			before += seen[i];
		cr_assert_eq(probe_shm_scan(dir, record, seen), 0);
		for (int i = 0; i < N; i++)
			after += seen[i];
		cr_assert_eq(after - before, BUDGET, "scan %d called fn %d times", scan, after - before);
	}
	probe_shm_scan_budget(0);
	for (int i = 0; i < N; i++)
		cr_assert_geq(seen[i], 1, "file %x never offered in 3 budgeted scans", i);
}

/* ---- processes that change under their segment --------------------------- */

struct gate {
	int ready[2], go[2];
};

static void gate_init(struct gate *g)
{
	cr_assert_eq(pipe(g->ready), 0);
	cr_assert_eq(pipe(g->go), 0);
}

/* Child: publish a slot, report, wait for the word, exec prog. */
static void publish_then_exec(struct gate *g, const char *prog, const struct ts_user *as)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (as && ts_become(as) < 0)
		_exit(126);
	char ok = fl_stats_slot_acquire("pre-exec", LOOPSTAT_BACKEND_LIBEV, -1) ? 'y' : 'n';
	if (write(g->ready[1], &ok, 1) != 1 || read(g->go[0], &ok, 1) != 1)
		_exit(125);
	execl(prog, "sleep", "30", (char *)NULL);
	_exit(127);
}

static pid_t spawn_publisher(struct gate *g, const char *prog, const struct ts_user *as, char *path, size_t len)
{
	gate_init(g);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		publish_then_exec(g, prog, as);
	child = pid;
	char ok = 0;
	cr_assert_eq(read(g->ready[0], &ok, 1), 1);
	cr_assert_eq(ok, 'y', "the child could not publish");
	cr_assert_eq(ts_shm_segment(dir, pid, path, len), 0);
	return pid;
}

/* Lets the child exec and waits until its segment is no longer trusted. */
static int after_exec(struct gate *g, struct probe_shm *shm)
{
	cr_assert_eq(write(g->go[1], "x", 1), 1);
	int err = 0;
	for (int i = 0; i < 500 && (err = probe_shm_check_writer(shm)) == 0; i++)
		usleep(10000);
	return err;
}

Test(shm_hostile, segment_left_by_exec_is_stale)
{
	struct gate g;
	char path[600];
	pid_t pid = spawn_publisher(&g, "/bin/sleep", NULL, path, sizeof(path));
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0);
	cr_assert_eq(probe_shm_check_writer(shm), 0);
	cr_assert_eq(probe_shm_stale(path, pid), 0, "a live segment is not stale");
	struct probe_shm_worker w[2];
	cr_assert_eq(probe_shm_read(shm, w, 2, 0), 1);

	cr_assert_eq(after_exec(&g, shm), -ENOLINK, "the exec'd process no longer maps its segment");
	probe_shm_close(shm);
	cr_assert_eq(probe_shm_open(path, &shm), -ENOLINK, "and it is not opened again");
	cr_assert_eq(probe_shm_stale(path, pid), -ENOLINK, "gc would remove it");
	cr_assert_str_eq(probe_shm_stale_why(-ENOLINK), "no longer maps it");

	/* the real CLI: list shows no instrumented worker for it, gc removes it */
	char *out = NULL;
	char *list[] = { (char *)ts_loopstat_bin(), "list", "--json", "--duration", "0.3", NULL };
	cr_assert_eq(ts_run(list, &out, 10000), 4, "no worker is nothing to measure: %s", out);
	cr_assert(strstr(out, "\"workers\":[]"), "an exec leftover is no worker: %s", out);
	free(out);
	char *gc[] = { (char *)ts_loopstat_bin(), "gc", NULL };
	cr_assert_eq(ts_run(gc, &out, 10000), 0, "%s", out);
	cr_assert(strstr(out, "no longer maps it") && strstr(out, "1 stale segment removed"), "%s", out);
	free(out);
	cr_assert_neq(access(path, F_OK), 0, "gc removed %s", path);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	child = -1;
	cr_assert_eq(probe_shm_stale(path, pid), -ESRCH, "and its path is gone");
}

Test(shm_hostile, setuid_exec_makes_the_segment_untrusted)
{
	ts_user_add(&user);
	cr_assert_eq(chmod(dir, 01777), 0); /* like /dev/shm */
	/* a setuid-root copy of sleep, in a directory only root can write */
	char *bin = ts_tmpdir("suid");
	cr_assert_eq(chmod(bin, 0755), 0);
	char prog[600], cmd[2048];
	snprintf(prog, sizeof(prog), "%s/sleep", bin);
	snprintf(cmd, sizeof(cmd), "cp /bin/sleep %s && chown root:root %s && chmod 4755 %s", prog, prog, prog);
	cr_assert_eq(system(cmd), 0);

	struct gate g;
	char path[600];
	pid_t pid = spawn_publisher(&g, prog, &user, path, sizeof(path));
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_uid, user.uid, "the user's own segment");
	struct probe_shm *shm;
	cr_assert_eq(probe_shm_open(path, &shm), 0, "trusted while the user runs it");
	int err = after_exec(&g, shm);
	/* execve replaces the memory map before it commits the new credentials:
	 * caught in between, the segment is unmapped (-ENOLINK) while the uid
	 * is still the old one; the exec's end state is what this is about */
	for (int i = 0; i < 500 && err == -ENOLINK; i++) {
		usleep(10000);
		err = probe_shm_check_writer(shm);
	}
	char exe[600] = "";
	char link[64];
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(link, exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	cr_assert_eq(err, -EPERM, "after the setuid exec (%s) the owner no longer matches: %d", exe, err);
	probe_shm_close(shm);
	cr_assert_eq(probe_shm_open(path, &shm), -EPERM, "nor opened again");
	ts_rmtree_free(bin);
}

/* ---- names claimed by another user ---------------------------------------- */

struct claim {
	const char *path;
	int kind; /* 0 file, 1 symlink, 2 directory */
};

static int claim_name(void *arg)
{
	struct claim *c = arg;
	switch (c->kind) {
	case 0: return ts_write_file(c->path, "mine", 4) == 0 ? 0 : 1;
	case 1: return symlink("/etc/passwd", c->path) == 0 ? 0 : 1;
	default: return mkdir(c->path, 0755) == 0 ? 0 : 1;
	}
}

Test(shm_hostile, names_claimed_by_another_user_do_not_blind_a_worker)
{
	ts_user_add(&user);
	cr_assert_eq(chmod(dir, 01777), 0);
	static const char *kinds[] = { "file", "symlink", "directory" };
	for (int kind = 0; kind < 3; kind++) {
		struct gate g;
		gate_init(&g);
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			char c;
			if (read(g.go[0], &c, 1) != 1)
				_exit(125);
			c = fl_stats_slot_acquire("worker", LOOPSTAT_BACKEND_LIBEV, -1) ? 'y' : 'n';
			if (write(g.ready[1], &c, 1) != 1)
				_exit(125);
			pause();
			_exit(0);
		}
		child = pid;
		/* the other user takes the legacy name and a guess at the new one */
		char legacy[600], guess[600];
		snprintf(legacy, sizeof(legacy), "%s/loopstat.%d", dir, (int)pid);
		snprintf(guess, sizeof(guess), "%s/loopstat.%d.0000000000000000", dir, (int)pid);
		struct claim c1 = { legacy, kind }, c2 = { guess, kind };
		cr_assert_eq(ts_as_user(&user, claim_name, &c1, 10000), 0);
		cr_assert_eq(ts_as_user(&user, claim_name, &c2, 10000), 0);

		cr_assert_eq(write(g.go[1], "x", 1), 1);
		char ok = 0;
		cr_assert_eq(read(g.ready[0], &ok, 1), 1);
		cr_assert_eq(ok, 'y', "%s: the worker could not publish", kinds[kind]);
		struct tally t = { .want = pid };
		cr_assert_eq(probe_shm_scan(dir, open_each, &t), 0);
		cr_assert_eq(t.live, 1, "%s: the worker's segment is found, the claimed names refused", kinds[kind]);
		cr_assert_neq(strcmp(t.live_path, legacy), 0);
		cr_assert_neq(strcmp(t.live_path, guess), 0);
		struct probe_shm *shm;
		cr_assert_eq(probe_shm_open(t.live_path, &shm), 0);
		struct probe_shm_worker w[2];
		cr_assert_eq(probe_shm_read(shm, w, 2, 0), 1);
		cr_assert_eq(w[0].tid, pid);
		probe_shm_close(shm);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		child = -1;
		cr_assert(unlink(legacy) == 0 || rmdir(legacy) == 0);
		cr_assert(unlink(guess) == 0 || rmdir(guess) == 0);
	}
}

/* ---- the whole monitor against phantom segments --------------------------- */

/* Child: a legacy-named segment for itself whose 1024 ACTIVE slots all name
 * tids that are no thread of it, then sleep until killed. */
static void phantom_publisher(int ready_fd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct probe_stat st;
	if (probe_stat_read(getpid(), 0, &st) < 0)
		_exit(1);
	struct loopstat_shm_header h = {
		.magic = LOOPSTAT_SHM_MAGIC, .abi_major = LOOPSTAT_SHM_ABI_MAJOR, .abi_minor = LOOPSTAT_SHM_ABI_MINOR,
		.byte_order = LOOPSTAT_SHM_BYTE_ORDER, .header_size = sizeof(h), .slot_size = sizeof(struct loopstat_shm_slot),
		.slot_count = 1024, .pid = getpid(), .start_time = st.start_time, .ready = 1,
	};
	char path[512];
	snprintf(path, sizeof(path), "%s/loopstat.%d", dir, (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		_exit(1);
	struct loopstat_shm_slot s = { .state = LOOPSTAT_SLOT_ACTIVE, .wait_fd = -1 };
	for (uint32_t i = 0; i < 1024; i++) {
		s.tid = (pid_t)(0x3fff0000 + i);
		if (pwrite(fd, &s, sizeof(s), (off_t)sizeof(h) + (off_t)i * (off_t)sizeof(s)) != (ssize_t)sizeof(s))
			_exit(1);
	}
	close(fd);
	if (write(ready_fd, "x", 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

Test(shm_hostile, phantom_segments_neither_slow_nor_fool_the_monitor, .timeout = 60)
{
	enum { NPHANTOM = 30 };
	pid_t kids[NPHANTOM];
	int ready[2];
	cr_assert_eq(pipe(ready), 0);
	for (int i = 0; i < NPHANTOM; i++) {
		kids[i] = fork();
		cr_assert_geq(kids[i], 0);
		if (kids[i] == 0)
			phantom_publisher(ready[1]);
		char c;
		cr_assert_eq(read(ready[0], &c, 1), 1, "phantom publisher %d", i);
	}
	/* a real worker beside them: a 50%-idle loop named with -p */
	const char *args[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	pid_t real = tc_spawn_example("duty_cycle", args, NULL);
	char pids[16];
	snprintf(pids, sizeof(pids), "%d", (int)real);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--duration", "2", "--rate", "200", "-p", pids, NULL };
	char *out = NULL;
	/* -p names one process, so the others' segments are not even opened:
	 * run it once more without -p, where every phantom is read */
	char *argv_all[] = { (char *)ts_loopstat_bin(), "list", "--json", "--duration", "2", "--rate", "200", NULL };
	for (int pass = 0; pass < 2; pass++) {
		long long t0 = ts_now_ms();
		/* without -p no phantom is a worker: nothing to measure (4) */
		cr_assert_eq(ts_run(pass ? argv_all : argv, &out, 20000), pass ? 4 : 0, "%s", out);
		long long took = ts_now_ms() - t0;
		cr_log_info("pass %d: list --duration 2 took %lld ms beside %d phantom segments", pass, took, NPHANTOM);
		cr_assert_lt(took, 4000, "a 2-s list took %lld ms beside phantom segments", took);
		cr_assert(!strstr(out, "\"tid\":1073676288"), "a phantom tid became a row: %s", out);
		if (pass == 0) {
			cr_assert(strstr(out, "\"samples\":"), "%s", out);
			const char *p = strstr(out, "\"samples\":");
			long samples = strtol(p + 10, NULL, 10);
			cr_assert_gt(samples, 200 * 2 * 7 / 10, "the real worker kept its rate: %ld samples in 2 s at 200 Hz",
				     samples);
		} else {
			cr_assert(strstr(out, "\"workers\":[]"), "no phantom is a worker: %s", out);
		}
		free(out);
	}
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	cr_assert_lt(ru.ru_maxrss, 256 * 1024, "a child's memory reached %ld KiB", ru.ru_maxrss);
	for (int i = 0; i < NPHANTOM; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}
	tc_kill(real);
}
