/*
 * json.c — streaming JSON writer (RFC 8259 string escaping).
 */
#include "util/json.h"
#include "util/escape.h"

#include <math.h>

void json_init(struct json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->need_comma[0] = 0;
}

/* Before any value: a comma if a sibling precedes, unless a key just did. */
static void before_value(struct json *j)
{
	if (j->need_comma[j->depth] == 1)
		fputc(',', j->out);
	j->need_comma[j->depth] = 1;
}

static void open_scope(struct json *j, char c)
{
	before_value(j);
	fputc(c, j->out);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = 0;
}

static void close_scope(struct json *j, char c)
{
	fputc(c, j->out);
	if (j->depth > 0)
		j->depth--;
}

void json_object_begin(struct json *j) { open_scope(j, '{'); }
void json_object_end(struct json *j) { close_scope(j, '}'); }
void json_array_begin(struct json *j) { open_scope(j, '['); }
void json_array_end(struct json *j) { close_scope(j, ']'); }


/* Process names and tags are bytes, not text (the kernel cuts comm at 15
 * bytes, often inside a character): invalid UTF-8 becomes U+FFFD and every
 * control character \uXXXX (escape.h), so the document always parses. */
static void write_string(FILE *out, const char *s)
{
	fputc('"', out);
	esc_fputs(out, &esc_json, s);
	fputc('"', out);
}

void json_key(struct json *j, const char *key)
{
	before_value(j);
	write_string(j->out, key);
	fputc(':', j->out);
	j->need_comma[j->depth] = 2; /* the value that follows takes no comma */
}

void json_string(struct json *j, const char *s)
{
	before_value(j);
	write_string(j->out, s ? s : "");
}

void json_u64(struct json *j, uint64_t v)
{
	before_value(j);
	fprintf(j->out, "%llu", (unsigned long long)v);
}

void json_i64(struct json *j, int64_t v)
{
	before_value(j);
	fprintf(j->out, "%lld", (long long)v);
}

void json_double(struct json *j, double v, int decimals)
{
	before_value(j);
	if (isfinite(v))
		fprintf(j->out, "%.*f", decimals, v);
	else
		fputs("null", j->out);
}

void json_boolean(struct json *j, int v)
{
	before_value(j);
	fputs(v ? "true" : "false", j->out);
}

void json_null(struct json *j)
{
	before_value(j);
	fputs("null", j->out);
}
