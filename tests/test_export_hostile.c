/* Export's files against another local user who can write the spool or textfile directory: planted symlinks, hard links and FIFOs never make a root run clobber, create or hang on anything; a foreign lock is taken over when stale and refused loudly when held, its text never echoed raw; unsafe directories are refused with the fix. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exitcodes.h"
#include "export/export_run.h"
#include "export/export_spool.h"
#include "support/carbon.h"
#include "support/support.h"
#include "support/users.h"

static struct ts_user user;
static char *dir;
static pid_t holder = -1;   /* the other user's lock holder, killed by teardown */
static char victim[3][400], created[400];

static void setup(void)
{
	dir = ts_tmpdir("exphostile");
	cr_assert_eq(chmod(dir, 0755), 0);   /* the other user walks through it */
	for (int i = 0; i < 3; i++) {
		snprintf(victim[i], sizeof(victim[i]), "%s/victim%d", dir, i);
		cr_assert_eq(ts_write_file(victim[i], "precious\n", 9), 0);
		chmod(victim[i], 0644);
	}
	snprintf(created, sizeof(created), "%s/created", dir);
}

static void teardown(void)
{
	if (holder > 0) {
		kill(holder, SIGKILL);
		waitpid(holder, NULL, 0);
	}
	ts_user_del(&user);
	ts_rmtree_free(dir);
}

TestSuite(export_hostile, .init = setup, .fini = teardown, .timeout = 60);

static void victims_intact(const char *when)
{
	for (int i = 0; i < 3; i++) {
		char *text = ts_read_file(victim[i]);
		cr_assert_str_eq(text, "precious\n", "%s: root overwrote %s through a planted name", when, victim[i]);
		free(text);
	}
	cr_assert_neq(access(created, F_OK), 0, "%s: root created %s through a planted name", when, created);
}

/* ---- a carbon stand-in: reads every connection to EOF, counts lines ------ */

struct sink {
	int lfd, port;
	volatile int stop, lines, up;
	pthread_t th;
};

static void *sink_main(void *arg)
{
	struct sink *k = arg;
	__atomic_store_n(&k->up, 1, __ATOMIC_RELEASE);
	while (!k->stop) {
		struct pollfd p = { k->lfd, POLLIN, 0 };
		if (poll(&p, 1, 50) <= 0)
			continue;
		int c = accept(k->lfd, NULL, NULL);
		if (c < 0)
			continue;
		char buf[65536];
		ssize_t n;
		while ((n = read(c, buf, sizeof(buf))) > 0)
			for (ssize_t i = 0; i < n; i++)
				k->lines += buf[i] == '\n';
		close(c);
	}
	return NULL;
}

static void sink_start(struct sink *k)
{
	memset(k, 0, sizeof(*k));
	k->port = carbon_free_port();
	k->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(k->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)k->port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	cr_assert_eq(bind(k->lfd, (struct sockaddr *)&a, sizeof(a)), 0, "bind: %s", strerror(errno));
	cr_assert_eq(listen(k->lfd, 16), 0);
	cr_assert_eq(pthread_create(&k->th, NULL, sink_main, k), 0);
	/* the runs are forked children: a fork while the thread is still
	 * being set up (ASan's thread registry, its allocator) left the
	 * first run's child stuck in its first malloc for good (ci42) */
	while (!__atomic_load_n(&k->up, __ATOMIC_ACQUIRE))
		usleep(1000);
}

static void sink_stop(struct sink *k)
{
	k->stop = 1;
	pthread_join(k->th, NULL);
	close(k->lfd);
}

/* ---- one export run in a child: its pid is known before it starts --------- */

struct xrun {
	pid_t pid;
	int go;
	long long t0, ms;
	char log[400];
};

static void xrun_start(struct xrun *x, const struct export_opts *o, const char *tag)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	snprintf(x->log, sizeof(x->log), "%s/log.%s", dir, tag);
	x->pid = fork();
	cr_assert_geq(x->pid, 0);
	if (x->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		char c;
		if (read(p[0], &c, 1) != 1)
			_exit(125);
		FILE *log = fopen(x->log, "w");
		if (!log)
			_exit(124);
		int64_t now = time(NULL);
		struct expo_point pts[3];
		for (int i = 0; i < 3; i++)
			pts[i] = (struct expo_point){ .prefix = "t", .host = "h", .process = "p", .pid = 1, .tid = i,
			                                .metric = "m", .value = i, .ts = now };
		struct export_input in = { pts, 3, now, "h", 0 };
		struct export_result r;
		int code = export_run(o, &in, stdout, log, &r);
		fclose(log);
		_exit(code);
	}
	close(p[0]);
	x->go = p[1];
}

