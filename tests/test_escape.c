/* The escape walker: UTF-8 units and their classes, each output format's table row by row, and no format ever writing a control character, C1 or invalid UTF-8 for any input. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/escape.h"

#define FFFD "\xef\xbf\xbd"

static char *render(const struct esc_format *f, const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	cr_assert(m);
	esc_fwrite(m, f, s, len);
	fclose(m);
	return buf;
}

Test(escape, utf8_units, .timeout = 5)
{
	static const struct {
		const char *s;
		size_t avail;
		int n;
		uint32_t cp;
	} rows[] = {
		{ "A", 4, 1, 'A' },
		{ "\x7f", 4, 1, 0x7f },
		{ "\xc2\x80", 4, 2, 0x80 },
		{ "\xc2\x9b", 4, 2, 0x9b },              /* U+009B CSI, encoded */
		{ "\xdf\xbf", 4, 2, 0x7ff },
		{ "\xe0\xa0\x80", 4, 3, 0x800 },
		{ "\xef\xbf\xbf", 4, 3, 0xffff },
		{ "\xf0\x90\x80\x80", 4, 4, 0x10000 },
		{ "\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff },
		{ "\x9b", 4, -1, 0 },                     /* raw C1 CSI: a stray continuation byte */
		{ "\xff", 4, -1, 0 },
		{ "\xc0\xaf", 4, -1, 0 },                 /* overlong '/': C0 is never a lead */
		{ "\xe0\x80\x80", 4, -1, 0 },             /* overlong: E0 needs A0..BF next */
		{ "\xed\xa0\x80", 4, -1, 0 },             /* a surrogate: ED needs 80..9F next */
		{ "\xf4\x90\x80\x80", 4, -1, 0 },         /* past U+10FFFF */
		{ "\xf5\x80\x80\x80", 4, -1, 0 },
		{ "\xe2\x96", 4, -2, 0 },                 /* cut by the NUL: one unit */
		{ "\xe2\x96" "A", 4, -2, 0 },             /* cut: 'A' is not swallowed */
		{ "\xf0\x9f\x98", 4, -3, 0 },
		{ "\xe2\x96\x81", 2, -2, 0 },             /* valid, but cut by the length */
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t cp = 0xdead;
		int n = esc_utf8((const unsigned char *)rows[i].s, rows[i].avail, &cp);
		cr_expect_eq(n, rows[i].n, "row %zu: %d, want %d", i, n, rows[i].n);
		if (n > 0)
			cr_expect_eq(cp, rows[i].cp, "row %zu: U+%04X", i, cp);
	}
}

Test(escape, classes, .timeout = 5)
{
	cr_expect_eq(esc_classify(1, 'z'), ESC_ALNUM);
	cr_expect_eq(esc_classify(1, '7'), ESC_ALNUM);
	cr_expect_eq(esc_classify(1, ' '), ESC_PUNCT);
	cr_expect_eq(esc_classify(1, '@'), ESC_PUNCT);   /* just below 'A' */
	cr_expect_eq(esc_classify(1, '['), ESC_PUNCT);   /* just past 'Z' */
	cr_expect_eq(esc_classify(1, 0x1b), ESC_C0);
	cr_expect_eq(esc_classify(1, 0), ESC_C0);
	cr_expect_eq(esc_classify(1, 0x7f), ESC_DEL);
	cr_expect_eq(esc_classify(2, 0x80), ESC_C1);
	cr_expect_eq(esc_classify(2, 0x9f), ESC_C1);
	cr_expect_eq(esc_classify(3, 0x202e), ESC_BIDI);
	cr_expect_eq(esc_classify(3, 0x2069), ESC_BIDI);
	cr_expect_eq(esc_classify(3, 0x2070), ESC_OTHER);
	cr_expect_eq(esc_classify(2, 0xa0), ESC_OTHER);
	cr_expect_eq(esc_classify(3, 0xfffe), ESC_NONCHAR);
	cr_expect_eq(esc_classify(3, 0xfffd), ESC_OTHER);
	cr_expect_eq(esc_classify(-1, 0), ESC_INVALID);
}

