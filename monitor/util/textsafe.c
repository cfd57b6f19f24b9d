/*
 * textsafe.c — one pass of UTF-8 validation with control filtering.
 */
#include "util/textsafe.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int utf8_len(const unsigned char *p, uint32_t *cp)
{
	uint32_t ignored;
	int n;
	if (!cp)
		cp = &ignored;
	uint32_t c, min;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	} else if ((p[0] & 0xe0) == 0xc0) {
		n = 2, c = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 3, c = p[0] & 0x0f, min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 4, c = p[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	for (int i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;   /* also stops at the NUL */
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

char *textsafe(char *s)
{
	unsigned char *r = (unsigned char *)s, *w = r;
	while (*r) {
		uint32_t cp;
		int n = utf8_len(r, &cp);
		if (n == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) {
			*w++ = '?';
			r += n ? n : 1;
			continue;
		}
		for (int i = 0; i < n; i++)
			*w++ = *r++;
	}
	*w = '\0';
	return s;
}

size_t textsafe_label(char *dst, size_t len, const char *src)
{
	size_t o = 0;
	if (len == 0)
		return 0;
	for (const unsigned char *p = (const unsigned char *)src; *p;) {
		int n = utf8_len(p, NULL);
		if (n <= 1) {
			if (o + 1 >= len)
				break;
			unsigned char c = *p++;
			/* ';' separates frames in folded stacks; control bytes are
			 * not allowed in XML and break line-based formats */
			dst[o++] = c == ';' ? ',' : (n == 0 || c < 0x20 || c == 0x7f) ? '?' : (char)c;
			continue;
		}
		if (o + (size_t)n >= len)
			break;
		memcpy(dst + o, p, (size_t)n);
		o += (size_t)n;
		p += n;
	}
	dst[o] = '\0';
	return o;
}
