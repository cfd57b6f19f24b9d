/*
 * diff_report.c — a diff's pairs as text and as JSON: per pair each
 * metric before and after, the change with its 95% interval, the verdict;
 * then the units only one run has and the --fail-on verdicts.
 */
#include "diff/diff.h"
#include "util/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* "regressed" for a condition that holds (check's pass of it), "ok" when it does not. */
static const char *fail_on_word(enum check_verdict v)
{
	switch (v) {
	case CHECK_PASS: return "regressed";
	case CHECK_FAIL: return "ok";
	case CHECK_INCONCLUSIVE: return "inconclusive";
	default: return "nothing";
	}
}

static const struct diff_unit *either(const struct diff_pair *p)
{
	return p->a ? p->a : p->b;
}

static void unit_title(FILE *f, const struct diff_unit *u)
{
	if (u->is_service) {
		fprintf(f, "service %s", u->service[0] ? u->service : "(unknown)");
		return;
	}
	fprintf(f, "worker %s", u->name);
	if (u->tag[0])
		fprintf(f, " [%s]", u->tag);
	if (u->service[0] && strcmp(u->service, u->name) != 0)
		fprintf(f, ", service %s", u->service);
	if (u->runtime[0] && strcmp(u->runtime, "unknown") != 0)
		fprintf(f, ", runtime %s", u->runtime);
	if (u->role[0] && strcmp(u->role, "unknown") != 0)
		fprintf(f, ", %s", u->role);
}

static void pids(FILE *f, const struct diff_unit *u)
{
	if (u && !u->is_service && u->pid)
		fprintf(f, "%d/%d", (int)u->pid, (int)u->tid);
	else
		fputs("-", f);
}

static void text_pair(FILE *f, const struct diff_pair *p, unsigned *tally)
{
	unit_title(f, p->a);
	if (!p->a->is_service) {
		fputs(" (", f);
		pids(f, p->a);
		fputs(" -> ", f);
		pids(f, p->b);
		fputs(")", f);
	}
	fprintf(f, "\n  %-22s %12s %12s %12s  %-27s %s\n", "metric", "before", "after", "change", "95% interval",
		"verdict");
	for (size_t i = 0; i < p->nrows; i++) {
		const struct diff_row *r = &p->rows[i];
		const struct estimate *ea = &p->a->est[r->m - metric_worker], *eb = &p->b->est[r->m - metric_worker];
		if (!ea->ok || !eb->ok)
			continue;
		char iv[64] = "-";
		if (isfinite(r->change.lo) && isfinite(r->change.hi) && r->change.kind != EST_MAX)
			snprintf(iv, sizeof(iv), "[%+.2f, %+.2f]", r->change.lo, r->change.hi);
		fprintf(f, "  %-22s %12.2f %12.2f %+12.2f  %-27s %s\n", r->m->name, ea->est, eb->est, r->change.est, iv,
			diff_verdict_str(r->verdict));
		tally[r->verdict]++;
	}
	fputc('\n', f);
}

int diff_write_text(FILE *f, const struct diff_run *a, const struct diff_run *b, const struct diff_result *r,
		    const struct check_set *set)
{
	unsigned tally[4] = { 0 };
	fprintf(f, "loopstat diff: %s -> %s (change = after - before, units as the metric's)\n", a->path, b->path);
	/* the verdict's terms, so a reader knows what "same" allows */
	fprintf(f, "intervals: each run's own, plus a run-to-run spread of %g points per run for shares (%%)\n\n",
		r->run_sd);
	for (size_t i = 0; i < r->n; i++)
		if (r->p[i].a && r->p[i].b)
			text_pair(f, &r->p[i], tally);
	for (size_t i = 0; i < r->n; i++) {
		const struct diff_pair *p = &r->p[i];
		if (p->a && p->b)
			continue;
		fprintf(f, "only in %s: ", p->a ? a->path : b->path);
		unit_title(f, either(p));
		fputs(" (", f);
		pids(f, either(p));
		fputs(")\n", f);
	}
	fprintf(f, "%zu pairs: %u metrics worse, %u better, %u the same, %u without a verdict\n", r->matched,
		tally[DIFF_WORSE], tally[DIFF_BETTER], tally[DIFF_SAME], tally[DIFF_UNKNOWN]);
	for (size_t k = 0; set && k < set->n; k++) {
		unsigned v[4] = { 0 };
		for (size_t i = 0; i < r->nhits; i++)
			if (r->hits[i].t == &set->v[k])
				v[r->hits[i].v]++;
		fprintf(f, "--fail-on %s: %s (%u pairs regressed, %u inconclusive, %u not)\n", set->v[k].text,
			v[CHECK_PASS] ? "regressed" : v[CHECK_INCONCLUSIVE] ? "inconclusive" : v[CHECK_FAIL] ? "ok" : "nothing to judge",
			v[CHECK_PASS], v[CHECK_INCONCLUSIVE], v[CHECK_FAIL]);
	}
	return ferror(f) ? -EIO : 0;
}