/* Each format's row of the table in escape.c, one class at a time. */
static const struct {
	const struct esc_format *f;
	const char *in, *want;
} cases[] = {
	{ &esc_term, "a\x1b[2Jb", "a?[2Jb" },
	{ &esc_term, "\x7f\x9b\xc2\x9b\xc2\x85", "????" },
	{ &esc_term, "caf\xc3\xa9;\xef\xbf\xbe\"<#", "caf\xc3\xa9;\xef\xbf\xbe\"<#" },
	{ &esc_term, "cut\xe2\x96", "cut?" },
	{ &esc_label, "a;b\tc\xc2\x9b" "d", "a,b?c?d" },
	{ &esc_json, "\"\\\n\r\t/", "\\\"\\\\\\n\\r\\t/" },
	{ &esc_json, "\x01\x1b\x7f\xc2\x9b", "\\u0001\\u001b\\u007f\\u009b" },
	{ &esc_json, "\x9b|\xe2\x96|\xff", "\\ufffd|\\ufffd|\\ufffd" },
	{ &esc_json, "caf\xc3\xa9 \xef\xbf\xbf \xf0\x9f\x98\x80", "caf\xc3\xa9 \xef\xbf\xbf \xf0\x9f\x98\x80" },
	{ &esc_xml_text, "&<>\"']]>", "&amp;&lt;&gt;\"']]&gt;" },
	{ &esc_xml_text, "a\tb\nc\rd", "a\tb\nc&#13;d" },
	{ &esc_xml_text, "\x1b|\x7f|\xc2\x9b|\xef\xbf\xbe|\x9b|\xc3", FFFD "|" FFFD "|" FFFD "|" FFFD "|" FFFD "|" FFFD },
	{ &esc_xml_attr, "\"'<&\t\n\r", "&quot;&apos;&lt;&amp;&#9;&#10;&#13;" },
	{ &esc_xml_attr, "\x01\xc2\x80\xef\xbf\xbf", FFFD FFFD FFFD },
	{ &esc_yaml, "\"\\#: x", "\\\"\\\\#: x" },
	{ &esc_yaml, "\x1b\t\x7f\xc2\x85\xc2\x9b", "\\x1b\\x09\\x7f\\x85\\x9b" },
	{ &esc_yaml, "\xef\xbf\xbe\xff\xe2\x96", "\\ufffe\\ufffd\\ufffd" },
	{ &esc_tap, "a#b\\c", "a\\#b\\\\c" },
	{ &esc_tap, "\n\x1b\x9b\xc2\x9b", "????" },
	{ &esc_prom_label, "\\\"\n", "\\\\\\\"\\n" },
	{ &esc_prom_label, "\t\x1b\x7f\xc2\x9b\xff caf\xc3\xa9", "????? caf\xc3\xa9" },
	{ &esc_prom_help, "\"\\\n", "\"\\\\\\n" },
	{ &esc_graphite, "caf\xc3\xa9 x", "caf__x" },
	{ &esc_graphite, "a.b;c=d/e-f_g", "a_b_c_d_e-f_g" },
	{ &esc_graphite, "\x1b\x9b\xc2\x9b\xef\xbf\xbe" "cut\xe2\x96", "____cut_" },
};

Test(escape, each_format_row_by_row, .timeout = 5)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = render(cases[i].f, cases[i].in, SIZE_MAX);
		cr_expect_str_eq(got, cases[i].want, "%s, case %zu", cases[i].f->name, i);
		/* the buffer form writes the same */
		char buf[256];
		int cut = -1;
		esc_copy(buf, sizeof(buf), cases[i].f, cases[i].in, SIZE_MAX, &cut);
		cr_expect_str_eq(buf, got, "%s, case %zu", cases[i].f->name, i);
		cr_expect_eq(cut, 0);
		free(got);
	}
}

/* A tiny checker of what every output must be: valid UTF-8 with no C0
 * (except the characters the format lists as themselves), DEL or C1. */
static void assert_clean(const struct esc_format *f, const char *out, size_t len, const char *what)
{
	const unsigned char *p = (const unsigned char *)out;
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		int n = esc_utf8(p + i, len - i, &cp);
		cr_assert_gt(n, 0, "%s: invalid UTF-8 at %zu of %s", f->name, i, what);
		enum esc_class c = esc_classify(n, cp);
		int listed = n == 1 && f->ascii[cp] && f->ascii[cp][0] == (char)cp && !f->ascii[cp][1];
		cr_assert(!(c == ESC_C0 || c == ESC_DEL || c == ESC_C1 || c == ESC_BIDI) || listed,
			  "%s: U+%04X written at %zu of %s", f->name, cp, i, what);
		i += (size_t)n;
	}
}

