/*
 * check_report.c — the closing line, the table, TAP and JSON; the
 * description of one result that TAP's YAML block and JUnit's failure
 * body share.
 */
#include "check/check_report.h"
#include "util/textsafe.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "check/check_expr.h"
#include "exitcodes.h"
#include "util/json.h"

/* "comm pid/tid [tag]" ("fleet" for a roll-up, which has no thread),
 * control characters and invalid UTF-8 as '?': names are the target's to
 * choose, and an escape sequence must not reach the reader's terminal. */
const char *check__worker(const struct check_result *r, char *buf, size_t len)
{
	if (!r->pid && !r->tid)
		snprintf(buf, len, "%s", r->process);
	else if (r->tag[0])
		snprintf(buf, len, "%s %d/%d %s", r->process, (int)r->pid, (int)r->tid, r->tag);
	else
		snprintf(buf, len, "%s %d/%d", r->process, (int)r->pid, (int)r->tid);
	return textsafe(buf);
}

/* A YAML double-quoted scalar: valid UTF-8 kept, anything else escaped. */
static void yaml_str(FILE *out, const char *s)
{
	fputc('"', out);
	esc_fputs(out, &esc_yaml, s);
	fputc('"', out);
}

/* A number as YAML 1.2 reads it. */
static void yaml_num(FILE *out, double v)
{
	if (isnan(v))
		fputs(".nan", out);
	else if (isinf(v))
		fputs(v > 0 ? ".inf" : "-.inf", out);
	else
		fprintf(out, "%.6g", v);
}

static void yaml_pair(FILE *out, const char *indent, const char *key, double v)
{
	fprintf(out, "%s%s: ", indent, key);
	yaml_num(out, v);
	fputc('\n', out);
}

static void yaml_interval(FILE *out, const char *indent, const char *key, const struct estimate *e)
{
	fprintf(out, "%s%s: [", indent, key);
	yaml_num(out, e->lo);
	fputs(", ", out);
	yaml_num(out, e->hi);
	fputs("]\n", out);
}

void check__describe(FILE *out, const struct check_result *r, const char *indent)
{
	const struct check_threshold *t = r->threshold;
	char w[160];
	fprintf(out, "%sworker: ", indent);
	yaml_str(out, check__worker(r, w, sizeof(w)));
	fprintf(out, "\n%sthreshold: ", indent);
	yaml_str(out, t->text);
	fprintf(out, "\n%sverdict: %s\n", indent, check_verdict_str(r->verdict));
	yaml_pair(out, indent, "value", r->value.est);
	yaml_interval(out, indent, "interval", &r->value);
	yaml_pair(out, indent, "limit", r->abs_limit);
	if (t->relative) {
		yaml_pair(out, indent, "baseline", r->baseline.est);
		yaml_interval(out, indent, "baseline_interval", &r->baseline);
		yaml_pair(out, indent, "difference", r->judged.est);
		yaml_interval(out, indent, "difference_interval", &r->judged);
		yaml_pair(out, indent, "offset", r->limit);
	}
	yaml_pair(out, indent, "n", r->value.n);
	yaml_pair(out, indent, "n_eff", r->value.n_eff);
	yaml_pair(out, indent, "batches", r->value.batches);
	yaml_pair(out, indent, "time_s", r->time_s);
	if (r->value.correlated)
		fprintf(out, "%swarning: \"batches still correlated: the interval may be narrow; sample longer\"\n", indent);
}

void check_report_summary(FILE *out, const struct check_result *r, size_t n)
{
	struct check_tally t;
	check_tally_results(&t, r, n);
	fprintf(out, "check: %u passed, %u failed, %u inconclusive", t.passed, t.failed, t.inconclusive);
	if (t.nothing)
		fprintf(out, ", %u nothing to measure", t.nothing);
	fputc('\n', out);
}

