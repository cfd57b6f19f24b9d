/*
 * export_name.h — Graphite names for exported points: sanitising every
 * component, the default path, --template and --tags, and the plaintext
 * line `path value timestamp\n`. No process name or tag can inject a line,
 * a path level or a tag.
 */
#ifndef LOOPSTAT_EXPORT_NAME_H
#define LOOPSTAT_EXPORT_NAME_H

#include <stddef.h>
#include <stdint.h>

/* A sanitised component never exceeds this many bytes: longer ones keep
 * their head and end in `_` + 8 hex digits of a hash of the whole, so two
 * long names stay distinct (whisper makes one file name per level). */
#define EXPORT_COMPONENT_MAX 120
/* Every line fits in this (carbon drops the connection past 16 KiB). */
#define EXPORT_LINE_MAX      2048
#define EXPORT_TAGS_MAX      8

struct export_tag {
	const char *key;   /* borrowed */
	const char *value; /* borrowed */
};

/* One point. Strings are borrowed; NULL means "absent": an absent level is
 * left out of the path, an absent label out of tags and Prometheus labels. */
struct export_point {
	const char *prefix;  /* may hold dots: each level is sanitised alone */
	const char *host;
	const char *process;
	int64_t pid;         /* < 0: absent */
	int64_t tid;         /* < 0: absent */
	const char *tag;     /* thread tag; in the path it replaces the tid */
	const char *metric;  /* may hold dots, as prefix */
	const struct export_tag *tags; /* extra tags, ntags <= EXPORT_TAGS_MAX */
	size_t ntags;
	double value;
	int64_t ts;          /* unix seconds */
	/* Prometheus only */
	int counter;         /* 1: a counter (exposed as <name>_total) */
	const char *help;    /* one line, borrowed; NULL: the metric name */
	const char *prom;    /* the name in base units after the prefix (metric_prom_name), NULL: made
	                      * from metric as it is; then prom_value is the value */
	double prom_value;
	const char *service; /* the worker's service label, NULL: none */
	const char *kind;    /* "loop" or "scheduler" label (static), NULL: none */
	const char *runtime; /* the recognised runtime label (static), NULL: none */
};

enum export_field {
	EXPORT_F_PREFIX, EXPORT_F_HOST, EXPORT_F_PROCESS, EXPORT_F_PID,
	EXPORT_F_TID, EXPORT_F_METRIC, EXPORT_F_COUNT
};

#define EXPORT_TEMPLATE_LEVELS 16
#define EXPORT_TEMPLATE_DEFAULT "{prefix}.{host}.{process}.{pid}.{tid}.{metric}"

/* A parsed --template: dot-separated levels, each a literal ([A-Za-z0-9_-])
 * or one {field}. {tid} is the thread tag when there is one, else the tid. */
struct export_template {
	int nlevels;
	struct {
		int field;            /* enum export_field, or -1 for a literal */
		char lit[32];
	} level[EXPORT_TEMPLATE_LEVELS];
};

/* Parses spec (NULL: the default). Returns 0, or -EINVAL with a lowercase
 * reason in err. The template must name {metric} exactly once and every
 * field at most once, so two metrics never share a path. */
int export_template_parse(struct export_template *t, const char *spec, char *err, size_t errlen);

/* Writes the sanitised form of src[0..len) into dst (at least
 * EXPORT_COMPONENT_MAX + 1 bytes): [A-Za-z0-9_-] kept, every other byte and
 * every UTF-8 sequence becomes one `_`; empty becomes `_`. Returns its length. */
size_t export_sanitize(char *dst, const char *src, size_t len);

struct export_name_opts {
	const struct export_template *tmpl; /* NULL: the default */
	int tags;                           /* Graphite tag syntax */
};

/* The Graphite name of p (no value), NUL-terminated. Returns its length, or
 * -ENAMETOOLONG if it would not fit in cap (cap <= EXPORT_LINE_MAX - 64
 * leaves room for value and timestamp). */
int export_name(const struct export_name_opts *o, const struct export_point *p, char *buf, size_t cap);

/* The whole plaintext line `name value ts\n` into buf (EXPORT_LINE_MAX
 * bytes). Returns its length, -EDOM for a NaN/infinite value (never sent),
 * or -ENAMETOOLONG. */
int export_line(const struct export_name_opts *o, const struct export_point *p, char buf[EXPORT_LINE_MAX]);

#endif /* LOOPSTAT_EXPORT_NAME_H */
