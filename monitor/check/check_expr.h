/*
 * check_expr.h — thresholds for `loopstat check`: `metric op value`,
 * parsed and validated against the caller's metric table before any
 * sampling, so a typo is a usage error (exit 2), never a silent pass.
 *
 *   threshold := metric [ '{' key '=' value { ',' key '=' value } '}' ] op limit
 *              | verdict ('==' | '!=') word
 *   op        := '<' | '<=' | '>' | '>='
 *   limit     := number [unit]
 *              | 'baseline' [ '*' number ] [ ('+' | '-') number [unit] ]
 *
 * Spaces may separate tokens. Units follow the metric's unit: a "%" metric
 * takes 30 or 30% (points, 0..100); a time metric ("ms" or "s") takes
 * ns, us, ms or s and converts (stall_ms<0.1s is 100 ms); any other unit
 * takes its own name or a k/M/G multiplier (headroom_ops_per_s>=5k). No
 * unit means the metric's. `==` and `!=` compare no number: an interval
 * can show a value is above or below a limit, never that it equals one.
 * They compare a verdict with a word (limit==quota, limit!=loop): the
 * verdict's 0/1 row for that word (limit_quota) is judged >= 1 for `==`
 * and < 1 for `!=`, so everything after the parser judges a number.
 * A file holds one threshold per line; `#` starts a comment.
 */
#ifndef LOOPSTAT_CHECK_EXPR_H
#define LOOPSTAT_CHECK_EXPR_H

#include <stddef.h>

#define CHECK_TEXT_LEN    128  /* a threshold's text, with its NUL */
#define CHECK_FILTERS     2    /* filters per threshold */
#define CHECK_FILTER_LEN  48
#define CHECK_ERR_LEN     1024 /* room a caller should give an error message */

enum check_op { CHECK_LT, CHECK_LE, CHECK_GT, CHECK_GE };

/* What check needs of one row of the metric table (borrowed strings). */
struct check_metric {
	const char *name;      /* "idle_pct" */
	const char *unit;      /* "%", "ms", "s", "ops/s", "" (or NULL) for a plain count */
	const char *filters;   /* comma-separated keys it may be filtered by ("syscall,fd"); NULL: none */
	/* a 0/1 row that says "verdict == word" (limit_quota: "limit", "quota"); NULL: a plain figure */
	const char *verdict, *word;
};

struct check_filter {
	char key[CHECK_FILTER_LEN];
	char value[CHECK_FILTER_LEN];
};

struct check_threshold {
	char     text[CHECK_TEXT_LEN];       /* as written without spaces: the name in every report */
	const struct check_metric *metric;   /* borrowed row of the caller's table */
	struct check_filter filter[CHECK_FILTERS];
	int      nfilter;
	enum check_op op;
	int      relative;                   /* limit = coef × baseline + value */
	double   coef;                       /* 1 unless `baseline*F` */
	double   value;                      /* the limit, or the offset from the baseline, in the metric's unit */
	int      line;                       /* line in the file it came from; 0 on the command line */
};

struct check_parse_ctx {
	const struct check_metric *metrics;  /* borrowed; the names thresholds may use */
	size_t   nmetrics;
	/* optional: validates a filter value (a syscall name exists...); returns 0,
	 * or nonzero with why filled ("no syscall 'fsnyc' on x86_64") */
	int    (*filter_ok)(void *arg, const struct check_metric *m, const char *key, const char *value,
			    char *why, size_t whylen);
	void    *arg;
	/* limits are changes between two runs (diff's --fail-on): they may be
	 * negative (idle_pct<-5: idle fell by more than 5 points), and
	 * 'baseline' is refused, the other run being the baseline */
	int      changes;
};

/*
 * Parses one threshold. Returns 0, or -EINVAL with err holding a message
 * that names the column, shows the text with a caret under it, and for an
 * unknown metric lists the valid names (errlen: CHECK_ERR_LEN is enough).
 */
int check_parse(const struct check_parse_ctx *ctx, const char *text, struct check_threshold *out, char *err,
		size_t errlen);

struct check_set {                   /* a growable array of thresholds */
	struct check_threshold *v;       /* owned */
	size_t n, cap;
};

void check_set_init(struct check_set *s);
void check_set_done(struct check_set *s);
/* check_parse, appended; -ENOMEM or -EINVAL (err filled). */
int check_set_add(struct check_set *s, const struct check_parse_ctx *ctx, const char *text, char *err,
		  size_t errlen);
/* Every threshold in a file, one a line (blank lines and `#` comments
 * skipped); err as `path:line:column: ...`. -errno if it cannot be read. */
int check_set_add_file(struct check_set *s, const struct check_parse_ctx *ctx, const char *path, char *err,
		       size_t errlen);

const char *check_op_str(enum check_op op);
/* The absolute limit: value, or coef × baseline + value for a relative one. */
double check_limit(const struct check_threshold *t, double baseline);

#endif /* LOOPSTAT_CHECK_EXPR_H */