/* Up to 4 significant figures, the way a person reads a threshold. */
static const char *fmt(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (isinf(v))
		snprintf(buf, len, v > 0 ? "inf" : "-inf");
	else if (fabs(v) >= 100)
		snprintf(buf, len, "%.0f", v);
	else if (fabs(v) >= 10)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.2f", v);
	return buf;
}

void check_report_table(FILE *out, const struct check_result *r, size_t n)
{
	fprintf(out, "%-28s %-32s %9s  %-21s %7s  %s\n", "WORKER", "THRESHOLD", "VALUE", "95% INTERVAL", "N_EFF",
		"VERDICT");
	for (size_t i = 0; i < n; i++) {
		char w[160], v[32], lo[32], hi[32], iv[80], ne[32];
		const struct estimate *e = &r[i].value;
		snprintf(iv, sizeof(iv), "[%s, %s]", fmt(e->lo, lo, sizeof(lo)), fmt(e->hi, hi, sizeof(hi)));
		snprintf(ne, sizeof(ne), "%.0f", e->n_eff);
		fprintf(out, "%-28s %-32s %9s  %-21s %7s  %s%s%s%s\n", check__worker(&r[i], w, sizeof(w)),
			r[i].threshold->text, fmt(e->est, v, sizeof(v)), iv, e->ok ? ne : "-",
			check_verdict_str(r[i].verdict), r[i].gone ? " (the worker exited)" : "",
			e->correlated ? " (correlated: sample longer)" : "",
			e->unresolved ? " (not resolved by the samples: list says why)" : "");
	}
}

/* A TAP description: '#' would start a directive and '\' escapes it. */
static void tap_desc(FILE *out, const char *s)
{
	esc_fputs(out, &esc_tap, s);
}

int check_report_tap(FILE *out, const struct check_run_info *info, const struct check_result *r, size_t n)
{
	fprintf(out, "TAP version %d\n1..%zu\n", info->tap_version ? info->tap_version : 13, n);
	for (size_t i = 0; i < n; i++) {
		enum check_verdict v = r[i].verdict;
		int ok = v == CHECK_PASS || (v == CHECK_INCONCLUSIVE && !info->inconclusive_fail);
		char w[160];
		fprintf(out, "%s %zu - ", ok ? "ok" : "not ok", i + 1);
		tap_desc(out, r[i].threshold->text);
		fputs(" ", out);
		tap_desc(out, check__worker(&r[i], w, sizeof(w)));
		if (v == CHECK_INCONCLUSIVE && !info->inconclusive_fail)
			fputs(r[i].value.unresolved ? " # SKIP inconclusive: not resolved by the samples"
						    : " # SKIP inconclusive: the interval straddles the limit", out);
		fputs("\n  ---\n", out);
		check__describe(out, &r[i], "  ");
		fputs("  ...\n", out);
	}
	return ferror(out) ? -EIO : 0;
}

void check_report_tap_bail(FILE *out, const char *reason)
{
	fputs("Bail out! ", out);
	esc_fputs(out, &esc_term, reason);
	fputc('\n', out);
	fflush(out);
}

static void json_estimate(struct json *j, const struct estimate *e)
{
	json_key(j, "value");
	json_double(j, e->est, 4);
	json_key(j, "lo");   /* null: unbounded (too few seconds) */
	json_double(j, e->lo, 4);
	json_key(j, "hi");
	json_double(j, e->hi, 4);
	json_key(j, "se");
	json_double(j, e->se, 6);
	json_key(j, "df");
	json_double(j, e->df, 2);
	json_key(j, "n");   /* Kish's size of a proportion's weights: not a whole count */
	json_double(j, e->n, 1);
	json_key(j, "n_eff");
	json_double(j, e->n_eff, 1);
}