static void xrun_go(struct xrun *x)
{
	x->t0 = ts_now_ms();
	cr_assert_eq(write(x->go, "g", 1), 1);
	close(x->go);
}

/* Its exit code, or -1 when it still ran after timeout_ms (left running
 * unless kill_it); *log (caller frees) gets what it printed so far. */
static int xrun_end(struct xrun *x, int timeout_ms, char **log, int kill_it)
{
	int st = 0, code = -1, done = 0;
	while (!(done = waitpid(x->pid, &st, WNOHANG) == x->pid) && ts_now_ms() - x->t0 <= timeout_ms)
		usleep(10 * 1000);
	if (!done && kill_it) {
		kill(x->pid, SIGKILL);
		waitpid(x->pid, NULL, 0);
	}
	x->ms = ts_now_ms() - x->t0;
	if (done && WIFEXITED(st))
		code = WEXITSTATUS(st);
	*log = ts_read_file(x->log);
	return code;
}

static int xrun_wait(struct xrun *x, int timeout_ms, char **log)
{
	return xrun_end(x, timeout_ms, log, 1);
}

static int run(const struct export_opts *o, const char *tag, char **log)
{
	struct xrun x;
	xrun_start(&x, o, tag);
	xrun_go(&x);
	return xrun_wait(&x, 20000, log);
}

static void opts(struct export_opts *o, const char *spool, int port)
{
	export_opts_init(o);
	snprintf(o->spool, sizeof(o->spool), "%s", spool);
	if (port)
		snprintf(o->graphite, sizeof(o->graphite), "127.0.0.1:%d", port);
	snprintf(o->prefix, sizeof(o->prefix), "t");
	o->timeout_s = 1;
	o->lock_wait_s = 0.3;
}

/* ---- what the other user does ------------------------------------------- */

enum kind { LINK, FIFO, FILE_ };

struct plant {
	char path[700];
	enum kind kind;
	const char *arg;   /* the link's target, or the file's text */
};

static int plant_fn(void *arg)
{
	struct plant *p = arg;
	switch (p->kind) {
	case LINK: return symlink(p->arg, p->path) == 0 ? 0 : 1;
	case FIFO: return mkfifo(p->path, 0666) == 0 ? 0 : 1;
	default: return ts_write_file(p->path, p->arg, strlen(p->arg)) == 0 && chmod(p->path, 0644) == 0 ? 0 : 1;
	}
}

__attribute__((format(printf, 3, 4))) static void plant(enum kind kind, const char *arg, const char *fmt, ...)
{
	struct plant p = { .kind = kind, .arg = arg };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p.path, sizeof(p.path), fmt, ap);
	va_end(ap);
	cr_assert_eq(ts_as_user(&user, plant_fn, &p, 10000), 0, "the other user could not plant %s", p.path);
}

/* dir/name with that owner and mode (chmod after chown: chown may clear bits). */
static void make_dir(char *path, size_t len, const char *name, uid_t uid, gid_t gid, mode_t mode)
{
	snprintf(path, len, "%s/%s", dir, name);
	cr_assert_eq(mkdir(path, 0700), 0, "mkdir %s: %s", path, strerror(errno));
	cr_assert_eq(chown(path, uid, gid), 0);
	cr_assert_eq(chmod(path, mode), 0);
}

/* ---- the tests ----------------------------------------------------------- */

/* A spool its owner (not root) or anyone can rewrite is no place for root's
 * files: refused before anything is opened in it. */
