/*
 * json.h — a minimal streaming JSON writer for the monitor's outputs.
 * Commas are placed automatically; the caller only opens, names and closes.
 */
#ifndef LOOPSTAT_JSON_H
#define LOOPSTAT_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *out;                    /* borrowed */
	int depth;
	int need_comma[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *out);
void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
/* Emits "key": inside an object; the next value call completes the member. */
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_u64(struct json *j, uint64_t v);
void json_i64(struct json *j, int64_t v);
/* Non-finite values are written as null: JSON has no NaN. */
void json_double(struct json *j, double v, int decimals);
void json_boolean(struct json *j, int v);
void json_null(struct json *j);

#endif /* LOOPSTAT_JSON_H */
