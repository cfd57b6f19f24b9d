/* The recording readers against hostile files: /dev/zero, an endless line, 80,000 threads, 80,000 frames under one node, a NUL byte, 40,000 threads replayed, a sample 121 years in, 2,000 threads over 300 s replayed, 2^20 strings, a crafted schedstat jump, a flight recording's triggers and stall stacks, and 200,000 limit readings of 100,000 workers (with unknown versions and malformed ones) cost time and memory linear in the file, or are refused with one line and exit 2. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect/recording.h"
#include "collect/replay.h"
#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("reclim"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(recording_limits, .init = setup, .fini = teardown, .timeout = 60);

struct outcome {
	int  rc;            /* exit status, -1 when killed */
	long ms;            /* wall time */
	long cpu_ms;        /* user + system time */
	long rss_mb;        /* peak RSS */
	char err[4096];     /* stderr, cut */
};

/* Runs loopstat with args, stdout to /dev/null; bounded by 30 s. */
static struct outcome run(char *const args[])
{
	char *argv[16] = { (char *)ts_loopstat_bin() };
	for (int i = 0; args[i] && i < 14; i++)
		argv[i + 1] = args[i];
	int e[2];
	cr_assert_eq(pipe(e), 0);
	long long t0 = ts_now_ms();
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(e[1], 2);
		close(e[0]);
		alarm(30);
		execv(argv[0], argv);
		_exit(127);
	}
	close(e[1]);
	struct outcome o = { 0 };
	size_t len = 0;
	ssize_t n;
	while ((n = read(e[0], o.err + len, sizeof(o.err) - 1 - len)) > 0 && len + (size_t)n < sizeof(o.err) - 1)
		len += (size_t)n;
	close(e[0]);
	int st;
	struct rusage ru;
	cr_assert_eq(wait4(pid, &st, 0, &ru), pid);
	o.ms = (long)(ts_now_ms() - t0);
	o.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	o.rss_mb = ru.ru_maxrss / 1024;
	o.cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
	return o;
}

static char *path(const char *name)
{
	char *p;
	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}

static FILE *create(const char *p)
{
	FILE *f = fopen(p, "w");
	cr_assert(f, "%s", p);
	fputs("loopstat-record 1\nm rate_hz 1000.000\n", f);
	return f;
}

Test(recording_limits, dev_zero_and_an_endless_line_are_refused_at_once)
{
	char *zero[] = { "report", "/dev/zero", NULL };
	struct outcome o = run(zero);
	cr_expect_eq(o.rc, 2, "report /dev/zero exited %d: %s", o.rc, o.err);
	cr_expect_lt(o.ms, 5000);
	cr_expect_lt(o.rss_mb, 64, "report /dev/zero peaked at %ld MB", o.rss_mb);

	char *p = path("long.rec");
	FILE *f = create(p);
	for (int i = 0; i < 4 << 20; i++)   /* a 4 MB line */
		fputc('a', f);
	fclose(f);
	char *lng[] = { "report", p, NULL };
	o = run(lng);
	cr_expect_eq(o.rc, 2, "an endless line: exit %d: %s", o.rc, o.err);
	cr_expect(strstr(o.err, "past what a report reads") && strstr(o.err, ":3:"), "%s", o.err);
	cr_expect_lt(o.rss_mb, 64, "an endless line peaked at %ld MB", o.rss_mb);
	free(p);
}

/* One sample each of n threads, one string each. */
static char *many_threads(const char *name, int n)
{
	char *p = path(name);
	FILE *f = create(p);
	for (int i = 1; i <= n; i++)
		fprintf(f, "s %d %d/%d t\n", i, 100000 + i, 100000 + i);
	for (int i = 1; i <= n; i++)
		fprintf(f, "e %d %d %d 0 1 232 3 0 0 0 0 0 %d 0 0 0 0\n", i * 1000, 100000 + i, 100000 + i, i);
	fputs("m duration_s 1.000\n", f);
	fclose(f);
	return p;
}

Test(recording_limits, eighty_thousand_threads_report_in_linear_time)
{
	char *p = many_threads("80k.rec", 80000);
	char *folded[] = { "report", p, "-f", "folded", NULL };
	struct outcome o = run(folded);
	cr_expect_eq(o.rc, 0, "exit %d: %s", o.rc, o.err);
	cr_expect_lt(o.ms, 10000, "80k threads took %ld ms (58 s when quadratic)", o.ms);
	cr_expect_lt(o.rss_mb, 512, "80k threads peaked at %ld MB", o.rss_mb);
	char *text[] = { "report", p, NULL };   /* the identical threads merged */
	o = run(text);
	cr_expect_eq(o.rc, 0, "exit %d: %s", o.rc, o.err);
	cr_expect_lt(o.ms, 10000, "80k threads merged in %ld ms", o.ms);
	free(p);
}