Test(export_hostile, spool_of_another_user_or_writable_by_others_is_refused)
{
	ts_user_add(&user);
	struct { const char *name; int theirs; mode_t mode; const char *fix; } cases[] = {
		{ "theirs", 1, 0755, "chown" },
		{ "world", 0, 0777, "chmod" },
		{ "group", 0, 0770, "chmod" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char spool[600], *log;
		make_dir(spool, sizeof(spool), cases[i].name, cases[i].theirs ? user.uid : 0, user.gid, cases[i].mode);
		plant(LINK, victim[0], "%s/lock.send", spool);
		plant(LINK, created, "%s/lock.append", spool);
		struct export_opts o;
		opts(&o, spool, 1);
		int code = run(&o, cases[i].name, &log);
		victims_intact(cases[i].name);
		cr_assert_eq(code, EXIT_ACCESS, "%s: %d: %s", cases[i].name, code, log);
		cr_assert(strstr(log, spool) && strstr(log, cases[i].fix), "%s: the message says how to fix it: %s",
		          cases[i].name, log);
		free(log);
	}
}

/* A sticky directory the other user can write (group-writable: the
 * kernel's protected_symlinks only guards world-writable ones): the temp
 * files of the spool are never opened through the user's links. */
Test(export_hostile, sticky_spool_planted_temp_links_clobber_nothing)
{
	ts_user_add(&user);
	char spool[600], *log;
	make_dir(spool, sizeof(spool), "spool", 0, user.gid, 01770);
	struct sink k;
	sink_start(&k);
	struct export_opts o;
	opts(&o, spool, k.port);
	cr_assert_eq(run(&o, "first", &log), EXIT_OK, "%s", log);
	free(log);
	int before = k.lines;

	struct xrun x;
	xrun_start(&x, &o, "planted");
	plant(LINK, victim[0], "%s/.tmp.next", spool);
	plant(LINK, victim[1], "%s/.tmp.cursor.127_0_0_1_%d", spool, k.port);
	plant(LINK, victim[2], "%s/.tmp.seg.%d", spool, (int)x.pid);
	xrun_go(&x);
	int code = xrun_wait(&x, 20000, &log);
	victims_intact("temp links");
	cr_assert_eq(code, EXIT_OK, "%d: %s", code, log);
	cr_assert_geq(k.lines - before, 3, "the run still delivered");
	free(log);
	sink_stop(&k);
}

/* Lock files planted as links (one dangling) or hard-linked to root's file
 * are refused, never truncated, written or created. */
Test(export_hostile, sticky_spool_planted_locks_are_refused)
{
	ts_user_add(&user);
	char spool[600], path[700], *log;
	make_dir(spool, sizeof(spool), "spool", 0, user.gid, 01770);
	plant(LINK, created, "%s/lock.append", spool);
	plant(LINK, victim[0], "%s/lock.send", spool);
	struct export_opts o;
	opts(&o, spool, 1);
	int code = run(&o, "links", &log);
	victims_intact("lock links");
	cr_assert_eq(code, EXIT_ACCESS, "%d: %s", code, log);
	cr_assert(strstr(log, "lock.append") && strstr(log, "symbolic link"), "%s", log);
	free(log);

	/* a hard link to root's own file passes an owner check: its link count does not */
	snprintf(path, sizeof(path), "%s/lock.append", spool);
	cr_assert_eq(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/lock.send", spool);
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(link(victim[1], path), 0, "%s", strerror(errno));
	code = run(&o, "hardlink", &log);
	victims_intact("lock hard link");
	cr_assert_eq(code, EXIT_ACCESS, "%d: %s", code, log);
	cr_assert(strstr(log, "lock.send") && strstr(log, "links"), "%s", log);
	free(log);
}

/* A FIFO where a segment or a temp file goes: before, the run blocked in
 * open(2) for good, holding its lock, and every later run exited 75. */
Test(export_hostile, fifos_never_hang_a_run_nor_hold_the_lock)
{
	ts_user_add(&user);
	char spool[600], *log;
	make_dir(spool, sizeof(spool), "spool", 0, user.gid, 01770);
	struct sink k;
	sink_start(&k);
	struct export_opts o;
	opts(&o, spool, k.port);
	cr_assert_eq(run(&o, "first", &log), EXIT_OK, "%s", log);
	free(log);
	static const char *const what[] = { "a segment", "the segment's temp file", "a cursor's temp file" };
	for (int i = 0; i < 3; i++) {
		struct xrun x;
		char tag[16];
		snprintf(tag, sizeof(tag), "fifo%d", i);
		xrun_start(&x, &o, tag);
		if (i == 0)
			/* sscanf's %llu skips the newline: still a segment's name */
			plant(FIFO, NULL, "%s/seg.\n%016d.%lld", spool, 900000000, (long long)time(NULL));
		else if (i == 1)
			plant(FIFO, NULL, "%s/.tmp.seg.%d", spool, (int)x.pid);
		else
			plant(FIFO, NULL, "%s/.tmp.cursor.127_0_0_1_%d", spool, k.port);
		xrun_go(&x);
		/* lock-wait + timeout + 1 s is the bound; 6 s leaves room for a loaded machine */
		int code = xrun_end(&x, 6000, &log, 0);
		char *log2 = NULL;
		int later = 0;
		if (code < 0) {
			/* what the hang does to the next run, for the message */
			struct xrun y;
			xrun_start(&y, &o, "later");
			xrun_go(&y);
			later = xrun_wait(&y, 10000, &log2);
			kill(x.pid, SIGKILL);
			waitpid(x.pid, NULL, 0);
		}
		cr_assert_geq(code, 0, "a FIFO as %s hung the run past --timeout; the next run exited %d: %s", what[i],
		              later, log2 ? log2 : "");
		cr_assert_eq(code, EXIT_OK, "FIFO as %s: %d: %s", what[i], code, log);
		cr_assert_lt(x.ms, 5000, "FIFO as %s: %lld ms", what[i], x.ms);
		if (i == 0)
			cr_assert(strstr(log, "not a regular file") && strstr(log, "seg.?0000000900000000."),
			          "said loudly, on one line: %s", log);
		free(log);
		free(log2);
	}
	/* and the run after them finds the lock free */
	o.lock_wait_s = 0;
	cr_assert_eq(run(&o, "after", &log), EXIT_OK, "%s", log);
	free(log);
	sink_stop(&k);
}

struct holder {
	char path[700];
	int ready[2];
};

/* As the other user: its own lock.send, with a terminal escape for text, held. */
static int hold_lock(void *arg)
{
	struct holder *h = arg;
	int fd = open(h->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || flock(fd, LOCK_EX) < 0)
		return 1;
	const char text[] = "\033]2;pwned\a\033[2J\n";
	if (write(fd, text, sizeof(text) - 1) < 0 || write(h->ready[1], "r", 1) != 1)
		return 1;
	pause();
	return 0;
}

static pid_t start_holder(struct holder *h)
{
	cr_assert_eq(pipe(h->ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (ts_become(&user) < 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL);   /* after: a change of uid clears it */
		_exit(hold_lock(h));
	}
	char c;
	cr_assert_eq(read(h->ready[0], &c, 1), 1, "the other user's lock holder did not start");
	return pid;
}

/* Another user's lock.send: held by a live process, refused loudly (not a
 * quiet 75 for ever) and its text never reaches root's terminal raw; once
 * its holder is gone, taken over. Our own lock whose holder died is taken
 * at once. */
Test(export_hostile, foreign_lock_refused_while_held_taken_over_when_stale)
{
	ts_user_add(&user);
	char spool[600], lock[700], *log;
	make_dir(spool, sizeof(spool), "spool", 0, user.gid, 01770);
	snprintf(lock, sizeof(lock), "%s/lock.send", spool);
	struct holder h;
	snprintf(h.path, sizeof(h.path), "%s", lock);
	holder = start_holder(&h);
	struct sink k;
	sink_start(&k);
	struct export_opts o;
	opts(&o, spool, k.port);
	int code = run(&o, "held", &log);
	char uid[32];
	snprintf(uid, sizeof(uid), "uid %d", (int)user.uid);
	cr_assert_null(strchr(log, '\033'), "the other user's text reached root's stderr raw: %s", log);
	cr_assert_null(strchr(log, '\a'), "%s", log);
	cr_assert_eq(code, EXIT_ACCESS, "%d: %s", code, log);
	cr_assert(strstr(log, "lock.send") && strstr(log, uid) && strstr(log, "held"), "%s", log);
	free(log);

	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	holder = -1;
	close(h.ready[0]);
	close(h.ready[1]);
	code = run(&o, "stale", &log);
	cr_assert_eq(code, EXIT_OK, "%d: %s", code, log);
	cr_assert_null(strchr(log, '\033'), "%s", log);
	struct stat st;
	cr_assert_eq(lstat(lock, &st), 0);
	cr_assert_eq(st.st_uid, 0, "the stale lock of uid %d was taken over", (int)user.uid);
	free(log);

	/* ours, its holder killed: taken without waiting for --lock-wait */
	pid_t pid = fork();
	if (pid == 0) {
		struct export_spool s;
		struct export_spool_opts so = { 1 << 20, 3600, 0 };
		char err[512];
		if (export_spool_open(&s, spool, &so, err, sizeof(err)) < 0 || export_spool_lock_send(&s, err, sizeof(err)) < 0)
			_exit(1);
		raise(SIGKILL);
	}
	int st2;
	waitpid(pid, &st2, 0);
	cr_assert(WIFSIGNALED(st2), "the holder did not take the lock: %d", st2);
	o.lock_wait_s = 3;
	code = run(&o, "dead", &log);
	cr_assert_eq(code, EXIT_OK, "%d: %s", code, log);
	free(log);
	sink_stop(&k);
}

/* The textfile directory under the same rules; its temp file never opened
 * through a planted link or FIFO. */
Test(export_hostile, textfile_directory_and_temp_file)
{
	ts_user_add(&user);
	struct { const char *name; int theirs; mode_t mode; const char *fix; } bad[] = {
		{ "theirs", 1, 0755, "chown" },
		{ "world", 0, 0777, "chmod" },
	};
	char tdir[600], path[700], *log;
	struct export_opts o;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		make_dir(tdir, sizeof(tdir), bad[i].name, bad[i].theirs ? user.uid : 0, 0, bad[i].mode);
		snprintf(path, sizeof(path), "%s/loopstat.prom", tdir);
		opts(&o, "", 0);
		snprintf(o.prometheus_textfile, sizeof(o.prometheus_textfile), "%s", path);
		int code = run(&o, bad[i].name, &log);
		cr_assert_eq(code, EXIT_ACCESS, "%s: %d: %s", bad[i].name, code, log);
		cr_assert(strstr(log, tdir) && strstr(log, bad[i].fix), "%s: %s", bad[i].name, log);
		cr_assert_neq(access(path, F_OK), 0, "%s: nothing written", bad[i].name);
		free(log);
	}

	make_dir(tdir, sizeof(tdir), "sticky", 0, user.gid, 01770);
	snprintf(path, sizeof(path), "%s/loopstat.prom", tdir);
	snprintf(o.prometheus_textfile, sizeof(o.prometheus_textfile), "%s", path);
	for (int fifo = 0; fifo < 2; fifo++) {
		struct xrun x;
		xrun_start(&x, &o, fifo ? "fifo" : "link");
		if (fifo)
			plant(FIFO, NULL, "%s.tmp.%d", path, (int)x.pid);
		else
			plant(LINK, victim[0], "%s.tmp.%d", path, (int)x.pid);
		xrun_go(&x);
		int code = xrun_wait(&x, 6000, &log);
		victims_intact("textfile temp link");
		cr_assert_eq(code, EXIT_OK, "%s: %d (-1: hung): %s", fifo ? "fifo" : "link", code, log);
		char *text = ts_read_file(path);
		cr_assert(strstr(text, "t_m{"), "%s", text);
		free(text);
		free(log);
	}
}

static int default_spool_as_user(void *arg)
{
	unsetenv("HOME");
	unsetenv("XDG_STATE_HOME");
	struct export_opts o;
	export_opts_init(&o);
	return strcmp(o.spool, (const char *)arg) == 0 ? 0 : 1;
}

/* With HOME unset the spool was /tmp/.local/state/loopstat/spool, in a
 * directory every user shares; a spool is never created inside one. */
Test(export_hostile, default_spool_is_never_in_a_shared_directory)
{
	ts_user_add(&user);
	char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	unsetenv("HOME");
	struct export_opts o;
	export_opts_init(&o);
	if (home)
		setenv("HOME", home, 1);
	free(home);
	cr_assert_str_eq(o.spool, "/var/spool/loopstat");

	struct passwd *pw = getpwuid(user.uid);
	cr_assert(pw);
	static char want[600];
	snprintf(want, sizeof(want), "%s/.local/state/loopstat/spool", pw->pw_dir);
	cr_assert_eq(ts_as_user(&user, default_spool_as_user, want, 10000), 0,
	             "uid %d without HOME: not %s", (int)user.uid, want);

	char shared[600], spool[700], *log;
	make_dir(shared, sizeof(shared), "shared", 0, 0, 01777);
	snprintf(spool, sizeof(spool), "%s/spool", shared);
	opts(&o, spool, 1);
	int code = run(&o, "shared", &log);
	cr_assert_eq(code, EXIT_ACCESS, "%d: %s", code, log);
	cr_assert(strstr(log, "refusing to create") && strstr(log, shared), "%s", log);
	cr_assert_neq(access(spool, F_OK), 0, "%s was created", spool);
	free(log);
}
