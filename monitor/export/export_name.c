/*
 * export_name.c — templates and plaintext lines for Graphite, every
 * component sanitised by expo_sanitize (expo/expo_name.h: why its set).
 */
#include "export/export_name.h"
#include "util/escape.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const field_names[EXPORT_F_COUNT] = {
	"prefix", "host", "process", "pid", "tid", "metric",
};

static int keep(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

int export_template_parse(struct export_template *t, const char *spec, char *err, size_t errlen)
{
	if (!spec)
		spec = EXPORT_TEMPLATE_DEFAULT;
	memset(t, 0, sizeof(*t));
	unsigned seen = 0;
	const char *p = spec;
	for (;;) {
		const char *end = strchr(p, '.');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 0) {
			snprintf(err, errlen, "template '%s': empty level at offset %zu", spec, (size_t)(p - spec));
			return -EINVAL;
		}
		if (t->nlevels == EXPORT_TEMPLATE_LEVELS) {
			snprintf(err, errlen, "template '%s': more than %d levels", spec, EXPORT_TEMPLATE_LEVELS);
			return -EINVAL;
		}
		typeof(t->level[0]) *lv = &t->level[t->nlevels++];
		lv->field = -1;
		if (p[0] == '{') {
			if (p[len - 1] != '}') {
				snprintf(err, errlen, "template '%s': a level is either {field} or literal text", spec);
				return -EINVAL;
			}
			for (int f = 0; f < EXPORT_F_COUNT; f++)
				if (strlen(field_names[f]) == len - 2 && !memcmp(p + 1, field_names[f], len - 2))
					lv->field = f;
			if (lv->field < 0) {
				snprintf(err, errlen, "template '%s': unknown field '%.*s' (known: prefix, host, "
				         "process, pid, tid, metric)", spec, (int)len, p);
				return -EINVAL;
			}
			if (seen & (1u << lv->field)) {
				snprintf(err, errlen, "template '%s': field {%s} twice", spec, field_names[lv->field]);
				return -EINVAL;
			}
			seen |= 1u << lv->field;
		} else {
			if (len >= sizeof(lv->lit)) {
				snprintf(err, errlen, "template '%s': literal level longer than %zu", spec, sizeof(lv->lit) - 1);
				return -EINVAL;
			}
			for (size_t i = 0; i < len; i++)
				if (!keep((unsigned char)p[i])) {
					snprintf(err, errlen, "template '%s': '%c' in a literal level (allowed: "
					         "A-Z a-z 0-9 _ -)", spec, p[i]);
					return -EINVAL;
				}
			memcpy(lv->lit, p, len);
		}
		if (!end)
			break;
		p = end + 1;
	}
	if (!(seen & (1u << EXPORT_F_METRIC))) {
		snprintf(err, errlen, "template '%s': {metric} is missing, every metric would share one path", spec);
		return -EINVAL;
	}
	return 0;
}

struct sink {
	char *buf;
	size_t cap, len;
	int overflow;
};

static void put(struct sink *s, const char *str, size_t len)
{
	if (s->len + len >= s->cap) {
		s->overflow = 1;
		return;
	}
	memcpy(s->buf + s->len, str, len);
	s->len += len;
	s->buf[s->len] = '\0';
}

static void put_sanitized(struct sink *s, const char *str)
{
	char tmp[EXPO_COMPONENT_MAX + 1];
	size_t n = expo_sanitize(tmp, str, strlen(str));
	put(s, tmp, n);
}

/* A dotted value (prefix, metric): each level sanitised, empty ones `_`. */
static void put_levels(struct sink *s, const char *str)
{
	for (;;) {
		const char *dot = strchr(str, '.');
		size_t len = dot ? (size_t)(dot - str) : strlen(str);
		char tmp[EXPO_COMPONENT_MAX + 1];
		put(s, tmp, expo_sanitize(tmp, str, len));
		if (!dot)
			return;
		put(s, ".", 1);
		str = dot + 1;
	}
}

static void put_i64(struct sink *s, int64_t v)
{
	char tmp[24];
	put(s, tmp, (size_t)snprintf(tmp, sizeof(tmp), "%lld", (long long)v));
}

