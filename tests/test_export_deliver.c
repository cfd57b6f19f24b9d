/* Export delivery against a fake carbon in the test: down then up, stall, reset mid-batch, slow reader, unresolvable name, dead node beside a live one, spool full, max-age, unwritable spool, overlapping runs. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "exitcodes.h"
#include "export/export_run.h"
#include "export/export_spool.h"
#include "cli.h"
#include "support/support.h"
#include "support/carbon.h"

enum mode { GOOD, STALL, RESET, SLOW };

/* self-report lines of a run with one destination: 5 global + 5 for it */
enum { SELF_DEST_LINES = 5, SELF_LINES = 5 + SELF_DEST_LINES };

struct fake {
	int lfd, port;
	enum mode mode;
	volatile int stop;
	pthread_t th;
	pthread_mutex_t mu;
	char *got;          /* every byte received by GOOD/SLOW connections */
	size_t len, cap;
	int conns;
};

static void keep(struct fake *f, const char *buf, size_t n)
{
	pthread_mutex_lock(&f->mu);
	if (f->len + n + 1 > f->cap) {
		f->cap = (f->len + n + 1) * 2;
		f->got = realloc(f->got, f->cap);
	}
	memcpy(f->got + f->len, buf, n);
	f->len += n;
	f->got[f->len] = '\0';
	pthread_mutex_unlock(&f->mu);
}

static void serve(struct fake *f, int c)
{
	char buf[65536], *mine = NULL;
	size_t total = 0;
	struct timespec slow = { 0, 5 * 1000000L };
	for (;;) {
		if (f->stop)
			break;
		if (f->mode == STALL) {
			nanosleep(&slow, NULL);
			continue;
		}
		struct pollfd p = { c, POLLIN, 0 };
		if (poll(&p, 1, 50) <= 0)
			continue;
		ssize_t n = recv(c, buf, f->mode == SLOW ? 2048 : sizeof(buf), 0);
		if (n <= 0)
			break;
		total += (size_t)n;
		if (f->mode == RESET && total > 1000) {
			struct linger l = { 1, 0 };
			setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
			break;
		}
		mine = realloc(mine, total + 1);
		memcpy(mine + total - (size_t)n, buf, (size_t)n);
		if (f->mode == SLOW)
			nanosleep(&slow, NULL);
	}
	/* what a connection delivered counts only once it ended in EOF, as in carbon */
	if ((f->mode == GOOD || f->mode == SLOW) && !f->stop && mine)
		keep(f, mine, total);
	free(mine);
	close(c);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	while (!f->stop) {
		struct pollfd p = { f->lfd, POLLIN, 0 };
		if (poll(&p, 1, 50) <= 0)
			continue;
		int c = accept(f->lfd, NULL, NULL);
		if (c < 0)
			continue;
		f->conns++;
		serve(f, c);
	}
	return NULL;
}

static void fake_start(struct fake *f, int port, enum mode mode)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->mu, NULL);
	f->mode = mode;
	f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(f->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                         .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	cr_assert_eq(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0, "bind %d: %s", port, strerror(errno));
	cr_assert_eq(listen(f->lfd, 16), 0);
	f->port = port;
	pthread_create(&f->th, NULL, fake_main, f);
}

static void fake_stop(struct fake *f)
{
	f->stop = 1;
	pthread_join(f->th, NULL);
	close(f->lfd);
}

/* Lines of f->got containing needle. */
static int count(struct fake *f, const char *needle)
{
	int n = 0;
	pthread_mutex_lock(&f->mu);
	for (const char *p = f->got; p && (p = strstr(p, needle)); p++)
		n++;
	pthread_mutex_unlock(&f->mu);
	return n;
}

struct run {
	struct export_opts o;
	struct export_result r;
	char *log;
	size_t loglen;
	int code;
	long long ms;
};

static void opts(struct export_opts *o, const char *dir, const char *graphite)
{
	export_opts_init(o);
	snprintf(o->spool, sizeof(o->spool), "%s/spool", dir);
	snprintf(o->graphite, sizeof(o->graphite), "%s", graphite);
	snprintf(o->prefix, sizeof(o->prefix), "t");
	o->timeout_s = 1.5;
	o->lock_wait_s = 0.3;
}