/* One thread on a CPU in 80,000 distinct functions: 80,000 siblings
 * under one node, which a linear search of siblings made quadratic
 * (115 s in pprof output). */
Test(recording_limits, eighty_thousand_labels_under_one_node_report_in_two_seconds)
{
	char *p = path("80k-labels.rec");
	FILE *f = create(p);
	fputs("s 1 4242/4242 wide\n", f);
	for (int i = 0; i < 80000; i++)
		fprintf(f, "s %d fn_%d\n", i + 2, i);
	for (int i = 0; i < 80000; i++)
		fprintf(f, "e %d 4242 4242 0 2 -1 -1 0 0 0 0 0 1 0 0 0 1 %d\n", (i + 1) * 1000, i + 2);
	fputs("m duration_s 1.000\n", f);
	fclose(f);
	/* text and svg show the largest; pprof is compressed */
	static const char *const formats[] = { "folded", "json", "speedscope", "text", "svg", "pprof" };
	for (size_t k = 0; k < sizeof(formats) / sizeof(formats[0]); k++) {
		char *o_path = path("80k-labels.out");
		char *args[] = { "report", p, "-f", (char *)formats[k], "-o", o_path, NULL };
		struct outcome o = run(args);
		cr_expect_eq(o.rc, 0, "%s: exit %d: %s", formats[k], o.rc, o.err);
		/* its CPU time: on the shared 2-core machine a load of 10 stretches
		 * the wall time five-fold */
		cr_expect_leq(o.cpu_ms, 2000, "%s: 80k labels took %ld ms of CPU", formats[k], o.cpu_ms);
		cr_expect_leq(o.ms, 20000, "%s: 80k labels took %ld ms", formats[k], o.ms);
		char *out = ts_read_file(o_path);
		cr_expect(out && (k >= 3 || strstr(out, "fn_79999")), "%s: the last label is missing", formats[k]);
		free(out);
		free(o_path);
	}
	free(p);
}

/* A NUL inside a string record is its own error, with the line, for
 * report and replay alike: not "not a recording". */
Test(recording_limits, a_nul_byte_is_named_with_its_line)
{
	char *p = path("nul.rec");
	FILE *f = create(p);
	fputs("s 1 4242/4242 ab", f);
	fputc('\0', f);
	fputs("cd\n", f);
	fclose(f);
	char *rep[] = { "report", p, NULL };
	struct outcome o = run(rep);
	cr_expect_eq(o.rc, 2, "exit %d: %s", o.rc, o.err);
	cr_expect(strstr(o.err, "nul.rec:3: a NUL byte in this line"), "%s", o.err);
	char *replay[] = { "top", "--replay", p, NULL };
	o = run(replay);
	cr_expect_eq(o.rc, 2, "exit %d: %s", o.rc, o.err);
	cr_expect(strstr(o.err, "nul.rec:3: a NUL byte in this line"), "%s", o.err);
	free(p);
}

Test(recording_limits, a_replay_of_forty_thousand_threads_is_refused)
{
	char *p = many_threads("40k.rec", 40000);
	char *replay[] = { "top", "--replay", p, NULL };
	struct outcome o = run(replay);
	cr_expect_eq(o.rc, 2, "exit %d: %s", o.rc, o.err);
	cr_expect(strstr(o.err, "past what a replay reads"), "%s", o.err);
	cr_expect_lt(o.rss_mb, 1024, "40k threads peaked at %ld MB (3.3 GB unbounded)", o.rss_mb);
	free(p);
}

/* n threads, each one sample at 0 and one at last_s (strings as many_threads). */
static char *threads_until(const char *name, int n, unsigned long long last_ns)
{
	char *p = path(name);
	FILE *f = create(p);
	for (int i = 1; i <= n; i++)
		fprintf(f, "s %d %d/%d t\n", i, 100000 + i, 100000 + i);
	for (int k = 0; k < 2; k++)
		for (int i = 1; i <= n; i++)
			fprintf(f, "e %llu %d %d 0 1 232 3 0 0 0 0 0 %d 0 0 0 0\n", k ? last_ns : (unsigned long long)i,
				100000 + i, 100000 + i, i);
	fclose(f);
	return p;
}

/* Views that keep a replay's every second and step through it one at a
 * time: one sample 121 years in made list --replay take 24 GB, until the
 * kernel killed it (the fuzzer's find); 2,000 threads over 300 s would
 * keep 0.7 GB of seconds. Both are refused at the line that passes a cap,
 * in bounded time and memory, and a replay within the caps is read. */
