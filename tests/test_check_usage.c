/* loopstat check refuses mistakes and unsound baselines with exit 2 before sampling anything, within a tenth of --duration: a suite of its own, so that no other test's checks start beside those it times. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fiberloop.h"
#include "support/check_run.h"
#include "support/support.h"

#ifdef __SANITIZE_ADDRESS__
#define QUICK_MS 1000
#else
#define QUICK_MS 500   /* under make test this suite runs beside the sanitizer compile: 109 ms was seen */
#endif

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("checkusage");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(check_usage, .init = setup, .fini = teardown, .timeout = 40);

/* ---- usage: before any sampling ---- */

Test(check_usage, mistakes_are_exit_2_before_sampling)
{
	char *cfg, *bad_cfg, *bad_json;
	cr_assert(asprintf(&cfg, "%s/missing.checks", dir) > 0);
	cr_assert(asprintf(&bad_cfg, "%s/bad.checks", dir) > 0);
	cr_assert(asprintf(&bad_json, "%s/bad.json", dir) > 0);
	const char text[] = "# capacity\nidle_pct >= 30\n\nstall_ms < 100 furlongs\n";
	cr_assert_eq(ts_write_file(bad_cfg, text, sizeof(text) - 1), 0);
	cr_assert_eq(ts_write_file(bad_json, "{\"version\": 1}", 14), 0);
	struct { const char *args, *says; } bad[] = {
		{ "'idel_pct>=30'", "did you mean idle_pct" },
		{ "'samples>=10'", "valid: limit==WORD, idle_pct" },          /* a tally is no threshold */
		{ "'idle_ci95<5'", "unknown metric" },
		{ "'idle_pct=>30'", "column" },
		{ "'idle_pct==30'", "never proves" },
		{ "'idle_pct>=30ms'", "does not fit" },
		{ "'stall_ms<'", "missing the limit" },
		{ "'blocked_pct{syscall=fsnyc}<5'", "no syscall 'fsnyc'" },
		{ "'idle_pct{syscall=read}>5'", "takes no filter" },
		{ "", "no threshold" },
		{ "--config /nonexistent/x.checks", "open(/nonexistent/x.checks)" },
		{ NULL, ":4:" },                                  /* bad_cfg: FILE:LINE:COLUMN */
		{ "'idle_pct>=baseline-5'", "needs --baseline" },
		{ NULL, "not a 'loopstat check --json' result" }, /* bad_json */
		{ "--tap --json 'idle_pct>=30'", "choose one" },
		{ "--duration 0 'idle_pct>=30'", "invalid duration" },
		{ "--inconclusive=maybe 'idle_pct>=30'", "fail or skip" },
		{ "--max-duration 5 'idle_pct>=30'", "shorter than --duration" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char args[1024], *out;
		if (!bad[i].args && strcmp(bad[i].says, ":4:") == 0)
			snprintf(args, sizeof(args), "--duration 10 --config %s", bad_cfg);
		else if (!bad[i].args)
			snprintf(args, sizeof(args), "--duration 10 --baseline %s 'idle_pct>=baseline-5'", bad_json);
		else
			snprintf(args, sizeof(args), "--duration 10 %s", bad[i].args);
		long long ms;
		int rc = ck_check(args, 1, &out, &ms);
		cr_expect_eq(rc, 2, "'%s': exit %d: %s", args, rc, out);
		cr_expect(strstr(out, bad[i].says), "'%s' should say '%s': %s", args, bad[i].says, out);
		/* --duration 10 and an answer within 0.5 s (an ASan build starts
		 * slower: 1 s, still a tenth of the duration; waiting for a first
		 * worker alone would take up to 2 s): nothing was sampled */
		cr_expect_lt(ms, QUICK_MS, "'%s' took %lld ms: it sampled first", args, ms);
		free(out);
	}
	free(cfg);
	free(bad_cfg);
	free(bad_json);
}

/* A baseline decides verdicts: every figure is a JSON number, finite and
 * in its metric's range, checked before sampling (exit 2, naming it). */
Test(check_usage, baseline_values_are_checked_before_sampling)
{
#define ROW(value, se) "{\"version\": 1, \"command\": \"check\", \"results\": [{\"metric\": \"idle_pct\", " \
	"\"process\": \"duty_cycle\", \"tag\": \"duty\", \"filter\": {}, \"value\": " value ", \"lo\": null, " \
	"\"hi\": null, \"se\": " se ", \"df\": 3, \"n\": 400, \"n_eff\": 40}]}"
	static const struct { const char *json, *says; } bad[] = {
		{ ROW("-1e308", "1"), "value -1e+308 is out of range (0 to 100)" },
		{ ROW("-Infinity", "1"), "value -inf is out of range" },
		{ ROW("NaN", "1"), "value nan is out of range" },
		{ ROW("\"70\"", "1"), "value is not a number: \"70\"" },
		{ ROW("170", "1"), "value 170 is out of range (0 to 100)" },
		{ ROW("70", "\"1\""), "se is not a number" },
		{ ROW("70", "-1"), "se -1 is out of range" },
		{ ROW("70", "Infinity"), "se inf is out of range" },
		{ "{\"version\": \"1\", \"command\": \"check\", \"results\": []}", "not a 'loopstat check --json' result" },
	};
	char *path;
	cr_assert(asprintf(&path, "%s/base.json", dir) > 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(ts_write_file(path, bad[i].json, strlen(bad[i].json)), 0);
		char a[512], *out;
		long long ms;
		snprintf(a, sizeof(a), "--duration 10 --baseline %s 'idle_pct>=baseline-5'", path);
		int rc = ck_check(a, 1, &out, &ms);
		cr_expect_eq(rc, 2, "%s: exit %d: %s", bad[i].json, rc, out);
		cr_expect(strstr(out, bad[i].says), "%s should say '%s': %s", bad[i].json, bad[i].says, out);
		cr_expect(strncmp(out, "loopstat check: ", 16) == 0, "%s", out);
		cr_expect_lt(ms, QUICK_MS, "refused before sampling");
		free(out);
	}
	/* the same row with sound figures is read: the check goes on to find its target gone (4) */
	const char good[] = ROW("70", "1.5");
	cr_assert_eq(ts_write_file(path, good, sizeof(good) - 1), 0);
	char a[512], *out;
	snprintf(a, sizeof(a), "-p 4194000 --duration 10 --baseline %s 'idle_pct>=baseline-5'", path);
	int rc = ck_check(a, 1, &out, NULL);
	cr_expect_eq(rc, 4, "a sound baseline is accepted: exit %d: %s", rc, out);
	cr_expect(strstr(out, "no process 4194000"), "%s", out);
	free(out);
	free(path);
#undef ROW
}