Test(escape, no_format_writes_a_control_or_invalid_utf8, .timeout = 20)
{
	/* every byte value, every C1 encoded, then random bytes */
	char all[256 + 64 + 36 + 1];
	size_t n = 0;
	for (int b = 1; b < 256; b++)
		all[n++] = (char)b;
	for (int c = 0x80; c < 0xa0; c++) {
		all[n++] = (char)(0xc0 | c >> 6);
		all[n++] = (char)(0x80 | (c & 0x3f));
	}
	/* and the bidirectional controls: U+202E shows the rest of a line reversed */
	static const unsigned bidi[] = { 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069,
					  0x200e, 0x200f, 0x061c };
	for (size_t k = 0; k < sizeof(bidi) / sizeof(bidi[0]); k++) {
		unsigned c = bidi[k];
		if (c < 0x800) {
			all[n++] = (char)(0xc0 | c >> 6);
			all[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			all[n++] = (char)(0xe0 | c >> 12);
			all[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
			all[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	all[n] = '\0';
	unsigned seed = 21;
	for (size_t k = 0; k < esc_nformats; k++) {
		const struct esc_format *f = esc_formats[k];
		char *out = render(f, all, SIZE_MAX);
		assert_clean(f, out, strlen(out), "every byte");
		cr_assert_null(strchr(out, 0x1b), "%s", f->name);
		cr_assert_null(strchr(out, (char)0x9b), "%s", f->name);
		free(out);
		for (int r = 0; r < 2000; r++) {
			char in[24];
			size_t len = (size_t)(rand_r(&seed) % 23) + 1;
			for (size_t i = 0; i < len; i++)
				in[i] = (char)(rand_r(&seed) % 255 + 1);
			out = render(f, in, len);
			assert_clean(f, out, strlen(out), "random bytes");
			/* any buffer holds a prefix of it, cut between units */
			size_t full = strlen(out);
			for (size_t cap = 1; cap <= full + 1; cap += 3) {
				char b[200];
				int cut;
				size_t got = esc_copy(b, cap, f, in, len, &cut);
				cr_assert(got < cap && !memcmp(b, out, got) && b[got] == '\0', "%s cap %zu", f->name, cap);
				cr_assert_eq(cut, got < full, "%s cap %zu: %zu of %zu", f->name, cap, got, full);
			}
			if (f == &esc_term || f == &esc_label || f == &esc_graphite) {
				/* in place, as textsafe() does: the same result */
				char s[25];
				memcpy(s, in, len);
				s[len] = '\0';
				esc_copy(s, len + 1, f, s, SIZE_MAX, NULL);
				cr_assert_str_eq(s, out, "%s", f->name);
			}
			free(out);
		}
	}
}

Test(escape, json_strings_read_back, .timeout = 5)
{
	/* valid UTF-8 comes back as it went in, controls included */
	const char *in = "a\"b\\c\n\x1b[0m\x7f\xc2\x9b caf\xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbf";
	char *out = render(&esc_json, in, SIZE_MAX), *doc;
	cr_assert(asprintf(&doc, "\"%s\"", out) > 0);
	json_object *o = json_tokener_parse(doc);
	cr_assert(o && json_object_is_type(o, json_type_string), "%s", doc);
	cr_expect_str_eq(json_object_get_string(o), in);
	json_object_put(o);
	free(doc);
	free(out);
}

Test(escape, copy_cuts_whole_units, .timeout = 5)
{
	char buf[8];
	int cut;
	/* never inside a character */
	cr_expect_eq(esc_copy(buf, 5, &esc_term, "abc\xc3\xa9", SIZE_MAX, &cut), 3);
	cr_expect_str_eq(buf, "abc");
	cr_expect_eq(cut, 1);
	cr_expect_eq(esc_copy(buf, 6, &esc_term, "abc\xc3\xa9", SIZE_MAX, &cut), 5);
	cr_expect_eq(cut, 0);
	/* never inside a replacement: \u001b needs 6 bytes and the NUL */
	cr_expect_eq(esc_copy(buf, 8, &esc_json, "ab\x1b", SIZE_MAX, &cut), 2);
	cr_expect_str_eq(buf, "ab");
	cr_expect_eq(cut, 1);
	cr_expect_eq(esc_copy(buf, 0, &esc_term, "a", SIZE_MAX, &cut), 0);
	cr_expect_eq(cut, 1);
	/* the length bounds the walk as the NUL does */
	cr_expect_eq(esc_copy(buf, sizeof(buf), &esc_graphite, "ab.cd", 2, &cut), 2);
	cr_expect_str_eq(buf, "ab");
	cr_expect_eq(cut, 0);
	/* in place, for a format that never lengthens */
	char s[] = "x\x1b[2J\xc2\x9b\xe2\x96";
	esc_copy(s, sizeof(s), &esc_term, s, SIZE_MAX, NULL);
	cr_expect_str_eq(s, "x?[2J??");
}