static int field_present(const struct expo_point *p, int f)
{
	switch (f) {
	case EXPORT_F_PREFIX:  return p->prefix && p->prefix[0];
	case EXPORT_F_HOST:    return p->host != NULL;
	case EXPORT_F_PROCESS: return p->process != NULL;
	case EXPORT_F_PID:     return p->pid >= 0;
	case EXPORT_F_TID:     return p->tag != NULL || p->tid >= 0;
	default:               return p->metric != NULL;
	}
}

static void put_field(struct sink *s, const struct expo_point *p, int f)
{
	switch (f) {
	case EXPORT_F_PREFIX:  put_levels(s, p->prefix); break;
	case EXPORT_F_HOST:    put_sanitized(s, p->host); break;
	case EXPORT_F_PROCESS: put_sanitized(s, p->process); break;
	case EXPORT_F_PID:     put_i64(s, p->pid); break;
	case EXPORT_F_TID:
		if (p->tag)
			put_sanitized(s, p->tag);
		else
			put_i64(s, p->tid);
		break;
	default:               put_levels(s, p->metric); break;
	}
}

static void put_tag(struct sink *s, const char *key, const char *value)
{
	put(s, ";", 1);
	put_sanitized(s, key);
	put(s, "=", 1);
	put_sanitized(s, value);
}

static void put_tags(struct sink *s, const struct expo_point *p)
{
	if (p->prefix && p->prefix[0]) {
		put_levels(s, p->prefix);
		put(s, ".", 1);
	}
	put_levels(s, p->metric);
	char num[24];
	if (p->host)
		put_tag(s, "host", p->host);
	if (p->process)
		put_tag(s, "process", p->process);
	if (p->pid >= 0) {
		snprintf(num, sizeof(num), "%lld", (long long)p->pid);
		put_tag(s, "pid", num);
	}
	if (p->tid >= 0) {
		snprintf(num, sizeof(num), "%lld", (long long)p->tid);
		put_tag(s, "tid", num);
	}
	if (p->tag)
		put_tag(s, "tag", p->tag);
	static const char *const reserved[] = { "name", "host", "process", "pid", "tid", "tag" };
	for (size_t i = 0; i < p->ntags && i < EXPO_TAGS_MAX; i++) {
		char key[EXPO_COMPONENT_MAX + 1];
		expo_sanitize(key, p->tags[i].key, strlen(p->tags[i].key));
		int clash = 0;
		for (size_t r = 0; r < sizeof(reserved) / sizeof(reserved[0]); r++)
			clash |= !strcmp(key, reserved[r]);
		if (!clash && p->tags[i].value)
			put_tag(s, key, p->tags[i].value);
	}
}

int export_name(const struct export_name_opts *o, const struct expo_point *p, char *buf, size_t cap)
{
	struct sink s = { buf, cap, 0, 0 };
	if (cap)
		buf[0] = '\0';
	if (!p->metric)
		return -EINVAL;
	if (o && o->tags) {
		put_tags(&s, p);
	} else {
		struct export_template def;
		const struct export_template *t = o ? o->tmpl : NULL;
		if (!t) {
			char err[8];
			export_template_parse(&def, NULL, err, sizeof(err));
			t = &def;
		}
		int first = 1;
		for (int i = 0; i < t->nlevels; i++) {
			int f = t->level[i].field;
			if (f >= 0 && !field_present(p, f))
				continue;
			if (!first)
				put(&s, ".", 1);
			first = 0;
			if (f >= 0)
				put_field(&s, p, f);
			else
				put(&s, t->level[i].lit, strlen(t->level[i].lit));
		}
	}
	return s.overflow ? -ENAMETOOLONG : (int)s.len;
}

int export_line(const struct export_name_opts *o, const struct expo_point *p, char buf[EXPORT_LINE_MAX])
{
	if (!isfinite(p->value))
		return -EDOM;
	int n = export_name(o, p, buf, EXPORT_LINE_MAX - 64);
	if (n < 0)
		return n;
	/* %.15g round-trips every value a sample can carry and is short */
	int m = snprintf(buf + n, EXPORT_LINE_MAX - (size_t)n, " %.15g %lld\n", p->value, (long long)p->ts);
	return n + m;
}
