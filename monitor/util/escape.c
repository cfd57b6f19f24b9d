/*
 * escape.c — one UTF-8 walk for every output, and the table of what each
 * output does with each class of character.
 */
#include "util/escape.h"

#include <string.h>

#define FFFD "\xef\xbf\xbd"   /* U+FFFD REPLACEMENT CHARACTER */

/*
 *                C0            DEL      C1       U+FFFE/F  other   invalid  specials
 * terminal       ?             ?        ?        kept      kept    ?        -
 * label          ?             ?        ?        kept      kept    ?        ; → ,
 * json           \uXXXX        \u007f   \uXXXX   kept      kept    \ufffd   " \ \n \r \t
 * xml text       U+FFFD        U+FFFD   U+FFFD   U+FFFD    kept    U+FFFD   & < > CR; tab, LF kept
 * xml attr       U+FFFD        U+FFFD   U+FFFD   U+FFFD    kept    U+FFFD   & < > " ' tab LF CR
 * yaml           \xXX          \x7f     \xXX     \uXXXX    kept    \ufffd   " \
 * tap            ?             ?        ?        kept      kept    ?        # \
 * prom label     ?             ?        ?        kept      kept    ?        \ " \n
 * prom help      ?             ?        ?        kept      kept    ?        \ \n
 * graphite       _             _        _        _         _       _        all but [A-Za-z0-9_-] → _
 *
 * The bidirectional controls (ESC_BIDI) go as C1 does, but in YAML (\uXXXX).
 *
 * XML 1.0 cannot hold C0 (but tab, LF, CR) nor U+FFFE/F even as &#n;, and
 * its §2.2 asks documents to avoid DEL and C1, so XML gets U+FFFD. JSON and
 * YAML can say any character, so they keep the code point, escaped.
 */
#define CONTROLS(...) [ESC_C0] = __VA_ARGS__, [ESC_DEL] = __VA_ARGS__, [ESC_C1] = __VA_ARGS__, \
		      [ESC_BIDI] = __VA_ARGS__

const struct esc_format esc_term = {
	.name = "terminal",
	.cls = { CONTROLS({ "?" }), [ESC_INVALID] = { "?" } },
};

const struct esc_format esc_label = {
	.name = "label",
	.ascii = { [';'] = "," },   /* the frame separator of folded stacks */
	.cls = { CONTROLS({ "?" }), [ESC_INVALID] = { "?" } },
};

