/* diff refuses what it cannot compare with a clear message and exit 2 (usage, crafted or broken recordings and --json documents, caps), never crashes or hangs on hostile files, exits 4 when no worker pairs or a run holds none, and prints hostile names safely. */
#include <criterion/criterion.h>

#include <limits.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("diffbad"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(diff_hostile, .init = setup, .fini = teardown, .timeout = 30);

/* A recording of one loop named name (pid), half its samples in its poll,
 * 100 Hz for secs seconds; extra goes after the header (may be NULL). */
static char *synthetic(const char *file, const char *name, int pid, int secs, const char *extra)
{
	char *path = ts_path_in(dir, file);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "loopstat-record 1\nm rate_hz 100.000\nm start_unix 1700000000.000\nm host h\nm title t\n");
	if (extra)
		fputs(extra, f);
	fprintf(f, "s 1 %d/%d %s\ns 2 [idle] epoll_wait fd 3\ns 3 %s\nw %d %d 3\n", pid, pid, name, name, pid, pid);
	for (int i = 0; i < secs * 100; i++) {
		unsigned long long t = 10000000ull * (unsigned long long)i + 1000000;
		if (i % 2)
			fprintf(f, "e %llu %d %d 0 1 232 3 %llu 0 7ffd0 7f000 0 1 0 2 0 0\n", t, pid, pid, t / 4);
		else
			fprintf(f, "e %llu %d %d 0 2 -1 -1 %llu 0 0 0 0 1 0 0 0 0\n", t, pid, pid, t / 4);
	}
	fprintf(f, "m duration_s %d.000\n", secs);
	cr_assert_eq(fclose(f), 0);
	return path;
}

static char *file_with(const char *name, const char *text, size_t len)
{
	char *path = ts_path_in(dir, name);
	cr_assert_eq(ts_write_file(path, text, len), 0);
	return path;
}

/* The binary's absolute path: the commands run in dir, their files named relative to it. */
static const char *bin(void)
{
	static char path[4096];
	if (!realpath(ts_loopstat_bin(), path))
		snprintf(path, sizeof(path), "%s", ts_loopstat_bin());
	return path;
}

/* Runs `loopstat diff ARGS` in dir through the shell; exit code, stderr in *err. */
static int diff_sh(const char *args, char **err)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "cd %s && exec \"%s\" diff %s 2>&1 >/dev/null", dir, bin(), args);
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	*err = NULL;
	return ts_run(argv, err, 20000);
}

static void expect(const char *args, int code, const char *says)
{
	char *err;
	int rc = diff_sh(args, &err);
	cr_expect_eq(rc, code, "diff %s: exit %d, want %d: %s", args, rc, code, err);
	cr_expect(err && strstr(err, says), "diff %s: '%s' not in: %s", args, says, err);
	cr_expect(err && strncmp(err, "loopstat diff: ", 15) == 0, "diff %s: unprefixed: %s", args, err);
	free(err);
}

Test(diff_hostile, usage_errors_are_exit_2)
{
	free(synthetic("a.rec", "alpha", 100, 3, NULL));
	const char list[] = "{\"workers\":[{\"name\":\"w\",\"idle_pct\":50}]}";
	char *l = ts_path_in(dir, "l.json");
	cr_assert_eq(ts_write_file(l, list, sizeof(list) - 1), 0);
	free(l);
	expect("", 2, "needs two runs");
	expect("a.rec", 2, "needs two runs");
	expect("a.rec a.rec a.rec", 2, "not 'a.rec' too");
	expect("-f svg a.rec a.rec", 2, "needs -o FILE");
	expect("-f flame a.rec a.rec", 2, "invalid format 'flame'");
	expect("--fail-on 'idle_pct<baseline-5' a.rec a.rec", 2, "no 'baseline' here");
	expect("--fail-on 'idel_pct<1' a.rec a.rec", 2, "idel_pct");
	expect("--fail-on 'idle_pct<-150' a.rec a.rec", 2, "out of range");
	expect("--fail-on 'blocked_pct{syscall=read}>1' a.rec a.rec", 2, "not filtered ones");
	expect("-f svg -o x.svg l.json l.json", 2, "needs two recordings");
	expect("--pid 1 a.rec a.rec", 2, "pid");
}

