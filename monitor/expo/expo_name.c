/*
 * expo_name.c — a name's component made safe for every exposition.
 *
 * The allowed set is deliberately smaller than carbon-c-relay's default
 * (`[A-Za-z0-9]` plus `-_:#`): `:` and `#` are legal in carbon but awkward in
 * file names and shells, and everything outside [A-Za-z0-9_-] is also
 * outside the carbon >= 1.1 tag rules' reach (`;!^=` in names, `;~` in
 * values), so one sanitiser serves paths, tag names and tag values.
 */
#include "expo/expo_name.h"
#include "util/escape.h"

#include <stdio.h>

/* FNV-1a: only needs to make truncated names distinct, not be secure. */
static uint32_t fnv1a(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

size_t expo_sanitize(char *dst, const char *src, size_t len)
{
	int truncated;
	size_t n = esc_copy(dst, EXPO_COMPONENT_MAX + 1, &esc_graphite, src, len, &truncated);
	if (truncated) {
		n = EXPO_COMPONENT_MAX - 9;
		snprintf(dst + n, 10, "_%08x", fnv1a(src, len));
		n += 9;
	}
	if (n == 0)
		dst[n++] = '_';
	dst[n] = '\0';
	return n;
}
