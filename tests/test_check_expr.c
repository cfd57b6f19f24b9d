/* check_expr: thresholds parse into metric, filter, operator, limit and unit, verdicts (limit==quota) into their 0/1 row; every mistake is an error naming its column, unknown names list the valid ones. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check/check_expr.h"
#include "support/support.h"

/* the shape of the monitor's metric table, as check sees it */
static const struct check_metric metrics[] = {
	{ "idle_pct", "%", NULL },
	{ "blocked_pct", "%", "syscall,fd" },
	{ "stall_ms", "ms", NULL },
	{ "runqueue_max", "", NULL },
	{ "headroom_ops_per_s", "ops/s", NULL },
	{ "window_s", "s", NULL },
	{ "limit_loop", "", NULL, "limit", "loop" },
	{ "limit_quota", "", NULL, "limit", "quota" },
};

static int no_fsnyc(void *arg, const struct check_metric *m, const char *key, const char *value, char *why,
		    size_t whylen)
{
	(void)arg;
	(void)m;
	if (strcmp(key, "syscall") == 0 && strcmp(value, "fsnyc") == 0) {
		snprintf(why, whylen, "no syscall '%s'", value);
		return 1;
	}
	return 0;
}

static const struct check_parse_ctx ctx = {
	.metrics = metrics, .nmetrics = sizeof(metrics) / sizeof(metrics[0]), .filter_ok = no_fsnyc,
};

static struct check_threshold t;
static char err[CHECK_ERR_LEN];

static void good(const char *text)
{
	int rc = check_parse(&ctx, text, &t, err, sizeof(err));
	cr_assert_eq(rc, 0, "'%s' refused: %s", text, err);
}

static void bad(const char *text, int column, const char *needle)
{
	int rc = check_parse(&ctx, text, &t, err, sizeof(err));
	cr_assert_eq(rc, -EINVAL, "'%s' accepted", text);
	char col[32];
	snprintf(col, sizeof(col), "column %d:", column);
	cr_expect(strstr(err, col), "'%s': want %s in: %s", text, col, err);
	cr_expect(strstr(err, needle), "'%s': want '%s' in: %s", text, needle, err);
	/* the caret sits under that column on the third line */
	const char *caret = strrchr(err, '\n');
	cr_assert(caret);
	cr_expect_eq((int)strlen(caret + 1), 2 + column, "caret line '%s'", caret + 1);
}

Test(check_expr, plain_thresholds, .timeout = 5)
{
	good("idle_pct>=30");
	cr_expect(t.metric == &metrics[0] && t.op == CHECK_GE && t.value == 30 && !t.relative);
	cr_expect_str_eq(t.text, "idle_pct>=30");
	good("  idle_pct >= 30% ");
	cr_expect(t.value == 30);
	cr_expect_str_eq(t.text, "idle_pct>=30%", "spaces dropped from the name in reports");
	good("runqueue_max<=64");
	cr_expect(t.op == CHECK_LE && t.value == 64);
	good("headroom_ops_per_s>5k");
	cr_expect(t.op == CHECK_GT && t.value == 5000);
	good("headroom_ops_per_s>=5000ops/s");
	cr_expect(t.value == 5000);
	good("idle_pct<99.5");
	cr_expect(t.op == CHECK_LT && t.value == 99.5);
}

Test(check_expr, time_units_convert, .timeout = 5)
{
	good("stall_ms<100");
	cr_expect(t.value == 100);
	good("stall_ms<100ms");
	cr_expect(t.value == 100);
	good("stall_ms<0.1s");
	cr_expect(fabs(t.value - 100) < 1e-9);
	good("stall_ms<250us");
	cr_expect(fabs(t.value - 0.25) < 1e-12);
	good("window_s>=1500ms");
	cr_expect(fabs(t.value - 1.5) < 1e-12);
}