static void json_est(struct json *j, const char *key, const struct estimate *e, int decimals)
{
	json_key(j, key);
	if (!e->ok) {
		json_null(j);
		return;
	}
	json_object_begin(j);
	json_key(j, "value");
	json_double(j, e->est, decimals);
	json_key(j, "lo");
	json_double(j, e->lo, decimals);
	json_key(j, "hi");
	json_double(j, e->hi, decimals);
	json_key(j, "se");   /* a run's: its own seconds' (batch means); a change's: with the run term */
	json_double(j, e->se, decimals + 2);
	json_object_end(j);
}

static void json_side(struct json *j, const char *key, const struct diff_unit *u)
{
	json_key(j, key);
	if (!u) {
		json_null(j);
		return;
	}
	json_object_begin(j);
	json_key(j, "pid");
	json_i64(j, u->pid);
	json_key(j, "tid");
	json_i64(j, u->tid);
	json_object_end(j);
}

static void json_pair(struct json *j, const struct diff_pair *p, double run_sd)
{
	const struct diff_unit *u = either(p);
	json_object_begin(j);
	json_key(j, "kind");
	json_string(j, u->is_service ? "service" : "worker");
	json_key(j, "service");
	json_string(j, u->service);
	json_key(j, "name");
	json_string(j, u->name);
	json_key(j, "runtime");
	json_string(j, u->runtime);
	json_key(j, "role");
	json_string(j, u->role);
	json_key(j, "tag");
	json_string(j, u->tag);
	json_side(j, "a", p->a);
	json_side(j, "b", p->b);
	json_key(j, "metrics");
	json_array_begin(j);
	for (size_t i = 0; i < p->nrows; i++) {
		const struct diff_row *r = &p->rows[i];
		int d = r->m->decimals > 2 ? r->m->decimals : 2;
		json_object_begin(j);
		json_key(j, "metric");
		json_string(j, r->m->name);
		json_key(j, "unit");
		json_string(j, metric_unit_name(r->m->unit));
		json_est(j, "a", &p->a->est[r->m - metric_worker], d);
		json_est(j, "b", &p->b->est[r->m - metric_worker], d);
		json_est(j, "change", &r->change, d);
		json_key(j, "run_sd");   /* the run-to-run spread in the change's interval, per run */
		json_double(j, check_run_sd(r->m, run_sd), 2);
		json_key(j, "verdict");
		json_string(j, diff_verdict_str(r->verdict));
		json_object_end(j);
	}
	json_array_end(j);
	json_object_end(j);
}

void diff_write_json(struct json *j, const struct diff_result *r)
{
	json_key(j, "matched");
	json_u64(j, r->matched);
	json_key(j, "units");
	json_array_begin(j);
	for (size_t i = 0; i < r->n; i++)
		json_pair(j, &r->p[i], r->run_sd);
	json_array_end(j);
	json_key(j, "fail_on");
	json_array_begin(j);
	for (size_t i = 0; i < r->nhits; i++) {
		json_object_begin(j);
		json_key(j, "threshold");
		json_string(j, r->hits[i].t->text);
		const struct diff_unit *u = either(r->hits[i].pair);
		json_key(j, "kind");
		json_string(j, u->is_service ? "service" : "worker");
		json_key(j, "name");
		json_string(j, u->is_service ? u->service : u->name);
		json_key(j, "verdict");
		json_string(j, fail_on_word(r->hits[i].v));
		json_object_end(j);
	}
	json_array_end(j);
}
