/*
 * textsafe.h — names come from the processes themselves (comm, tags): before
 * a text view prints one, control characters (C0, DEL, C1 — raw or
 * UTF-8-encoded) and bytes that are not valid UTF-8 become '?', so no name
 * can move the cursor, change the terminal's state or break a column.
 */
#ifndef LOOPSTAT_TEXTSAFE_H
#define LOOPSTAT_TEXTSAFE_H

#include <stddef.h>
#include <stdint.h>

/* In place; the result is never longer. Returns s. */
char *textsafe(char *s);

/* Length (1..4) of the valid UTF-8 sequence at p — shortest form, no
 * surrogates, at most U+10FFFF — with its code point in *cp (may be NULL),
 * or 0 when invalid (a NUL ends a sequence). The one UTF-8 rule of every
 * writer: JSON, XML, Prometheus labels, profile frames, the terminal. */
int utf8_len(const unsigned char *p, uint32_t *cp);

/* Copies src into dst (len bytes) with ';' → ',', control bytes and
 * invalid UTF-8 → '?', cut to fit at a character boundary. Returns the
 * length written. What profile_tree_add does to every label. */
size_t textsafe_label(char *dst, size_t len, const char *src);

#endif /* LOOPSTAT_TEXTSAFE_H */
