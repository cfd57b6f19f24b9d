/* The JSON writer: structure, escaping, invalid UTF-8 and non-finite numbers always give parseable JSON. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

static char *render(void (*fill)(struct json *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;
	json_init(&j, f);
	fill(&j);
	fclose(f);
	return buf;
}

static void nested(struct json *j)
{
	json_object_begin(j);
	json_key(j, "a");
	json_array_begin(j);
	json_u64(j, 1);
	json_i64(j, -2);
	json_object_begin(j);
	json_object_end(j);
	json_array_end(j);
	json_key(j, "b");
	json_double(j, NAN, 2);
	json_key(j, "c");
	json_double(j, 1.5, 1);
	json_key(j, "d");
	json_boolean(j, 0);
	json_key(j, "e");
	json_null(j);
	json_object_end(j);
}

Test(json, commas_and_nesting, .timeout = 5)
{
	char *out = render(nested);
	cr_assert_str_eq(out, "{\"a\":[1,-2,{}],\"b\":null,\"c\":1.5,\"d\":false,\"e\":null}");
	free(out);
}

static const char *nasty;

static void one_string(struct json *j)
{
	json_object_begin(j);
	json_key(j, "s");
	json_string(j, nasty);
	json_object_end(j);
}

Test(json, hostile_strings_still_parse, .timeout = 5)
{
	static const char *cases[] = {
		"quote\" back\\ nl\n tab\t bell\a del\x7f",
		"cut in a char: \xc3",              /* comm truncated inside é */
		"lone continuation \x80\xbf",
		"overlong \xc0\xaf and surrogate \xed\xa0\x80",
		"valid é ü 水 😀",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		nasty = cases[i];
		char *out = render(one_string);
		json_object *doc = json_tokener_parse(out);
		cr_assert(doc, "case %zu not JSON: %s", i, out);
		json_object *s;
		cr_assert(json_object_object_get_ex(doc, "s", &s));
		if (i == 0)
			cr_assert_str_eq(json_object_get_string(s), cases[0]);
		if (i == 4)
			cr_assert_str_eq(json_object_get_string(s), cases[4], "valid UTF-8 kept as is");
		if (i == 1)
			cr_assert_str_eq(json_object_get_string(s), "cut in a char: \xef\xbf\xbd");
		json_object_put(doc);
		free(out);
	}
}
