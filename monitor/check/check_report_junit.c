/*
 * check_report_junit.c — JUnit XML for CI test reports (GitLab, GitHub
 * Actions' test reporters, Jenkins). GitLab shows a failure's body and
 * ignores its message attribute, so the body carries the figures.
 */
#include "check/check_report.h"
#include "util/escape.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Text for XML 1.0 (escape.h): markup escaped; what XML cannot hold at all
 * (control characters other than tab/newline/CR, not even as &#n;) and
 * invalid UTF-8 become U+FFFD; in attributes tab/newline/CR are references
 * so parsers do not normalise them to spaces. */
static void xml_esc(FILE *out, const char *s, int attr)
{
	esc_fputs(out, attr ? &esc_xml_attr : &esc_xml_text, s);
}

static void attr(FILE *out, const char *name, const char *value)
{
	fprintf(out, " %s=\"", name);
	xml_esc(out, value, 1);
	fputc('"', out);
}

static void attr_num(FILE *out, const char *name, double v)
{
	char buf[64];
	if (isnan(v))
		snprintf(buf, sizeof(buf), "nan");
	else if (isinf(v))
		snprintf(buf, sizeof(buf), v > 0 ? "inf" : "-inf");
	else
		snprintf(buf, sizeof(buf), "%.6g", v);
	attr(out, name, buf);
}

static void property(FILE *out, const char *indent, const char *name, const char *value)
{
	fprintf(out, "%s<property", indent);
	attr(out, "name", name);
	attr(out, "value", value);
	fputs("/>\n", out);
}

static void property_num(FILE *out, const char *indent, const char *name, double v)
{
	fprintf(out, "%s<property", indent);
	attr(out, "name", name);
	attr_num(out, "value", v);
	fputs("/>\n", out);
}

/* Several workers of one process make the same (classname, name): tell them apart. */
static int name_shared(const struct check_result *r, size_t n, size_t i)
{
	for (size_t k = 0; k < n; k++)
		if (k != i && strcmp(r[k].process, r[i].process) == 0 &&
		    strcmp(r[k].threshold->text, r[i].threshold->text) == 0)
			return 1;
	return 0;
}

static void testcase(FILE *out, const struct check_run_info *info, const struct check_result *r, size_t n,
		     size_t i)
{
	const struct check_result *c = &r[i];
	char buf[256];
	fputs("    <testcase", out);
	snprintf(buf, sizeof(buf), "loopstat.%s", c->process);
	attr(out, "classname", buf);
	if (name_shared(r, n, i)) {
		snprintf(buf, sizeof(buf), "%s (tid %d)", c->threshold->text, (int)c->tid);
		attr(out, "name", buf);
	} else {
		attr(out, "name", c->threshold->text);
	}
	snprintf(buf, sizeof(buf), "%.3f", isfinite(c->time_s) ? c->time_s : 0);
	attr(out, "time", buf);
	fputs(">\n      <properties>\n", out);
	const char *in = "        ";
	property(out, in, "worker", check__worker(c, buf, sizeof(buf)));
	property_num(out, in, "pid", c->pid);
	property_num(out, in, "tid", c->tid);
	property(out, in, "tag", c->tag);
	property(out, in, "verdict", check_verdict_str(c->verdict));
	property_num(out, in, "value", c->value.est);
	property_num(out, in, "interval_lo", c->value.lo);
	property_num(out, in, "interval_hi", c->value.hi);
	property_num(out, in, "limit", c->abs_limit);
	property_num(out, in, "n", c->value.n);
	property_num(out, in, "n_eff", c->value.n_eff);
	if (c->threshold->relative) {
		property_num(out, in, "baseline", c->baseline.est);
		property_num(out, in, "difference_lo", c->judged.lo);
		property_num(out, in, "difference_hi", c->judged.hi);
	}
	fputs("      </properties>\n", out);

	const char *elem = NULL, *type = NULL;
	switch (c->verdict) {
	case CHECK_PASS: break;
	case CHECK_FAIL: elem = "failure"; type = "fail"; break;
	case CHECK_NOTHING: elem = "error"; type = "nothing to measure"; break;
	case CHECK_INCONCLUSIVE:
		if (info->inconclusive_fail) {
			elem = "failure";
			type = "inconclusive";
		} else {
			elem = "skipped";
		}
		break;
	}
	if (elem) {
		char *body = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&body, &len);
		if (m) {
			check__describe(m, c, "");
			fclose(m);
		}
		char msg[320];
		if (c->verdict == CHECK_NOTHING)
			snprintf(msg, sizeof(msg), "%s: nothing to measure: no samples", c->threshold->text);
		else
			snprintf(msg, sizeof(msg), "%s: %s: value %.4g, 95%% interval [%.4g, %.4g], limit %.4g",
				 c->threshold->text, check_verdict_str(c->verdict), c->value.est, c->value.lo,
				 c->value.hi, c->abs_limit);
		fprintf(out, "      <%s", elem);
		attr(out, "message", msg);
		if (type)
			attr(out, "type", type);
		fputs(">", out);
		xml_esc(out, body ? body : "", 0);
		fprintf(out, "</%s>\n", elem);
		free(body);
	}
	fputs("    </testcase>\n", out);
}

int check_report_junit(FILE *out, const struct check_run_info *info, const struct check_result *r, size_t n)
{
	struct check_tally t;
	check_tally_results(&t, r, n);
	unsigned failures = t.failed + (info->inconclusive_fail ? t.inconclusive : 0);
	unsigned skipped = info->inconclusive_fail ? 0 : t.inconclusive;
	char num[64];

	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", out);
	attr(out, "name", "loopstat check");
	fprintf(out, " tests=\"%zu\" failures=\"%u\" errors=\"%u\" skipped=\"%u\"", n, failures, t.nothing, skipped);
	snprintf(num, sizeof(num), "%.3f", isfinite(info->duration_s) ? info->duration_s : 0);
	attr(out, "time", num);
	fputs(">\n  <testsuite", out);
	attr(out, "name", "loopstat check");
	fprintf(out, " tests=\"%zu\" failures=\"%u\" errors=\"%u\" skipped=\"%u\"", n, failures, t.nothing, skipped);
	attr(out, "time", num);
	if (info->timestamp)
		attr(out, "timestamp", info->timestamp);
	attr(out, "hostname", info->host ? info->host : "");
	fputs(">\n    <properties>\n", out);
	const char *in = "      ";
	property(out, in, "host", info->host ? info->host : "");
	property(out, in, "kernel", info->kernel ? info->kernel : "");
	property_num(out, in, "rate", info->rate_hz);
	property_num(out, in, "duration", info->duration_s);
	property(out, in, "mode", info->point_estimate ? "point-estimate" : "interval");
	fputs("    </properties>\n", out);
	for (size_t i = 0; i < n; i++)
		testcase(out, info, r, n, i);
	fputs("  </testsuite>\n</testsuites>\n", out);
	return ferror(out) ? -EIO : 0;
}
