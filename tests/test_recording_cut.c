/* Interrupted runs keep what they measured: profile and record on SIGINT/SIGTERM write their report or trailer and exit 128+signal; a recording cut short (at any byte) is read up to its last complete record, with one warning. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("reccut"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(recording_cut, .init = setup, .fini = teardown, .timeout = 60);

/* Runs loopstat with argv (after the binary), stdout to out_path, stderr to
 * err_path; sends sig after delay_ms (0: none); returns the exit status,
 * or -signal if it died of one. Bounded by 20 s. */
static int run_signalled(char *const args[], const char *out_path, const char *err_path, int sig, int delay_ms)
{
	char *argv[24] = { (char *)ts_loopstat_bin() };
	for (int i = 0; args[i] && i < 22; i++)
		argv[i + 1] = args[i];
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	if (sig) {
		usleep((useconds_t)delay_ms * 1000);
		kill(pid, sig);
	}
	int st = 0;
	for (int i = 0; i < 200; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
		usleep(100 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	cr_assert_fail("loopstat %s did not end within 20 s of the signal", args[0]);
	return -1;
}

static char *path(const char *name)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

static int count_of(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A child blocked in read(2) until wr closes; its pid as text in spid. */
static pid_t blocked_target(char spid[16], int *wr)
{
	int fd;
	pid_t child = tc_spawn_blocked_read(&fd, wr);
	snprintf(spid, 16, "%d", (int)child);
	return child;
}

static void profile_interrupted(int sig, const char *name, int want_rc)
{
	int wr;
	char spid[16];
	pid_t child = blocked_target(spid, &wr);
	char *out = path("p.txt"), *err = path("p.err"), *rec = path("p.rec");
	char *args[] = { "profile", "-p", spid, "--duration", "60", "--record", rec, NULL };
	long long t0 = ts_now_ms();
	int rc = run_signalled(args, out, err, sig, 1500);
	cr_expect_lt(ts_now_ms() - t0, 5000, "profile went on after %s", name);
	cr_expect_eq(rc, want_rc, "profile interrupted by %s exited %d", name, rc);
	char *text = ts_read_file(out), *msg = ts_read_file(err);
	cr_expect(strstr(text, "samples over") && strstr(text, "blocked") && strstr(text, "read"),
		  "no report of what was measured:\n%s", text);
	cr_expect(strstr(msg, "interrupted by ") && strstr(msg, name), "stderr does not say so: %s", msg);
	/* the recording got its trailer: report reads it with no warning */
	char *rout = path("r.txt"), *rerr = path("r.err");
	char *rargs[] = { "report", rec, NULL };
	cr_expect_eq(run_signalled(rargs, rout, rerr, 0, 0), 0);
	char *rmsg = ts_read_file(rerr);
	cr_expect_null(strstr(rmsg, "cut short"), "the recording was not ended: %s", rmsg);
	free(rmsg);
	free(text);
	free(msg);
	free(out), free(err), free(rec), free(rout), free(rerr);
	close(wr);
	tc_kill(child);
}

Test(recording_cut, profile_sigint_writes_the_report_and_exits_130)
{
	profile_interrupted(SIGINT, "SIGINT", 130);
}

Test(recording_cut, profile_sigterm_writes_the_report_and_exits_143)
{
	profile_interrupted(SIGTERM, "SIGTERM", 143);
}

Test(recording_cut, record_sigterm_ends_the_file_cleanly)
{
	int wr;
	char spid[16];
	pid_t child = blocked_target(spid, &wr);
	char *rec = path("t.rec"), *out = path("t.out"), *err = path("t.err");
	char *args[] = { "record", "-o", rec, "-p", spid, "--duration", "60", NULL };
	cr_expect_eq(run_signalled(args, out, err, SIGTERM, 1200), 143);
	char *body = ts_read_file(rec);
	size_t len = strlen(body);
	cr_expect(len > 0 && body[len - 1] == '\n', "the file ends mid-line");
	cr_expect(strstr(body, "\nm duration_s "), "no trailer");
	free(body);
	free(rec), free(out), free(err);
	close(wr);
	tc_kill(child);
}

/* A complete recording cut at several places: each is read up to its last
 * whole record, says so once, and reports the samples before the cut. */
Test(recording_cut, a_cut_recording_is_read_up_to_its_last_record)
{
	int wr;
	char spid[16];
	pid_t child = blocked_target(spid, &wr);
	char *rec = path("full.rec"), *out = path("f.out"), *err = path("f.err");
	char *args[] = { "record", "-o", rec, "-p", spid, "--duration", "1", "--rate", "200", NULL };
	cr_assert_eq(run_signalled(args, out, err, 0, 0), 0);
	close(wr);
	tc_kill(child);
	char *body = ts_read_file(rec);
	size_t len = strlen(body);
	const char *trailer = strstr(body, "\nm duration_s ");
	cr_assert(trailer);
	size_t cuts[] = { len / 2, len / 2 + 7, (size_t)(trailer - body) + 1, len - 3 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		char *cut = path("cut.rec");
		cr_assert_eq(ts_write_file(cut, body, cuts[i]), 0);
		char *rout = path("c.out"), *rerr = path("c.err");
		char *rargs[] = { "report", cut, "-f", "folded", NULL };
		int rc = run_signalled(rargs, rout, rerr, 0, 0);
		char *text = ts_read_file(rout), *msg = ts_read_file(rerr);
		cr_expect_eq(rc, 0, "cut at %zu of %zu: report exited %d: %s", cuts[i], len, rc, msg);
		cr_expect_eq(count_of(msg, "cut short"), 1, "cut at %zu: one warning, not: %s", cuts[i], msg);
		cr_expect(strstr(text, "blocked;read"), "cut at %zu: no samples in: %s", cuts[i], text);
		free(text), free(msg), free(cut), free(rout), free(rerr);
	}
	/* the whole file: no warning */
	char *rout = path("w.out"), *rerr = path("w.err");
	char *rargs[] = { "report", rec, NULL };
	cr_expect_eq(run_signalled(rargs, rout, rerr, 0, 0), 0);
	char *msg = ts_read_file(rerr);
	cr_expect_null(strstr(msg, "cut short"), "%s", msg);
	free(msg), free(rout), free(rerr);
	free(body), free(rec), free(out), free(err);
}
