/*
 * escape.h — the one walker that puts a name into any output. Process names,
 * thread and fiber tags are the target's bytes, not text: the kernel cuts
 * comm at 15 bytes (often inside a character) and anyone may name a process
 * "\x1b[2J" or "\x9b31m". Every writer — terminal, JSON, XML, YAML, TAP,
 * Prometheus, Graphite, profile labels — walks its strings through
 * esc_fwrite/esc_copy with its own format below, so the UTF-8 rule and the
 * "a control character is never written as itself" rule are written once.
 *
 * The walker cuts a string into units, each one class, and a format says
 * per class (and per ASCII character) what each unit becomes.
 */
#ifndef LOOPSTAT_ESCAPE_H
#define LOOPSTAT_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum esc_class {
	ESC_ALNUM,    /* [A-Za-z0-9] */
	ESC_PUNCT,    /* the other printable ASCII, space included */
	ESC_C0,       /* U+0000..U+001F */
	ESC_DEL,      /* U+007F */
	ESC_C1,       /* U+0080..U+009F, UTF-8 encoded (a raw 0x80..0x9F byte is ESC_INVALID) */
	ESC_NONCHAR,  /* U+FFFE, U+FFFF: neither XML 1.0 nor YAML can hold them */
	ESC_BIDI,     /* the bidirectional embeddings, overrides and isolates (U+202A..U+202E,
	               * U+2066..U+2069) and marks (U+200E, U+200F, U+061C): U+202E makes a
	               * terminal or an editor show the rest of a line reversed, so a name
	               * could show as another's */
	ESC_OTHER,    /* every other valid character */
	ESC_INVALID,  /* not UTF-8: one stray byte, or the maximal subpart of a cut or bad
	               * sequence (Unicode's U+FFFD practice: "cut\xe2\x96" is one unit) */
	ESC_NCLASS
};

/* What one unit becomes: text, then (hex > 0) its code point in hex
 * lowercase digits. hex is for classes whose code points fit (C0, DEL,
 * C1, NONCHAR); an invalid unit has no code point. */
struct esc_rule {
	const char *text;
	unsigned char hex;
};

struct esc_format {
	const char *name;
	/* per ASCII character, C0 and DEL included: its replacement (itself to
	 * keep a control character, e.g. XML's newline); NULL: its class's rule */
	const char *ascii[128];
	/* per class; a NULL text keeps the unit, except for C0, DEL, C1, BIDI
	 * and INVALID, which become "?": no format can let a control through */
	struct esc_rule cls[ESC_NCLASS];
};

/* The outputs' formats (escape.c holds the table that says what each does). */
extern const struct esc_format esc_term;        /* terminal: controls and invalid → '?' */
extern const struct esc_format esc_label;       /* profile labels, folded stacks, recordings: and ';' → ',' */
extern const struct esc_format esc_json;        /* inside a JSON string (RFC 8259) */
extern const struct esc_format esc_xml_text;    /* XML 1.0 character data */
extern const struct esc_format esc_xml_attr;    /* XML 1.0 attribute value in "" */
extern const struct esc_format esc_yaml;        /* inside a YAML double-quoted scalar */
extern const struct esc_format esc_tap;         /* a TAP test point's description */
extern const struct esc_format esc_prom_label;  /* a Prometheus label value in "" */
extern const struct esc_format esc_prom_help;   /* a Prometheus # HELP text */
extern const struct esc_format esc_graphite;    /* a Graphite path level or tag: [A-Za-z0-9_-] */

/* Every format above, for tests that hold them all to the same rules. */
extern const struct esc_format *const esc_formats[];
extern const size_t esc_nformats;

/* The unit at p (at most avail bytes; a NUL ends a sequence): the length
 * (1..4) of a valid shortest-form sequence, no surrogates, at most
 * U+10FFFF, with its code point in *cp (may be NULL); or minus the length of
 * the invalid unit there. Never 0 while avail > 0. */
int esc_utf8(const unsigned char *p, size_t avail, uint32_t *cp);

/* The class of the unit that esc_utf8 returned n (and cp) for. */
enum esc_class esc_classify(int n, uint32_t cp);

/* Writes s escaped for f: len bytes or up to its NUL, whichever is first
 * (SIZE_MAX: up to the NUL). Errors are the stream's (ferror). */
void esc_fwrite(FILE *out, const struct esc_format *f, const char *s, size_t len);

static inline void esc_fputs(FILE *out, const struct esc_format *f, const char *s)
{
	esc_fwrite(out, f, s ? s : "", SIZE_MAX);
}

/* The same into dst (cap >= 1 bytes, always NUL-terminated): each unit's
 * output is written whole or not at all, and the walk stops at the first
 * that does not fit. Returns the length written; *cut (may be NULL) is 1
 * when some of s was left out. dst may be s when f never lengthens a unit
 * (esc_term, esc_label, esc_graphite). */
size_t esc_copy(char *dst, size_t cap, const struct esc_format *f, const char *s, size_t len, int *cut);

#endif /* LOOPSTAT_ESCAPE_H */