Test(check_expr, filters, .timeout = 5)
{
	good("blocked_pct{syscall=fsync}<5");
	cr_expect(t.nfilter == 1 && strcmp(t.filter[0].key, "syscall") == 0 && strcmp(t.filter[0].value, "fsync") == 0);
	good("blocked_pct{ syscall = read , fd = 3 } < 5");
	cr_expect(t.nfilter == 2 && strcmp(t.filter[1].key, "fd") == 0 && strcmp(t.filter[1].value, "3") == 0);
	bad("idle_pct{syscall=read}>=30", 10, "metric 'idle_pct' takes no filter");
	bad("blocked_pct{sycall=fsync}<5", 13, "unknown filter 'sycall' for blocked_pct; valid: syscall,fd");
	bad("blocked_pct{syscall=fsnyc}<5", 21, "no syscall 'fsnyc'");
	bad("blocked_pct{syscall=fsync<5", 26, "expected ',' or '}'");
	bad("blocked_pct{syscall}<5", 20, "expected '='");
	bad("blocked_pct{syscall=}<5", 21, "expected a value");
	bad("blocked_pct{syscall=a,fd=1,syscall=b}<5", 28, "at most 2 filters");
}

Test(check_expr, baseline_relative, .timeout = 5)
{
	good("idle_pct>=baseline-5");
	cr_expect(t.relative && t.coef == 1 && t.value == -5);
	cr_expect(check_limit(&t, 42) == 37);
	good("headroom_ops_per_s >= baseline * 0.9");
	cr_expect(t.relative && t.coef == 0.9 && t.value == 0);
	cr_expect(fabs(check_limit(&t, 1000) - 900) < 1e-9);
	good("stall_ms<baseline+20ms");
	cr_expect(t.relative && t.value == 20);
	good("stall_ms<baseline*2+0.01s");
	cr_expect(t.coef == 2 && fabs(t.value - 10) < 1e-9);
	cr_expect_eq(check_parse(&ctx, "idle_pct>=baselines", &t, err, sizeof(err)), -EINVAL, "a longer word is not baseline");
	bad("idle_pct>=baseline-", 20, "missing the limit");
	bad("idle_pct>=baseline-500", 20, "more than the whole range");
	bad("idle_pct>=baseline/2", 19, "unexpected '/'");
}

Test(check_expr, unknown_metric_lists_valid_names, .timeout = 5)
{
	bad("idel_pct>=30", 1, "unknown metric 'idel_pct' (did you mean idle_pct?)");
	cr_expect(strstr(err, "valid: limit==WORD, idle_pct, blocked_pct, stall_ms, runqueue_max, headroom_ops_per_s, "
			  "window_s"), "%s", err);
	bad("cpu>=30", 1, "unknown metric 'cpu'; valid: limit==WORD, idle_pct,");
	cr_expect(!strstr(err, "did you mean"), "nothing close to 'cpu': %s", err);
}

/* A verdict against a word: its 0/1 row, >= 1 for ==, < 1 for != (so
 * check and the flight recorder's triggers judge a number as ever). */
Test(check_expr, verdict_equals_a_word, .timeout = 5)
{
	good("limit==quota");
	cr_expect(t.metric == &metrics[7] && t.op == CHECK_GE && t.value == 1 && !t.relative && !t.nfilter);
	cr_expect_str_eq(t.text, "limit==quota", "reports name it as written");
	good(" limit != loop ");
	cr_expect(t.metric == &metrics[6] && t.op == CHECK_LT && t.value == 1);
	cr_expect_str_eq(t.text, "limit!=loop");
	bad("limit==cpu", 8, "unknown limit 'cpu'; valid: loop, quota");
	bad("limit==", 8, "expected a limit; valid: loop, quota");
	bad("limit>=1", 6, "'limit' is a verdict: compare it with == or !=");
	bad("limit==quota x", 14, "unexpected 'x'");
	bad("limit_quota==1", 12, "operator '==' is not supported on a figure");
	/* diff's changes: a verdict has none */
	struct check_parse_ctx changes = ctx;
	changes.changes = 1;
	cr_expect_eq(check_parse(&changes, "limit==quota", &t, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "no change between two runs"), "%s", err);
}

Test(check_expr, syntax_errors_name_the_column, .timeout = 5)
{
	bad("", 1, "empty threshold");
	bad(">=30", 1, "expected a metric name");
	bad("idle_pct", 9, "missing operator");
	bad("idle_pct 30", 10, "expected an operator");
	bad("idle_pct==30", 9, "operator '==' is not supported");
	bad("idle_pct!=30", 9, "operator '!=' is not supported");
	bad("idle_pct=30", 9, "expected an operator");
	bad("idle_pct>=", 11, "missing the limit");
	bad("idle_pct>=3O", 12, "does not fit idle_pct (a percentage)");
	bad("idle_pct>=30 x", 14, "does not fit");
	bad("idle_pct>=30 !", 14, "unexpected '!'");
	bad("idle_pct>=130", 11, "out of range");
	bad("idle_pct>=-5", 11, "never negative");
	bad("idle_pct>=1e3", 12, "without an exponent");
	bad("idle_pct>=inf", 11, "expected a number");
	bad("idle_pct>=.", 11, "expected a number");
	bad("stall_ms<100min", 13, "use ns, us, ms, s, m, h or d");
	bad("headroom_ops_per_s>=5x", 22, "use ops/s, k, M or G");
	bad("runqueue_max<=64%", 17, "a count");
	bad("idle_pct>=30\x01", 13, "unexpected byte 0x01");
}