/* One run of npts points "t.h.proc.<run>.<i>.m" with timestamps now-i. */
static void run_once(struct run *x, int run_id, int npts, int64_t now)
{
	struct expo_point *pts = calloc((size_t)npts + 1, sizeof(*pts));
	for (int i = 0; i < npts; i++)
		pts[i] = (struct expo_point){ .prefix = "t", .host = "h", .process = "proc", .pid = run_id,
		                                .tid = i, .metric = "m", .value = run_id * 1000 + i, .ts = now - i };
	FILE *log = open_memstream(&x->log, &x->loglen);
	long long t0 = ts_now_ms();
	struct export_input in = { pts, (size_t)npts, now, "h", 0 };
	x->code = export_run(&x->o, &in, stdout, log, &x->r);
	x->ms = ts_now_ms() - t0;
	fclose(log);
	free(pts);
}

static int lines_of_run(struct fake *f, int run_id)
{
	char needle[64];
	snprintf(needle, sizeof(needle), "t.h.proc.%d.", run_id);
	return count(f, needle);
}

/* Lines of every delivery but the last arrive twice (new, then once more at
 * the head of the next delivery: carbon-cache may have lost them); older
 * ones are never sent again, and new ones always exactly once. */
Test(export_deliver, down_then_up_none_lost_last_delivery_resent_once, .timeout = 20)
{
	char *dir = ts_tmpdir("expdown");
	int port = carbon_free_port();
	char dest[64];
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", port);
	struct run a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
	opts(&a.o, dir, dest);
	int64_t now = time(NULL);
	run_once(&a, 1, 50, now - 60);
	cr_assert_eq(a.code, EXIT_DEFERRED, "%s", a.log);
	cr_assert(strstr(a.log, dest) && strstr(a.log, "deferred"), "%s", a.log);
	cr_assert_eq(strchr(a.log, '\n'), a.log + a.loglen - 1, "one line per destination: %s", a.log);
	cr_assert_eq(a.r.dest[0].pending, 50 + SELF_LINES, "50 points + %d self-report lines spooled, %lu", SELF_LINES,
	             (unsigned long)a.r.dest[0].pending);
	cr_assert_gt(a.r.spool_bytes, 0);

	struct fake f;
	fake_start(&f, port, GOOD);
	b.o = a.o;
	run_once(&b, 2, 50, now);
	cr_assert_eq(b.code, EXIT_OK, "%s", b.log);
	cr_assert_eq(b.loglen, 0, "a clean run prints nothing: %s", b.log);
	cr_assert_eq(lines_of_run(&f, 1), 50);
	cr_assert_eq(lines_of_run(&f, 2), 50);
	cr_assert_eq(b.r.dest[0].resent, 0, "nothing was delivered before: nothing to resend");
	/* the spooled points first, with their original timestamps */
	char first[128];
	snprintf(first, sizeof(first), "t.h.proc.1.0.m 1000 %lld\n", (long long)(now - 60));
	cr_assert(strstr(f.got, first), "%s", f.got);
	cr_assert_lt(strstr(f.got, "t.h.proc.1.49.m"), strstr(f.got, "t.h.proc.2.0.m"));
	/* the first run's self-report came along and says what happened then */
	cr_assert_eq(count(&f, "t.h.loopstat.export.127_0_0_1_"), 2 * SELF_DEST_LINES);
	cr_assert_eq(count(&f, ".pending 50 "), 1, "%s", f.got);
	cr_assert_eq(b.r.dest[0].pending, 0);
	cr_assert_eq(b.r.dest[0].sent, 2 * (50 + SELF_LINES));
	cr_assert_eq(b.r.spool_bytes, (int64_t)f.len, "what b delivered stays, for one resend");
	size_t blen = f.len;

	/* the next run sends b's delivery once more, first, then its own */
	c.o = a.o;
	run_once(&c, 3, 50, now);
	cr_assert_eq(c.code, EXIT_OK, "%s", c.log);
	cr_assert_eq(c.r.dest[0].resent, 2 * (50 + SELF_LINES));
	cr_assert_eq(c.r.dest[0].sent, 50 + SELF_LINES);
	cr_assert_eq(strncmp(f.got + blen, first, strlen(first)), 0, "the resend leads: %.80s", f.got + blen);
	cr_assert_eq(lines_of_run(&f, 1), 2 * 50);
	cr_assert_eq(lines_of_run(&f, 2), 2 * 50);
	cr_assert_eq(lines_of_run(&f, 3), 50);
	cr_assert_eq(c.r.spool_bytes, (int64_t)(f.len - 2 * blen), "only c's own delivery stays");
	/* and the one after: c's delivery again, never b's */
	d.o = a.o;
	run_once(&d, 4, 50, now);
	cr_assert_eq(d.code, EXIT_OK, "%s", d.log);
	cr_assert_eq(d.r.dest[0].resent, 50 + SELF_LINES);
	cr_assert_eq(lines_of_run(&f, 1), 2 * 50, "nothing older than the last delivery is resent");
	cr_assert_eq(lines_of_run(&f, 2), 2 * 50);
	cr_assert_eq(lines_of_run(&f, 3), 2 * 50);
	cr_assert_eq(lines_of_run(&f, 4), 50);
	/* c's figure "resent 120" went out with c, and once more with d */
	char fig[64];
	snprintf(fig, sizeof(fig), ".resent %d ", 2 * (50 + SELF_LINES));
	cr_assert_eq(count(&f, fig), 2, "%s", f.got);
	fake_stop(&f);
	free(f.got);
	free(a.log);
	free(b.log);
	free(c.log);
	free(d.log);
	ts_rmtree_free(dir);
}

