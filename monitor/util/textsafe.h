/*
 * textsafe.h — names come from the processes themselves (comm, tags): before
 * a text view prints one, control characters (C0, DEL, C1 — raw or
 * UTF-8-encoded) and bytes that are not valid UTF-8 become '?', so no name
 * can move the cursor, change the terminal's state or break a column. Both
 * are the escape walker (escape.h) with the terminal's and the labels' rules.
 */
#ifndef LOOPSTAT_TEXTSAFE_H
#define LOOPSTAT_TEXTSAFE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/escape.h"

/* In place; the result is never longer. Returns s. */
static inline char *textsafe(char *s)
{
	esc_copy(s, strlen(s) + 1, &esc_term, s, SIZE_MAX, NULL);
	return s;
}

/* Copies src into dst (len bytes) with ';' → ',', control characters and
 * invalid UTF-8 → '?', cut to fit at a character boundary. Returns the
 * length written. What profile_tree_add does to every label. */
static inline size_t textsafe_label(char *dst, size_t len, const char *src)
{
	return esc_copy(dst, len, &esc_label, src, SIZE_MAX, NULL);
}

#endif /* LOOPSTAT_TEXTSAFE_H */