Test(check_expr, file_one_per_line_with_comments, .timeout = 5)
{
	char *dir = ts_tmpdir("check_expr");
	char path[512];
	snprintf(path, sizeof(path), "%s/capacity.checks", dir);
	const char good_file[] = "# capacity of the echo server under 2000 req/s\n"
				 "\n"
				 "idle_pct >= 30      # keep a third spare\n"
				 "   \t\n"
				 "stall_ms < 100ms\r\n"
				 "blocked_pct{syscall=fsync} < 5";
	cr_assert_eq(ts_write_file(path, good_file, sizeof(good_file) - 1), 0);
	struct check_set s;
	check_set_init(&s);
	cr_assert_eq(check_set_add_file(&s, &ctx, path, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.n, 3);
	cr_expect_str_eq(s.v[0].text, "idle_pct>=30");
	cr_expect_eq(s.v[0].line, 3);
	cr_expect_eq(s.v[1].line, 5);
	cr_expect_str_eq(s.v[2].text, "blocked_pct{syscall=fsync}<5");
	cr_assert_eq(check_set_add(&s, &ctx, "runqueue_max<=64", err, sizeof(err)), 0);
	cr_expect_eq(s.n, 4);
	cr_expect_eq(check_set_add(&s, &ctx, "runqueue_max<=", err, sizeof(err)), -EINVAL);
	cr_expect_eq(s.n, 4, "a refused threshold is not appended");

	const char bad_file[] = "idle_pct>=30\n# fine so far\n  stall_ms << 100\n";
	cr_assert_eq(ts_write_file(path, bad_file, sizeof(bad_file) - 1), 0);
	cr_expect_eq(check_set_add_file(&s, &ctx, path, err, sizeof(err)), -EINVAL);
	char want[600];
	snprintf(want, sizeof(want), "%s:3:13: expected a number", path);
	cr_expect(strstr(err, want), "want '%s' in: %s", want, err);

	snprintf(path, sizeof(path), "%s/missing", dir);
	cr_expect_eq(check_set_add_file(&s, &ctx, path, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "open(") && strstr(err, "No such file"), "%s", err);
	check_set_done(&s);
	ts_rmtree_free(dir);
}

Test(check_expr, every_prefix_and_random_bytes_give_a_verdict_never_a_crash, .timeout = 10)
{
	static const char *const texts[] = {
		"blocked_pct{syscall=fsync,fd=3}<=5%", "stall_ms<baseline*2+0.01s", "headroom_ops_per_s >= 5k",
	};
	char buf[128];
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		for (size_t n = 0; n <= strlen(texts[i]); n++) {
			snprintf(buf, sizeof(buf), "%.*s", (int)n, texts[i]);
			int rc = check_parse(&ctx, buf, &t, err, sizeof(err));
			cr_assert(rc == 0 || (rc == -EINVAL && err[0]), "'%s': rc %d", buf, rc);
		}
	uint64_t x = 7;
	for (int r = 0; r < 2000; r++) {
		size_t n = 1 + r % 60;
		for (size_t k = 0; k < n; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			buf[k] = (char)(x >> 56 ? x >> 56 : 1);
		}
		buf[n] = '\0';
		memcpy(buf, "idle_pct", r % 2 ? 8 : 0);   /* half of them get past the name */
		int rc = check_parse(&ctx, buf, &t, err, sizeof(err));
		cr_assert(rc == 0 || (rc == -EINVAL && err[0]));
	}
	char small[16];
	cr_expect_eq(check_parse(&ctx, "idel_pct>=30", &t, small, sizeof(small)), -EINVAL, "a short buffer is cut, not overrun");
	cr_expect_eq(strlen(small), sizeof(small) - 1);
}
