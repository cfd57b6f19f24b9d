/*
 * export_name.h — Graphite names for exported points (expo/expo_name.h):
 * the default path, --template and --tags, and the plaintext line
 * `path value timestamp\n`, every component sanitised: no process name or
 * tag can inject a line, a path level or a tag.
 */
#ifndef LOOPSTAT_EXPORT_NAME_H
#define LOOPSTAT_EXPORT_NAME_H

#include <stddef.h>
#include <stdint.h>

#include "expo/expo_name.h"

/* Every line fits in this (carbon drops the connection past 16 KiB). */
#define EXPORT_LINE_MAX      2048

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

struct export_name_opts {
	const struct export_template *tmpl; /* NULL: the default */
	int tags;                           /* Graphite tag syntax */
};

/* The Graphite name of p (no value), NUL-terminated. Returns its length, or
 * -ENAMETOOLONG if it would not fit in cap (cap <= EXPORT_LINE_MAX - 64
 * leaves room for value and timestamp). */
int export_name(const struct export_name_opts *o, const struct expo_point *p, char *buf, size_t cap);

/* The whole plaintext line `name value ts\n` into buf (EXPORT_LINE_MAX
 * bytes). Returns its length, -EDOM for a NaN/infinite value (never sent),
 * or -ENAMETOOLONG. */
int export_line(const struct export_name_opts *o, const struct expo_point *p, char buf[EXPORT_LINE_MAX]);

#endif /* LOOPSTAT_EXPORT_NAME_H */