static void faulty_then_good(enum mode mode, const char *expect)
{
	char *dir = ts_tmpdir("expfault");
	int port = carbon_free_port();
	char dest[64];
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", port);
	struct fake bad, good;
	fake_start(&bad, port, mode);
	struct run a = { 0 }, b = { 0 };
	opts(&a.o, dir, dest);
	int64_t now = time(NULL);
	/* enough lines that a reset lands mid-batch */
	run_once(&a, 1, 300, now);
	cr_assert_eq(a.code, EXIT_DEFERRED, "%s", a.log);
	cr_assert(strstr(a.log, expect), "want '%s' in: %s", expect, a.log);
	cr_assert_lt(a.ms, 1500 + 1500, "the run keeps its time budget: %lld ms", a.ms);
	cr_assert_eq(a.r.dest[0].sent, 0);
	fake_stop(&bad);
	free(bad.got);
	fake_start(&good, port, GOOD);
	b.o = a.o;
	run_once(&b, 2, 10, now);
	cr_assert_eq(b.code, EXIT_OK, "%s", b.log);
	cr_assert_eq(b.r.dest[0].resent, 0, "a batch in doubt is sent again as new, never as a resend");
	cr_assert_eq(lines_of_run(&good, 1), 300);
	cr_assert_eq(lines_of_run(&good, 2), 10);
	fake_stop(&good);
	free(good.got);
	free(a.log);
	free(b.log);
	ts_rmtree_free(dir);
}

Test(export_deliver, accepts_then_stalls, .timeout = 20)
{
	faulty_then_good(STALL, "did not close: delivery unconfirmed");
}

Test(export_deliver, resets_mid_batch, .timeout = 20)
{
	faulty_then_good(RESET, "reset");
}

Test(export_deliver, slow_reader_still_delivers, .timeout = 20)
{
	char *dir = ts_tmpdir("expslow");
	int port = carbon_free_port();
	char dest[64];
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", port);
	struct fake f;
	fake_start(&f, port, SLOW);
	struct run a = { 0 };
	opts(&a.o, dir, dest);
	a.o.timeout_s = 5;
	run_once(&a, 1, 1000, time(NULL));   /* ~45 KB at 2 KB per 5 ms */
	cr_assert_eq(a.code, EXIT_OK, "%s", a.log);
	cr_assert_eq(lines_of_run(&f, 1), 1000);
	fake_stop(&f);
	free(f.got);
	free(a.log);
	ts_rmtree_free(dir);
}