static void json_result(struct json *j, const struct check_result *r)
{
	const struct check_threshold *t = r->threshold;
	json_object_begin(j);
	json_key(j, "pid");
	json_i64(j, r->pid);
	json_key(j, "tid");
	json_i64(j, r->tid);
	json_key(j, "process");
	json_string(j, r->process);
	json_key(j, "tag");
	json_string(j, r->tag);
	json_key(j, "threshold");
	json_string(j, t->text);
	json_key(j, "metric");
	json_string(j, t->metric ? t->metric->name : "");
	json_key(j, "unit");
	json_string(j, t->metric ? t->metric->unit : "");
	json_key(j, "filter");
	json_object_begin(j);
	for (int f = 0; f < t->nfilter; f++) {
		json_key(j, t->filter[f].key);
		json_string(j, t->filter[f].value);
	}
	json_object_end(j);
	json_key(j, "op");
	json_string(j, check_op_str(t->op));
	json_key(j, "limit");
	json_double(j, r->abs_limit, 4);
	json_key(j, "verdict");
	json_string(j, check_verdict_str(r->verdict));
	json_estimate(j, &r->value);
	json_key(j, "batches");
	json_u64(j, r->value.batches);
	json_key(j, "batch_s");
	json_double(j, r->value.batch_s, 2);
	json_key(j, "lag1");
	json_double(j, r->value.lag1, 3);
	json_key(j, "correlated");
	json_boolean(j, r->value.correlated);
	json_key(j, "unresolved");   /* a sampled figure finer than the samples resolve (lag) */
	json_boolean(j, r->value.unresolved);
	json_key(j, "time_s");
	json_double(j, r->time_s, 3);
	json_key(j, "gone");
	json_boolean(j, r->gone);
	json_key(j, "relative");
	if (!t->relative) {
		json_null(j);
	} else {
		json_object_begin(j);
		json_key(j, "coef");
		json_double(j, t->coef, 6);
		json_key(j, "offset");
		json_double(j, t->value, 4);
		json_key(j, "baseline");
		json_object_begin(j);
		json_estimate(j, &r->baseline);
		json_object_end(j);
		json_key(j, "difference");
		json_object_begin(j);
		json_estimate(j, &r->judged);
		json_object_end(j);
		json_object_end(j);
	}
	json_object_end(j);
}

int check_report_json(FILE *out, const struct check_run_info *info, const struct check_result *r, size_t n)
{
	struct check_tally t;
	check_tally_results(&t, r, n);
	struct json j;
	json_init(&j, out);
	json_object_begin(&j);
	json_key(&j, "version");
	json_u64(&j, 1);
	json_key(&j, "command");
	json_string(&j, "check");
	json_key(&j, "host");
	json_string(&j, info->host);
	json_key(&j, "kernel");
	json_string(&j, info->kernel);
	json_key(&j, "timestamp");
	if (info->timestamp)
		json_string(&j, info->timestamp);
	else
		json_null(&j);
	json_key(&j, "rate_hz");
	json_double(&j, info->rate_hz, 1);
	json_key(&j, "duration_s");
	json_double(&j, info->duration_s, 3);
	json_key(&j, "mode");
	json_string(&j, info->point_estimate ? "point-estimate" : "interval");
	json_key(&j, "inconclusive_fail");
	json_boolean(&j, info->inconclusive_fail);
	json_key(&j, "summary");
	json_object_begin(&j);
	json_key(&j, "passed");
	json_u64(&j, t.passed);
	json_key(&j, "failed");
	json_u64(&j, t.failed);
	json_key(&j, "inconclusive");
	json_u64(&j, t.inconclusive);
	json_key(&j, "nothing");
	json_u64(&j, t.nothing);
	json_key(&j, "exit_code");
	json_u64(&j, (uint64_t)check_exit_code(&t, info->inconclusive_fail));
	json_object_end(&j);
	json_key(&j, "results");
	json_array_begin(&j);
	for (size_t i = 0; i < n; i++)
		json_result(&j, &r[i]);
	json_array_end(&j);
	json_object_end(&j);
	fputc('\n', out);
	return ferror(out) ? -EIO : 0;
}
