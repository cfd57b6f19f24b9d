/*
 * check_expr.c — the threshold parser: a cursor over one line, an error
 * that points at the column, and units resolved from the metric's own.
 */
#include "check/check_expr.h"
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cursor {
	const struct check_parse_ctx *ctx;
	const char *text;    /* the whole line, for the caret */
	const char *p;
	const char *source;  /* file name, NULL on the command line */
	int line;
	char *err;
	size_t errlen;
};

/* "where: message", the line, and a caret under column (p - text + 1). */
static int fail_at(struct cursor *c, const char *at, const char *fmt, ...)
{
	char msg[CHECK_ERR_LEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	int col = (int)(at - c->text) + 1;
	int len = (int)strcspn(c->text, "\n");
	if (c->source)
		snprintf(c->err, c->errlen, "%s:%d:%d: %s\n  %.*s\n  %*s^", c->source, c->line, col, msg, len,
			 c->text, col - 1, "");
	else
		snprintf(c->err, c->errlen, "threshold '%.*s', column %d: %s\n  %.*s\n  %*s^", len, c->text, col,
			 msg, len, c->text, col - 1, "");
	return -EINVAL;
}

static void skip_ws(struct cursor *c)
{
	while (*c->p == ' ' || *c->p == '\t')
		c->p++;
}

static size_t word_len(const char *p)
{
	size_t n = 0;
	while (isalnum((unsigned char)p[n]) || p[n] == '_')
		n++;
	return n;
}

/* Edit distance of two short names, for "did you mean". */
static int distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	if (la > 63 || lb > 63)
		return 99;
	int row[64];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* Appends ", text" (or text first) to valid while it fits. */
static void list_add(char *valid, size_t cap, size_t *used, const char *a, const char *b)
{
	int w = snprintf(valid + *used, cap - *used, "%s%s%s", *used ? ", " : "", a, b);
	if (w > 0 && (size_t)w < cap - *used)
		*used += (size_t)w;
}

static int unknown_metric(struct cursor *c, const char *name, size_t len)
{
	const struct check_parse_ctx *x = c->ctx;
	const char *best = NULL;
	int best_d = len > 6 ? 3 : 2;   /* closer than this is probably a typo */
	char valid[CHECK_ERR_LEN / 2] = "";
	size_t used = 0;
	/* each verdict once, first: the list of figures is cut where it is long */
	for (size_t i = 0; i < x->nmetrics; i++) {
		const char *v = x->metrics[i].verdict;
		if (v && !(i && x->metrics[i - 1].verdict && strcmp(x->metrics[i - 1].verdict, v) == 0))
			list_add(valid, sizeof(valid), &used, v, "==WORD");
	}
	for (size_t i = 0; i < x->nmetrics; i++) {
		int d = distance(name, len, x->metrics[i].name);
		if (d < best_d) {
			best_d = d;
			best = x->metrics[i].name;
		}
		list_add(valid, sizeof(valid), &used, x->metrics[i].name, "");
	}
	if (best)
		return fail_at(c, name, "unknown metric '%.*s' (did you mean %s?); valid: %s", (int)len, name, best,
			       valid);
	return fail_at(c, name, "unknown metric '%.*s'; valid: %s", (int)len, name, valid);
}

/* Is key one of the comma-separated list? */
static int in_list(const char *list, const char *key, size_t len)
{
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, ",");
		if (n == len && strncmp(p, key, len) == 0)
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

static int parse_filters(struct cursor *c, struct check_threshold *t)
{
	const struct check_metric *m = t->metric;
	c->p++;   /* '{' */
	for (;;) {
		skip_ws(c);
		const char *key = c->p;
		size_t kl = word_len(key);
		if (kl == 0)
			return fail_at(c, key, "expected a filter name");
		if (!m->filters || !*m->filters)
			return fail_at(c, key, "metric '%s' takes no filter", m->name);
		if (!in_list(m->filters, key, kl))
			return fail_at(c, key, "unknown filter '%.*s' for %s; valid: %s", (int)kl, key, m->name,
				       m->filters);
		if (t->nfilter == CHECK_FILTERS)
			return fail_at(c, key, "at most %d filters", CHECK_FILTERS);
		c->p += kl;
		skip_ws(c);
		if (*c->p != '=')
			return fail_at(c, c->p, "expected '=' after filter '%.*s'", (int)kl, key);
		c->p++;
		skip_ws(c);
		const char *val = c->p;
		size_t vl = 0;
		while (isalnum((unsigned char)val[vl]) || (val[vl] && strchr("_./:-", val[vl])))
			vl++;
		if (vl == 0)
			return fail_at(c, val, "expected a value for filter '%.*s'", (int)kl, key);
		if (kl >= CHECK_FILTER_LEN || vl >= CHECK_FILTER_LEN)
			return fail_at(c, val, "filter longer than %d characters", CHECK_FILTER_LEN - 1);
		struct check_filter *f = &t->filter[t->nfilter++];
		memcpy(f->key, key, kl);
		f->key[kl] = '\0';
		memcpy(f->value, val, vl);
		f->value[vl] = '\0';
		char why[256] = "";
		if (c->ctx->filter_ok && c->ctx->filter_ok(c->ctx->arg, m, f->key, f->value, why, sizeof(why)))
			return fail_at(c, val, "%s", why[0] ? why : "bad filter value");
		c->p += vl;
		skip_ws(c);
		if (*c->p == '}') {
			c->p++;
			return 0;
		}
		if (*c->p != ',')
			return fail_at(c, c->p, "expected ',' or '}' in the filter");
		c->p++;
	}
}

static int parse_op(struct cursor *c, enum check_op *op)
{
	const char *p = c->p;
	if ((p[0] == '=' || p[0] == '!') && p[1] == '=')
		return fail_at(c, p, "operator '%.2s' is not supported on a figure: use < <= > >= (an interval never "
				     "proves equality; == and != compare a verdict: limit==quota)", p);
	if (p[0] == '<' || p[0] == '>') {
		int eq = p[1] == '=';
		*op = p[0] == '<' ? (eq ? CHECK_LE : CHECK_LT) : (eq ? CHECK_GE : CHECK_GT);
		c->p += 1 + eq;
		return 0;
	}
	return fail_at(c, p, *p ? "expected an operator (< <= > >=) after the metric" :
				  "missing operator and limit (< <= > >=)");
}

/* A plain decimal number (no sign, no hex, no inf/nan, which strtod would take). */
static int parse_number(struct cursor *c, double *v)
{
	const char *p = c->p;
	size_t n = strspn(p, "0123456789");
	if (p[n] == '.')
		n += 1 + strspn(p + n + 1, "0123456789");
	if (n == 0 || (n == 1 && p[0] == '.'))
		return fail_at(c, p, *p ? "expected a number" : "missing the limit");
	if (p[n] == 'e' || p[n] == 'E')
		return fail_at(c, p + n, "write the number without an exponent");
	char buf[64];
	if (n >= sizeof(buf))
		return fail_at(c, p, "number too long");
	memcpy(buf, p, n);
	buf[n] = '\0';
	*v = strtod(buf, NULL);
	c->p += n;
	return 0;
}

static int is_time_unit(const char *u) { return strcmp(u, "ms") == 0 || strcmp(u, "s") == 0; }

/* Converts v written in the unit at c->p into the metric's unit. */
static int parse_unit(struct cursor *c, const struct check_metric *m, double *v)
{
	const char *unit = m->unit ? m->unit : "";
	skip_ws(c);
	const char *u = c->p;
	size_t ul = strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ%/");
	c->p += ul;
	if (ul == 0)
		return 0;
	if (strcmp(unit, "%") == 0) {
		if (ul == 1 && u[0] == '%')
			return 0;
		return fail_at(c, u, "unit '%.*s' does not fit %s (a percentage): write the number alone or with %%",
			       (int)ul, u, m->name);
	}
	if (is_time_unit(unit)) {   /* the commands' one duration grammar */
		double per = cli_duration_unit(u, ul), to = strcmp(unit, "ms") == 0 ? 1e-3 : 1;
		if (!isnan(per)) {
			*v = *v * per / to;
			return 0;
		}
		return fail_at(c, u, "unit '%.*s' does not fit %s (a time in %s): use " CLI_DURATION_UNITS, (int)ul, u,
			       m->name, unit);
	}
	if (strlen(unit) == ul && strncmp(u, unit, ul) == 0)
		return 0;
	if (ul == 1 && strchr("kMG", u[0])) {
		*v *= u[0] == 'k' ? 1e3 : u[0] == 'M' ? 1e6 : 1e9;
		return 0;
	}
	if (unit[0])
		return fail_at(c, u, "unit '%.*s' does not fit %s (%s): use %s, k, M or G, or no unit", (int)ul, u,
			       m->name, unit, unit);
	return fail_at(c, u, "unit '%.*s' does not fit %s (a count): use k, M or G, or no unit", (int)ul, u,
		       m->name);
}

static int parse_limit(struct cursor *c, struct check_threshold *t)
{
	const struct check_metric *m = t->metric;
	int pct = m->unit && strcmp(m->unit, "%") == 0;
	t->coef = 1;
	if (strncmp(c->p, "baseline", 8) == 0 && word_len(c->p) == 8 && c->ctx->changes)
		return fail_at(c, c->p, "a change is judged against the first run already: no 'baseline' here");
	if (strncmp(c->p, "baseline", 8) == 0 && word_len(c->p) == 8) {
		t->relative = 1;
		c->p += 8;
		skip_ws(c);
		if (*c->p == '*') {
			c->p++;
			skip_ws(c);
			if (parse_number(c, &t->coef))
				return -EINVAL;
			skip_ws(c);
		}
		if (*c->p == '+' || *c->p == '-') {
			double sign = *c->p == '-' ? -1 : 1;
			c->p++;
			skip_ws(c);
			const char *at = c->p;
			if (parse_number(c, &t->value) || parse_unit(c, m, &t->value))
				return -EINVAL;
			if (pct && t->value > 100)
				return fail_at(c, at, "an offset of %g points is more than the whole range", t->value);
			t->value *= sign;
		}
		return 0;
	}
	double sign = 1;
	if (*c->p == '-' && c->ctx->changes) {
		sign = -1;
		c->p++;
	} else if (*c->p == '-') {
		return fail_at(c, c->p, "a limit is never negative");
	}
	const char *at = c->p;
	if (parse_number(c, &t->value) || parse_unit(c, m, &t->value))
		return -EINVAL;
	t->value *= sign;
	if (pct && fabs(t->value) > 100)
		return fail_at(c, at, "%g%% is out of range: a percentage is 0..100", t->value);
	return 0;
}

/* Is name (len) a verdict some row says a word of? */
static int is_verdict(const struct check_parse_ctx *x, const char *name, size_t len)
{
	for (size_t i = 0; i < x->nmetrics; i++) {
		const char *v = x->metrics[i].verdict;
		if (v && strlen(v) == len && strncmp(v, name, len) == 0)
			return 1;
	}
	return 0;
}

/* verdict ('==' | '!=') word, after the verdict's name: the row of that
 * word, judged >= 1 (==) or < 1 (!=). */
static int parse_verdict(struct cursor *c, const char *name, size_t nl, struct check_threshold *t)
{
	const struct check_parse_ctx *x = c->ctx;
	skip_ws(c);
	const char *op = c->p;
	if (!((op[0] == '=' || op[0] == '!') && op[1] == '='))
		return fail_at(c, op, "'%.*s' is a verdict: compare it with == or != and a word (%.*s==quota)", (int)nl,
			       name, (int)nl, name);
	if (x->changes)
		return fail_at(c, op, "a verdict has no change between two runs: compare a figure");
	c->p += 2;
	skip_ws(c);
	const char *w = c->p;
	size_t wl = word_len(w);
	char valid[256] = "";
	size_t used = 0;
	for (size_t i = 0; i < x->nmetrics; i++) {
		const struct check_metric *m = &x->metrics[i];
		if (!m->verdict || strlen(m->verdict) != nl || strncmp(m->verdict, name, nl) != 0)
			continue;
		if (wl && strlen(m->word) == wl && strncmp(m->word, w, wl) == 0)
			t->metric = m;
		list_add(valid, sizeof(valid), &used, m->word, "");
	}
	if (!t->metric && !wl)
		return fail_at(c, w, "expected a %.*s; valid: %s", (int)nl, name, valid);
	if (!t->metric)
		return fail_at(c, w, "unknown %.*s '%.*s'; valid: %s", (int)nl, name, (int)wl, w, valid);
	c->p += wl;
	t->op = op[0] == '=' ? CHECK_GE : CHECK_LT;
	t->value = 1;
	t->coef = 1;
	return 0;
}

static int parse_line(struct cursor *c, struct check_threshold *t)
{
	memset(t, 0, sizeof(*t));
	t->line = c->line;
	skip_ws(c);
	const char *name = c->p;
	size_t nl = word_len(name);
	if (nl == 0)
		return fail_at(c, name, *name ? "expected a metric name" : "empty threshold");
	for (size_t i = 0; i < c->ctx->nmetrics; i++)
		if (strlen(c->ctx->metrics[i].name) == nl && strncmp(c->ctx->metrics[i].name, name, nl) == 0)
			t->metric = &c->ctx->metrics[i];
	if (!t->metric && is_verdict(c->ctx, name, nl)) {
		c->p += nl;
		if (parse_verdict(c, name, nl, t))
			return -EINVAL;
	} else {
		if (!t->metric)
			return unknown_metric(c, name, nl);
		c->p += nl;
		skip_ws(c);
		if (*c->p == '{' && parse_filters(c, t))
			return -EINVAL;
		skip_ws(c);
		if (parse_op(c, &t->op))
			return -EINVAL;
		skip_ws(c);
		if (parse_limit(c, t))
			return -EINVAL;
	}
	skip_ws(c);
	if (*c->p && *c->p != '\n') {
		unsigned char ch = (unsigned char)*c->p;
		if (isprint(ch))
			return fail_at(c, c->p, "unexpected '%c' after the limit", ch);
		return fail_at(c, c->p, "unexpected byte 0x%02x after the limit", ch);
	}

	/* the text without spaces names the threshold in reports */
	size_t o = 0;
	for (const char *p = c->text; *p && *p != '\n'; p++) {
		if (*p == ' ' || *p == '\t')
			continue;
		if (o + 1 >= sizeof(t->text))
			return fail_at(c, c->text, "threshold longer than %zu characters", sizeof(t->text) - 1);
		t->text[o++] = *p;
	}
	t->text[o] = '\0';
	return 0;
}

int check_parse(const struct check_parse_ctx *ctx, const char *text, struct check_threshold *out, char *err,
		size_t errlen)
{
	if (!ctx || !text || !out || !err || errlen == 0)
		return -EINVAL;
	err[0] = '\0';
	struct cursor c = { .ctx = ctx, .text = text, .p = text, .err = err, .errlen = errlen };
	return parse_line(&c, out);
}

void check_set_init(struct check_set *s) { memset(s, 0, sizeof(*s)); }

void check_set_done(struct check_set *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static struct check_threshold *set_slot(struct check_set *s)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct check_threshold *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	return &s->v[s->n];
}

int check_set_add(struct check_set *s, const struct check_parse_ctx *ctx, const char *text, char *err,
		  size_t errlen)
{
	struct check_threshold *t = set_slot(s);
	if (!t)
		return -ENOMEM;
	int rc = check_parse(ctx, text, t, err, errlen);
	if (rc == 0)
		s->n++;
	return rc;
}

int check_set_add_file(struct check_set *s, const struct check_parse_ctx *ctx, const char *path, char *err,
		       size_t errlen)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		snprintf(err, errlen, "open(%s): %s", path, strerror(e));
		return -e;
	}
	char *line = NULL;
	size_t cap = 0;
	int rc = 0, lineno = 0;
	while (getline(&line, &cap, f) >= 0) {
		lineno++;
		line[strcspn(line, "#\r\n")] = '\0';   /* comment, or the end */
		if (line[strspn(line, " \t")] == '\0')
			continue;
		struct check_threshold *t = set_slot(s);
		if (!t) {
			rc = -ENOMEM;
			break;
		}
		struct cursor c = {
			.ctx = ctx, .text = line, .p = line, .source = path, .line = lineno, .err = err, .errlen = errlen,
		};
		if ((rc = parse_line(&c, t)) != 0)
			break;
		s->n++;
	}
	if (rc == 0 && ferror(f)) {
		rc = -EIO;
		snprintf(err, errlen, "read(%s): %s", path, strerror(EIO));
	}
	free(line);
	fclose(f);
	return rc;
}

const char *check_op_str(enum check_op op)
{
	static const char *const s[] = { "<", "<=", ">", ">=" };
	return (unsigned)op < 4 ? s[op] : "?";
}

double check_limit(const struct check_threshold *t, double baseline)
{
	return t->relative ? t->coef * baseline + t->value : t->value;
}