Test(export_deliver, dead_and_unresolvable_never_stall_a_live_node, .timeout = 20)
{
	char *dir = ts_tmpdir("expdead");
	int live = carbon_free_port(), dead = carbon_free_port();
	char dest[160];
	snprintf(dest, sizeof(dest), "127.0.0.1:%d,no-such-host.invalid:2003,127.0.0.1:%d", live, dead);
	struct fake f, g;
	fake_start(&f, live, GOOD);
	struct run a = { 0 }, b = { 0 };
	opts(&a.o, dir, dest);
	int64_t now = time(NULL);
	run_once(&a, 1, 20, now);
	cr_assert_eq(a.code, EXIT_DEFERRED, "%s", a.log);
	cr_assert_lt(a.ms, 4000, "%lld ms", a.ms);
	cr_assert(strstr(a.log, "no-such-host.invalid:2003: ") && strstr(a.log, "cannot resolve"), "%s", a.log);
	cr_assert(strstr(a.log, "Connection refused"), "%s", a.log);
	cr_assert_null(strstr(a.log, "127.0.0.1:%d: "), "%s", a.log);
	int lines = 0;
	for (char *c = a.log; *c; c++)
		lines += *c == '\n';
	cr_assert_eq(lines, 2, "one line per failing destination: %s", a.log);
	cr_assert_eq(lines_of_run(&f, 1), 20, "the live node got everything");
	cr_assert_eq(a.r.dest[0].rc, 0);
	cr_assert_eq(a.r.dest[0].pending, 0);

	/* the dead one comes back: it gets its backlog, the live one no duplicate */
	fake_start(&g, dead, GOOD);
	snprintf(dest, sizeof(dest), "127.0.0.1:%d,127.0.0.1:%d", live, dead);
	b.o = a.o;
	snprintf(b.o.graphite, sizeof(b.o.graphite), "%s", dest);
	run_once(&b, 2, 20, now);
	cr_assert_eq(b.code, EXIT_OK, "%s", b.log);
	cr_assert_eq(lines_of_run(&g, 1), 20);
	cr_assert_eq(lines_of_run(&g, 2), 20);
	cr_assert_eq(b.r.dest[1].resent, 0, "the dead node had acknowledged nothing");
	/* the live node: run a's delivery once more (its points and its 20 self-report lines), nothing else twice */
	cr_assert_eq(b.r.dest[0].resent, a.r.spooled, "%lu of %lu", (unsigned long)b.r.dest[0].resent,
	             (unsigned long)a.r.spooled);
	cr_assert_eq(lines_of_run(&f, 1), 2 * 20, "run a's points: new, then resent once");
	cr_assert_eq(lines_of_run(&f, 2), 20);
	fake_stop(&f);
	fake_stop(&g);
	free(f.got);
	free(g.got);
	free(a.log);
	free(b.log);
	ts_rmtree_free(dir);
}

Test(export_deliver, spool_full_and_max_age_are_counted, .timeout = 20)
{
	char *dir = ts_tmpdir("expfull");
	int port = carbon_free_port();
	char dest[64];
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", port);
	struct run x[6] = { 0 };
	int64_t now = time(NULL);
	uint64_t spooled = 0, expired = 0;
	for (int i = 0; i < 5; i++) {
		opts(&x[i].o, dir, dest);
		x[i].o.max_spool_bytes = 4096;
		x[i].o.timeout_s = 0.3;
		run_once(&x[i], i + 1, 40, now - 50 + i);   /* ~1.3 KB per run */
		cr_assert_eq(x[i].code, EXIT_DEFERRED);
		spooled += x[i].r.spooled;
		expired += x[i].r.dest[0].expired;
		cr_assert_leq(x[i].r.spool_bytes, 4096 + 2048, "%ld", (long)x[i].r.spool_bytes);
	}
	cr_assert_gt(expired, 0, "the oldest runs were trimmed");
	cr_assert(strstr(x[4].log, "expired"), "%s", x[4].log);
	struct fake f;
	fake_start(&f, port, GOOD);
	opts(&x[5].o, dir, dest);
	x[5].o.max_spool_bytes = 4096;
	x[5].o.max_age_s = 30;    /* run 1..5 points with ts < now-30 expire too */
	run_once(&x[5], 6, 10, now);
	cr_assert_eq(x[5].code, EXIT_OK, "%s", x[5].log);
	cr_assert_eq(x[5].r.dest[0].resent, 0);
	spooled += x[5].r.spooled;
	expired += x[5].r.dest[0].expired;
	int got = 0;
	for (char *c = f.got; c && *c; c++)
		got += *c == '\n';
	/* nothing vanished silently: every spooled line was either sent or counted as expired */
	cr_assert_eq((uint64_t)got, spooled - expired, "got %d, spooled %lu, expired %lu", got,
	             (unsigned long)spooled, (unsigned long)expired);
	cr_assert_eq(lines_of_run(&f, 1), 0, "run 1 was trimmed and is too old");
	cr_assert_eq(lines_of_run(&f, 6), 10);
	fake_stop(&f);
	free(f.got);
	for (int i = 0; i < 6; i++)
		free(x[i].log);
	ts_rmtree_free(dir);
}