const struct esc_format esc_json = {
	.name = "json",
	.ascii = { ['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t" },
	.cls = { CONTROLS({ "\\u", 4 }), [ESC_INVALID] = { "\\ufffd" } },
};

const struct esc_format esc_xml_text = {
	.name = "xml-text",
	.ascii = { ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['\t'] = "\t", ['\n'] = "\n",
		   ['\r'] = "&#13;" /* a raw CR would be read back as LF */ },
	.cls = { CONTROLS({ FFFD }), [ESC_NONCHAR] = { FFFD }, [ESC_INVALID] = { FFFD } },
};

/* In attributes tab, LF and CR are references: parsers turn raw ones into spaces. */
const struct esc_format esc_xml_attr = {
	.name = "xml-attr",
	.ascii = { ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&apos;",
		   ['\t'] = "&#9;", ['\n'] = "&#10;", ['\r'] = "&#13;" },
	.cls = { CONTROLS({ FFFD }), [ESC_NONCHAR] = { FFFD }, [ESC_INVALID] = { FFFD } },
};

/* YAML 1.2 streams hold printable characters only (c-printable). */
const struct esc_format esc_yaml = {
	.name = "yaml",
	.ascii = { ['"'] = "\\\"", ['\\'] = "\\\\" },
	.cls = { [ESC_C0] = { "\\x", 2 }, [ESC_DEL] = { "\\x", 2 }, [ESC_C1] = { "\\x", 2 },
		 [ESC_BIDI] = { "\\u", 4 }, [ESC_NONCHAR] = { "\\u", 4 }, [ESC_INVALID] = { "\\ufffd" } },
};

/* '#' would start a directive (# SKIP); '\' escapes it. */
const struct esc_format esc_tap = {
	.name = "tap",
	.ascii = { ['#'] = "\\#", ['\\'] = "\\\\" },
	.cls = { CONTROLS({ "?" }), [ESC_INVALID] = { "?" } },
};

const struct esc_format esc_prom_label = {
	.name = "prom-label",
	.ascii = { ['\\'] = "\\\\", ['"'] = "\\\"", ['\n'] = "\\n" },
	.cls = { CONTROLS({ "?" }), [ESC_INVALID] = { "?" } },
};

const struct esc_format esc_prom_help = {
	.name = "prom-help",
	.ascii = { ['\\'] = "\\\\", ['\n'] = "\\n" },
	.cls = { CONTROLS({ "?" }), [ESC_INVALID] = { "?" } },
};

/* One `_` per character, so "café" is "caf_" (docs/export.md, Sanitising). */
const struct esc_format esc_graphite = {
	.name = "graphite",
	.ascii = { ['-'] = "-", ['_'] = "_" },
	.cls = { [ESC_PUNCT] = { "_" }, CONTROLS({ "_" }), [ESC_NONCHAR] = { "_" }, [ESC_OTHER] = { "_" },
		 [ESC_INVALID] = { "_" } },
};

const struct esc_format *const esc_formats[] = {
	&esc_term, &esc_label, &esc_json, &esc_xml_text, &esc_xml_attr, &esc_yaml, &esc_tap,
	&esc_prom_label, &esc_prom_help, &esc_graphite,
};
const size_t esc_nformats = sizeof(esc_formats) / sizeof(esc_formats[0]);

int esc_utf8(const unsigned char *p, size_t avail, uint32_t *cp)
{
	uint32_t ignored, c;
	unsigned char b = p[0], lo = 0x80, hi = 0xbf;
	int n;
	if (!cp)
		cp = &ignored;
	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	/* the second byte's range rules out overlong forms, surrogates and
	 * values past U+10FFFF (RFC 3629's table), so a bad sequence stops there */
	if (b >= 0xc2 && b <= 0xdf) {
		n = 2, c = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		n = 3, c = b & 0x0f;
		if (b == 0xe0)
			lo = 0xa0;
		else if (b == 0xed)
			hi = 0x9f;
	} else if (b >= 0xf0 && b <= 0xf4) {
		n = 4, c = b & 0x07;
		if (b == 0xf0)
			lo = 0x90;
		else if (b == 0xf4)
			hi = 0x8f;
	} else {
		return -1;
	}
	for (int i = 1; i < n; i++) {
		if ((size_t)i >= avail || p[i] < lo || p[i] > hi)
			return -i;   /* also stops at the NUL */
		c = c << 6 | (p[i] & 0x3f);
		lo = 0x80, hi = 0xbf;
	}
	*cp = c;
	return n;
}

enum esc_class esc_classify(int n, uint32_t cp)
{
	if (n < 0)
		return ESC_INVALID;
	if (cp < 0x20)
		return ESC_C0;
	if (cp < 0x7f)
		return (cp >= '0' && cp <= '9') || ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') ? ESC_ALNUM : ESC_PUNCT;
	if (cp <= 0x9f)
		return cp == 0x7f ? ESC_DEL : ESC_C1;
	if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f ||
	    cp == 0x061c)
		return ESC_BIDI;
	return cp == 0xfffe || cp == 0xffff ? ESC_NONCHAR : ESC_OTHER;
}

#define ESC_REP_MAX 32

/* What the unit becomes, or NULL to keep it. */
static const char *replacement(const struct esc_format *f, int n, uint32_t cp, char buf[ESC_REP_MAX])
{
	enum esc_class c = esc_classify(n, cp);
	if (n == 1 && f->ascii[cp])
		return f->ascii[cp];
	const struct esc_rule *r = &f->cls[c];
	if (!r->text)
		return c == ESC_C0 || c == ESC_DEL || c == ESC_C1 || c == ESC_BIDI || c == ESC_INVALID ? "?" : NULL;
	if (!r->hex || c == ESC_INVALID)
		return r->text;
	snprintf(buf, ESC_REP_MAX, "%s%0*x", r->text, (int)r->hex, (unsigned)cp);
	return buf;
}

/* A stream, or a buffer that takes whole units only. */
struct sink {
	FILE *f;
	char *buf;
	size_t cap, len;
	int full;
};

static int emit(struct sink *k, const void *s, size_t n)
{
	if (k->f) {
		if (n)
			fwrite(s, 1, n, k->f);
		return 0;
	}
	if (k->len + n >= k->cap) {
		k->full = 1;
		return -1;
	}
	memmove(k->buf + k->len, s, n);   /* esc_copy in place: the source is ahead */
	k->len += n;
	return 0;
}

static void walk(struct sink *k, const struct esc_format *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;   /* kept bytes [run, i), written in one go */
	while (i < len && p[i]) {
		uint32_t cp = p[i];
		char buf[ESC_REP_MAX];
		int n = cp < 0x80 ? 1 : esc_utf8(p + i, len - i, &cp);
		size_t un = n < 0 ? (size_t)-n : (size_t)n;
		const char *r = replacement(f, n, cp, buf);
		if (!r) {
			/* a buffer takes the run up to the last unit that fits */
			if (!k->f && k->len + (i + un - run) >= k->cap) {
				emit(k, s + run, i - run);
				k->full = 1;
				return;
			}
			i += un;
			continue;
		}
		if (emit(k, s + run, i - run) < 0 || emit(k, r, strlen(r)) < 0)
			return;
		i += un;
		run = i;
	}
	emit(k, s + run, i - run);
}

void esc_fwrite(FILE *out, const struct esc_format *f, const char *s, size_t len)
{
	struct sink k = { .f = out };
	walk(&k, f, s, len);
}

size_t esc_copy(char *dst, size_t cap, const struct esc_format *f, const char *s, size_t len, int *cut)
{
	struct sink k = { .buf = dst, .cap = cap };
	if (cap == 0) {
		if (cut)
			*cut = len > 0 && s[0];
		return 0;
	}
	walk(&k, f, s, len);
	dst[k.len] = '\0';
	if (cut)
		*cut = k.full;
	return k.len;
}