Test(diff_hostile, broken_and_crafted_files_are_refused_clearly)
{
	free(synthetic("good.rec", "alpha", 100, 3, NULL));
	expect("missing.rec good.rec", 2, "open(missing.rec): No such file");
	free(file_with("empty", "", 0));
	expect("empty good.rec", 2, "neither a recording");
	const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0";
	free(file_with("bin", elf, sizeof(elf) - 1));
	expect("good.rec bin", 2, "neither a recording");
	expect("good.rec .", 2, "neither a recording");
	/* recordings: a malformed line, a NUL, a newer major, a line past the cap */
	free(synthetic("badline.rec", "alpha", 100, 1, "e 1 2 3\n"));
	expect("good.rec badline.rec", 2, "badline.rec:6:");
	const char nul[] = "loopstat-record 1\nm rate_hz 100\ns 1 a\0b\n";
	free(file_with("nul.rec", nul, sizeof(nul) - 1));
	expect("nul.rec good.rec", 2, "nul.rec:3:");
	free(file_with("v9.rec", "loopstat-record 9\n", 18));
	expect("v9.rec good.rec", 2, "v9.rec:1:");
	size_t n = 20000;
	char *huge = malloc(n + 64);
	int o = snprintf(huge, 64, "loopstat-record 1\ns 1 ");
	memset(huge + o, 'x', n);
	huge[o + n] = '\n';
	free(file_with("long.rec", huge, (size_t)o + n + 1));
	free(huge);
	expect("long.rec good.rec", 2, "long.rec:2:");
	/* JSON: not JSON, the wrong document, check's strict numbers, nesting past json-c's depth, the cap */
	free(file_with("trunc.json", "{\"workers\": [", 13));
	expect("trunc.json good.rec", 2, "not JSON");
	free(file_with("other.json", "{\"workers\": 5}", 14));
	expect("other.json good.rec", 2, "not a 'loopstat list --json' or 'check --json' document");
	const char bad_check[] = "{\"version\":1,\"command\":\"check\",\"results\":[{\"metric\":\"idle_pct\",\"process\":\"a\","
				 "\"filter\":{},\"value\":\"70\"}]}";
	free(file_with("check.json", bad_check, sizeof(bad_check) - 1));
	expect("check.json good.rec", 2, "value is not a number");
	size_t depth = 100000;   /* {"a":{"a":...1...}}: past json-c's nesting depth */
	char *deep = malloc(6 * depth + 2);
	size_t dn = 0;
	for (size_t i = 0; i < depth; i++)
		dn += (size_t)sprintf(deep + dn, "{\"a\":");
	deep[dn++] = '1';
	memset(deep + dn, '}', depth);
	free(file_with("deep.json", deep, dn + depth));
	free(deep);
	expect("deep.json good.rec", 2, "not JSON");
	size_t nw = 70000;
	char *many = malloc(20 + 3 * nw);
	size_t m = (size_t)sprintf(many, "{\"workers\":[");
	for (size_t i = 0; i < nw; i++)
		m += (size_t)sprintf(many + m, "%s{}", i ? "," : "");
	m += (size_t)sprintf(many + m, "]}");
	free(file_with("many.json", many, m));
	free(many);
	expect("many.json good.rec", 2, "more than a diff reads");
}

Test(diff_hostile, nothing_to_pair_is_exit_4_and_names_print_safely)
{
	free(synthetic("alpha.rec", "alpha", 100, 3, NULL));
	free(synthetic("beta.rec", "beta", 200, 3, NULL));
	expect("alpha.rec beta.rec", 4, "no worker or service of alpha.rec matches one of beta.rec");
	/* a run without a worker */
	const char header[] = "loopstat-record 1\nm rate_hz 100.000\nm start_unix 0.000\nm host h\nm title t\n"
			      "m duration_s 1.000\n";
	free(file_with("empty.rec", header, sizeof(header) - 1));
	expect("empty.rec alpha.rec", 4, "holds no worker");
	/* a hostile name: escapes and control characters come out as text, and the two runs still pair */
	free(synthetic("h1.rec", "x\x1b[2J\x07y", 300, 3, NULL));
	free(synthetic("h2.rec", "x\x1b[2J\x07y", 400, 3, NULL));
	char cmd[8192], *out = NULL;
	snprintf(cmd, sizeof(cmd), "cd %s && exec \"%s\" diff h1.rec h2.rec 2>&1", dir, bin());
	char *const argv[] = { "/bin/sh", "-c", cmd, NULL };
	int rc = ts_run(argv, &out, 20000);
	cr_expect_eq(rc, 0, "exit %d: %s", rc, out);
	cr_expect(strstr(out, "idle_pct"), "%s", out);
	for (const char *p = out; *p; p++)
		cr_assert(*p == '\n' || (unsigned char)*p >= 0x20, "a control character 0x%02x in: %s", *p, out);
	/* the same run twice: nothing changed, every judged metric the same */
	cr_expect(strstr(out, " 0 metrics worse, 0 better"), "%s", out);
	free(out);
}
