/*
 * expo_name.h — what every exposition of the figures is made of: one
 * point (a name's parts, its labels and a value) and the rule that makes
 * a name's component safe. export/ writes points as Graphite lines and a
 * textfile, serve/ as /metrics: both from these, so the two cannot spell
 * a name two ways.
 */
#ifndef LOOPSTAT_EXPO_NAME_H
#define LOOPSTAT_EXPO_NAME_H

#include <stddef.h>
#include <stdint.h>

/* A sanitised component never exceeds this many bytes: longer ones keep
 * their head and end in `_` + 8 hex digits of a hash of the whole, so two
 * long names stay distinct (whisper makes one file name per level). */
#define EXPO_COMPONENT_MAX 120
#define EXPO_TAGS_MAX      8

struct expo_tag {
	const char *key;   /* borrowed */
	const char *value; /* borrowed */
};

/* One point. Strings are borrowed; NULL means "absent": an absent level is
 * left out of the path, an absent label out of tags and Prometheus labels. */
struct expo_point {
	const char *prefix;  /* may hold dots: each level is sanitised alone */
	const char *host;
	const char *process;
	int64_t pid;         /* < 0: absent */
	int64_t tid;         /* < 0: absent */
	const char *tag;     /* thread tag; in the path it replaces the tid */
	const char *metric;  /* may hold dots, as prefix */
	const struct expo_tag *tags; /* extra tags, ntags <= EXPO_TAGS_MAX */
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

/* Writes the sanitised form of src[0..len) into dst (at least
 * EXPO_COMPONENT_MAX + 1 bytes): [A-Za-z0-9_-] kept, every other byte and
 * every UTF-8 sequence becomes one `_`; empty becomes `_`. Returns its length. */
size_t expo_sanitize(char *dst, const char *src, size_t len);

#endif /* LOOPSTAT_EXPO_NAME_H */