Test(export_deliver, unwritable_spool_is_a_clear_error, .timeout = 20)
{
	char *dir = ts_tmpdir("expro");
	char file[300];
	snprintf(file, sizeof(file), "%s/file", dir);
	ts_write_file(file, "x", 1);
	struct run a = { 0 };
	opts(&a.o, dir, "127.0.0.1:1");
	snprintf(a.o.spool, sizeof(a.o.spool), "%s/sub", file);
	run_once(&a, 1, 5, time(NULL));
	cr_assert_eq(a.code, EXIT_USAGE, "%s", a.log);
	cr_assert(strstr(a.log, "Not a directory") && strstr(a.log, file), "%s", a.log);
	free(a.log);

	/* a directory this user may not write: root is not stopped by modes, so drop to nobody */
	pid_t pid = fork();
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
			_exit(99);
		if (geteuid() != 0)
			chmod(dir, 0500);
		struct run b = { 0 };
		opts(&b.o, dir, "127.0.0.1:1");
		run_once(&b, 1, 5, time(NULL));
		_exit(b.code == EXIT_ACCESS && strstr(b.log, "Permission denied") && strstr(b.log, "write access") ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	chmod(dir, 0700);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	ts_rmtree_free(dir);
}

Test(export_deliver, overlapping_runs, .timeout = 20)
{
	char *dir = ts_tmpdir("explock");
	int port = carbon_free_port();
	char dest[64], err[512];
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", port);
	struct fake f;
	fake_start(&f, port, GOOD);
	struct run a = { 0 }, b = { 0 };
	opts(&a.o, dir, dest);
	/* another run holds the spool: this one waits (bounded), spools and says so */
	char spool[1100];
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	struct export_spool_opts so = { 1 << 20, 3600, 0 };
	struct export_spool held;
	cr_assert_eq(export_spool_open(&held, spool, &so, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(export_spool_lock_send(&held, err, sizeof(err)), 0, "%s", err);
	int64_t now = time(NULL);
	run_once(&a, 1, 30, now);
	cr_assert_eq(a.code, EXIT_DEFERRED, "%s", a.log);
	char want[128];
	snprintf(want, sizeof(want), "another run (pid %d) is delivering", (int)getpid());
	cr_assert(strstr(a.log, want) && strstr(a.log, "30 points spooled"), "%s", a.log);
	cr_assert_geq(a.ms, 250);
	cr_assert_eq(count(&f, "t.h.proc."), 0);
	export_spool_close(&held);

	/* two runs at once, from two processes: each line arrives exactly once */
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			struct run c = { 0 };
			c.o = a.o;
			c.o.lock_wait_s = 5;
			run_once(&c, 10 + k, 200, now);
			if (c.code)
				fprintf(stderr, "run %d: %s", k, c.log);
			_exit(c.code);
		}
	}
	for (int k = 0; k < 2; k++) {
		int st;
		waitpid(kids[k], &st, 0);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "run %d: status %d", k, st);
	}
	b.o = a.o;
	run_once(&b, 2, 1, now);
	cr_assert_eq(b.code, EXIT_OK, "%s", b.log);
	/* three deliveries (the two runs in whichever order, then b): every line
	 * new exactly once, and once more at the head of the next delivery;
	 * b's own, the last, once */
	cr_assert_eq(lines_of_run(&f, 1), 2 * 30);
	cr_assert_eq(lines_of_run(&f, 10), 2 * 200);
	cr_assert_eq(lines_of_run(&f, 11), 2 * 200);
	cr_assert_eq(lines_of_run(&f, 2), 1);
	fake_stop(&f);
	free(f.got);
	free(a.log);
	free(b.log);
	ts_rmtree_free(dir);
}