Test(recording_limits, far_times_and_many_thread_seconds_are_refused)
{
	char *far = threads_until("far.rec", 1, 3831761484010509268ull);
	char *wide = threads_until("wide.rec", 2000, 300ull * 1000000000);
	char *fine = threads_until("fine.rec", 100, 30ull * 1000000000);
	const char *files[] = { far, wide };
	for (int i = 0; i < 2; i++) {
		char *list[] = { "list", "--replay", (char *)files[i], NULL };
		char *check[] = { "check", "--replay", (char *)files[i], "idle_pct>=0", NULL };
		char *diff[] = { "diff", (char *)files[i], (char *)files[i], NULL };
		char *top[] = { "top", "--replay", (char *)files[i], NULL };
		char **cmds[] = { list, check, diff, top };
		for (int c = 0; c < 4; c++) {
			struct outcome o = run(cmds[c]);
			cr_expect_eq(o.rc, 2, "%s %s: exit %d: %s", cmds[c][0], files[i], o.rc, o.err);
			cr_expect(strstr(o.err, "past what a replay reads"), "%s", o.err);
			cr_expect_lt(o.ms, 10000, "%s %s took %ld ms", cmds[c][0], files[i], o.ms);
			/* what 2,000 threads' series take (~80 KB each), twice that under ASan */
			cr_expect_lt(o.rss_mb, 512, "%s %s peaked at %ld MB", cmds[c][0], files[i], o.rss_mb);
		}
	}
	char *list[] = { "list", "--replay", fine, "--json", NULL };
	struct outcome o = run(list);
	cr_expect_eq(o.rc, 0, "a replay within the caps: exit %d: %s", o.rc, o.err);
	free(far);
	free(wide);
	free(fine);
}

Test(recording_limits, more_strings_than_the_cap_are_refused)
{
	char *p = path("strings.rec");
	FILE *f = create(p);
	for (unsigned i = 1; i <= REC_MAX_STRINGS + 1; i++)
		fprintf(f, "s %u x\n", i);
	fclose(f);
	char *rep[] = { "report", p, NULL };
	struct outcome o = run(rep);
	cr_expect_eq(o.rc, 2, "exit %d: %s", o.rc, o.err);
	cr_expect(strstr(o.err, "past what a report reads"), "%s", o.err);
	free(p);
}

static int keep(void *arg, const struct rec_event *ev)
{
	(void)arg, (void)ev;
	return 0;
}

/* Ends the crafted recording f at p with an event and its trailer, and
 * expects report to read it in linear time and bounded memory. */
static void report_bounded(FILE *f, char *p)
{
	fputs("e 30000000 1 1 0 1 232 3 0 0 0 0 0 1 0 0 0 0\nm duration_s 1.000\n", f);
	fclose(f);
	char *text[] = { "report", p, NULL };
	struct outcome o = run(text);
	cr_expect_eq(o.rc, 0, "exit %d: %s", o.rc, o.err);
	cr_expect_lt(o.ms, 10000, "%ld ms", o.ms);
	cr_expect_lt(o.rss_mb, 128, "peaked at %ld MB", o.rss_mb);
}

/* A runnable time far beyond the wall time between two readings (a crafted
 * file: no thread runs more than it lives) stays within each second. */
Test(recording_limits, a_crafted_schedstat_jump_stays_within_the_second)
{
	char *p = path("jump.rec");
	FILE *f = create(p);
	fputs("m rate_hz 1e300\ns 1 7/7 j\n", f);
	fputs("e 1000000 7 7 0 2 -1 -1 1 1 0 0 0 1 0 0 0 0\n", f);
	fputs("e 2000000 7 7 0 2 -1 -1 9000000000000000000 1 0 0 0 1 0 0 0 0\n", f);
	fputs("e 3000000 7 7 0 2 -1 -1 9000000000000000001 1 0 0 0 1 0 0 0 0\n", f);
	fclose(f);
	f = fopen(p, "r");
	struct rec_meta meta;
	long line;
	cr_assert_eq(rec_read(f, &meta, keep, NULL, &line), 0);
	cr_expect_eq(meta.rate_hz, 0, "a rate of 1e300 reads as unknown");
	rewind(f);
	struct replay *r;
	cr_assert_eq(replay_open(f, &r, &line), 0);
	fclose(f);
	replay_advance_to(r, replay_end_ns(r));
	struct source src;
	replay_source(r, &src);
	src.ops->set_all_threads(src.impl, 1);   /* it never polls: a thread, not a loop */
	struct snapshot snap = { 0 };
	cr_assert_eq(src.ops->snapshot(src.impl, 10, 1, &snap), 0);
	cr_assert_eq(snap.n, 1);
	for (int i = 0; i < SERIES_HISTORY; i++)
		cr_expect_leq(snap.w[0].series.hist[i].busy_us, snap.w[0].series.hist[i].span_us,
			      "second %d: %u µs runnable of %u", i, snap.w[0].series.hist[i].busy_us,
			      snap.w[0].series.hist[i].span_us);
	snapshot_done(&snap);
	replay_delete(r);
	free(p);
}

/* A flight recording's metadata, crafted: 200,000 triggers with texts
 * past their cap, and 20,000 stalls of 5,000 stacks (past the 1,024
 * report keeps). Report keeps 16 triggers and 1,024 stacks, counts the
 * rest, in linear time and bounded memory; a trigger with a field
 * missing is a malformed line (exit 2). */
Test(recording_limits, crafted_triggers_and_stall_stacks_stay_bounded)
{
	char *p = path("flight.rec");
	FILE *f = create(p);
	fputs("m ring_s 60.000\ns 1 1/1 t\n", f);
	for (int i = 0; i < 200000; i++) {
		fprintf(f, "t %d 1 1 ", i);
		for (int k = 0; k < 300; k++)
			fputc('x', f);
		fputc('\n', f);
	}
	for (int i = 0; i < 5000; i++)
		fprintf(f, "s %d fn%d\n", i + 2, i);
	for (int i = 0; i < 20000; i++)
		fprintf(f, "k 150 %d 1 1 0 2 -1 -1 0 0 0 0 0 1 0 0 0 1 %d\n", i * 1000, 2 + i % 5000);
	report_bounded(f, p);
	char *text[] = { "report", p, NULL };
	f = create(p);
	fputs("s 1 1/1 t\nt 12 1\ne 1 1 1 0 1 232 3 0 0 0 0 0 1 0 0 0 0\n", f);
	fclose(f);
	struct outcome o = run(text);
	cr_expect_eq(o.rc, 2, "a trigger without its fields: exit %d: %s", o.rc, o.err);
	cr_expect(strstr(o.err, ":4:"), "the line named: %s", o.err);
	free(p);
}

/* Limit readings ("l"): 200,000 lines of 100,000 workers, past the 64
 * tallies report keeps (counted), beside lines of an unknown version
 * (skipped) cost linear time and bounded memory, and report shows the
 * tallies; a reading that is no number, a verdict that is no word, or a
 * line cut short is a malformed line (exit 2, named). */
Test(recording_limits, crafted_limit_readings_stay_bounded)
{
	char *p = path("limits.rec");
	FILE *f = create(p);
	fputs("s 1 1/1 t\n", f);
	for (int i = 0; i < 200000; i++)
		fprintf(f, "l 1 %d %d %d quota %d.500\n", i * 1000, 1 + i % 100000, 1 + i % 100000, i % 100);
	fputs("l 1 5 7 7 loop -\nl 1 6 7 7 loop 12.000\nl 2 7 7 7 nonsense words here\nl 99\n", f);
	report_bounded(f, p);
	char *text[] = { "report", p, NULL };
	FILE *r = fopen(p, "r");
	cr_assert(r);
	struct rec_meta *m = malloc(sizeof(*m));
	long line = 0;
	cr_assert_eq(rec_read(r, m, keep, NULL, &line), 0, "line %ld", line);
	fclose(r);
	cr_expect_eq(m->limits_seen, 200002, "every known line counted, the unknown versions skipped");
	cr_expect_eq(m->nlimits, REC_MAX_LIMITS);
	cr_expect_eq(m->limits_unkept, 200002 - 2 * REC_MAX_LIMITS, "workers 1..64 kept, twice each: %u", m->limits_unkept);
	free(m);

	static const char *const broken[] = { "l 1 5 7 7 quota twelve", "l 1 5 7 7 Quota 1.0", "l 1 5 7 7 quota",
					      "l 1 5 7", "l x", "l 1 5 7 7 quota 1.0 more", "l 1 5 7 7 quota inf" };
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
		f = create(p);
		fprintf(f, "s 1 1/1 t\n%s\ne 1 1 1 0 1 232 3 0 0 0 0 0 1 0 0 0 0\n", broken[i]);
		fclose(f);
		struct outcome o = run(text);
		cr_expect_eq(o.rc, 2, "'%s': exit %d: %s", broken[i], o.rc, o.err);
		cr_expect(strstr(o.err, ":4:"), "'%s': the line named: %s", broken[i], o.err);
	}
	free(p);
}