Test(export_deliver, dry_run_prints_and_sends_nothing, .timeout = 10)
{
	char *dir = ts_tmpdir("expdry");
	struct export_opts o;
	opts(&o, dir, "");
	o.dry_run = 1;
	struct expo_point p = { .prefix = "t", .host = "h", .process = "p", .pid = 1, .tid = 2, .metric = "m",
	                          .value = 3, .ts = 4 };
	char *out = NULL, *log = NULL;
	size_t ol = 0, ll = 0;
	FILE *fo = open_memstream(&out, &ol), *fl = open_memstream(&log, &ll);
	struct export_result r;
	struct export_input in = { &p, 1, 5, "h", 0 };
	cr_assert_eq(export_run(&o, &in, fo, fl, &r), EXIT_OK);
	fclose(fo);
	fclose(fl);
	cr_assert_str_eq(out, "t.h.p.1.2.m 3 4\n");
	cr_assert_eq(ll, 0);
	struct stat st;
	cr_assert_neq(stat(o.spool, &st), 0, "dry run creates no spool");
	o.dry_run = 0;
	free(log);
	fl = open_memstream(&log, &ll);
	cr_assert_eq(export_run(&o, &in, stdout, fl, &r), EXIT_USAGE);
	fclose(fl);
	cr_assert(strstr(log, "nothing to do"), "%s", log);
	/* a bad template or destination is a usage error before anything is spooled,
	 * said as the command says every message */
	cli_set_command("export");
	static const char *const bad[][2] = {
		{ "{host}.{process}", "127.0.0.1:2003" }, { "", "127.0.0.1" }, { "", "127.0.0.1:99999" },
		{ "", "a:1,,b:2" }, { "", "a:1,a:1" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(o.tmpl, sizeof(o.tmpl), "%s", bad[i][0]);
		snprintf(o.graphite, sizeof(o.graphite), "%s", bad[i][1]);
		free(log);
		fl = open_memstream(&log, &ll);
		cr_assert_eq(export_run(&o, &in, stdout, fl, &r), EXIT_USAGE, "%s %s", bad[i][0], bad[i][1]);
		fclose(fl);
		cr_assert(ll > 0 && strstr(log, "export: "), "%s", log);
		cr_assert_neq(stat(o.spool, &st), 0, "nothing spooled on a usage error");
	}
	free(out);
	free(log);
	ts_rmtree_free(dir);
}

Test(export_deliver, a_long_expired_backlog_does_not_hold_back_fresh_points, .timeout = 20)
{
	char *dir = ts_tmpdir("expold");
	int port = carbon_free_port();
	char dest[64], err[512], spool[300];
	snprintf(dest, sizeof(dest), "127.0.0.1:%d", port);
	snprintf(spool, sizeof(spool), "%s/spool", dir);
	/* 1.5 MiB of points far older than --max-age, more than one batch */
	struct export_spool_opts so = { 64 << 20, 86400, 100 };
	struct export_spool s;
	cr_assert_eq(export_spool_open(&s, spool, &so, err, sizeof(err)), 0, "%s", err);
	size_t cap = 1600000, len = 0;
	char *old = malloc(cap);
	int nold = 0;
	while (len + 64 < cap - 64 && len < (3u << 19)) {
		len += (size_t)sprintf(old + len, "t.h.old.%d.m 1 1000\n", nold++);
	}
	cr_assert_eq(export_spool_append(&s, old, len, err, sizeof(err)), 0, "%s", err);
	export_spool_close(&s);
	free(old);
	struct fake f;
	fake_start(&f, port, GOOD);
	struct run a = { 0 };
	opts(&a.o, dir, dest);
	run_once(&a, 1, 20, time(NULL));
	cr_assert_eq(a.code, EXIT_OK, "%s", a.log);
	cr_assert_eq(lines_of_run(&f, 1), 20);
	cr_assert_eq(a.r.dest[0].resent, 0);
	cr_assert_eq(count(&f, "t.h.old."), 0);
	cr_assert_eq(a.r.dest[0].expired, (uint64_t)nold, "%lu of %d", (unsigned long)a.r.dest[0].expired, nold);
	cr_assert(strstr(a.log, "expired before delivery"), "%s", a.log);
	fake_stop(&f);
	free(f.got);
	free(a.log);
	ts_rmtree_free(dir);
}

Test(export_deliver, destination_lists, .timeout = 5)
{
	struct export_dest d[EXPORT_DEST_MAX];
	char err[256];
	cr_assert_eq(export_dest_parse("carbon1:2003,[::1]:2103,10.0.0.2:2203", d, EXPORT_DEST_MAX, err, sizeof(err)), 3,
	             "%s", err);
	cr_assert_str_eq(d[0].host, "carbon1");
	cr_assert_str_eq(d[0].port, "2003");
	cr_assert_str_eq(d[1].host, "::1");
	cr_assert_str_eq(d[1].port, "2103");
	cr_assert_str_eq(d[1].label, "[::1]:2103");
	cr_assert_str_eq(d[2].key, "10_0_0_2_2203");
	static const char *const bad[] = { "", "host", "host:", ":2003", "h:0", "h:65536", "h:20x", "[::1]2003", "a:1,", "a:1,a:1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(export_dest_parse(bad[i], d, EXPORT_DEST_MAX, err, sizeof(err)), -EINVAL, "%s", bad[i]);
		cr_assert(err[0], "%s", bad[i]);
	}
}
