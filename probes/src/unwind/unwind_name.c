/*
 * unwind_name.c — a frame's symbol as a reader wants it: C++ demangled,
 * and a name too long for its field shortened by what says least — the
 * template arguments, then the parameters, then the outer qualifiers —
 * never cut in the middle of a word.
 */
#include "probe_unwind.h"
#include "unwind_int.h"

#include <libiberty/demangle.h>

#include <stdlib.h>
#include <string.h>

#define ELIDED "..."

/* Copies s into out (len bytes) with the contents of every outermost
 * bracket pair open..close replaced by "...". "(anonymous namespace)" is a
 * name, not a parameter list, and "operator<" an operator: both are kept.
 * Returns the length, or -1 when it does not fit. */
static int elide(const char *s, char open, char close, char *out, size_t len)
{
	size_t o = 0;
	int depth = 0;
	for (const char *p = s; *p; p++) {
		if (depth == 0 && *p == open) {
			if (open == '(' && strncmp(p, "(anonymous namespace)", 21) == 0) {
				if (o + 21 >= len)
					return -1;
				memcpy(out + o, p, 21);
				o += 21;
				p += 20;
				continue;
			}
			if (open == '<' && ((p - s >= 8 && strncmp(p - 8, "operator", 8) == 0) ||
					    (p - s >= 9 && strncmp(p - 9, "operator<", 9) == 0)))
				goto copy;
			if (o + 2 + sizeof(ELIDED) > len)
				return -1;
			out[o++] = open;
			memcpy(out + o, ELIDED, sizeof(ELIDED) - 1);
			o += sizeof(ELIDED) - 1;
			depth = 1;
			continue;
		}
		if (depth > 0) {
			if (*p == open)
				depth++;
			else if (*p == close && --depth == 0)
				out[o++] = close;
			continue;
		}
	copy:
		if (o + 1 >= len)
			return -1;
		out[o++] = *p;
	}
	if (depth > 0) {   /* unbalanced: close what was opened */
		if (o + 1 >= len)
			return -1;
		out[o++] = close;
	}
	out[o] = '\0';
	return (int)o;
}

void probe_unwind_shorten(const char *name, char *out, size_t len)
{
	if (!len)
		return;
	size_t n = strlen(name);
	if (n < len) {
		memcpy(out, name, n + 1);
		return;
	}
	char *t = malloc(n + 1);
	if (t && elide(name, '<', '>', t, n + 1) >= 0) {
		if (strlen(t) < len) {
			memcpy(out, t, strlen(t) + 1);
			free(t);
			return;
		}
		if (elide(t, '(', ')', out, len) >= 0) {
			free(t);
			return;
		}
		/* the innermost qualified parts that fit: "...::Class<...>::method(...)" */
		char *u = malloc(n + 1);
		if (u && elide(t, '(', ')', u, n + 1) >= 0) {
			for (const char *p = u; (p = strstr(p, "::")); p += 2) {
				if (strlen(p) + sizeof(ELIDED) - 1 < len) {
					strcpy(out, ELIDED);
					strcat(out, p);
					free(u);
					free(t);
					return;
				}
			}
		}
		free(u);
	}
	free(t);
	/* one word longer than the field: cut, and say so */
	size_t keep = len > sizeof(ELIDED) ? len - sizeof(ELIDED) : 0;
	memcpy(out, name, keep);
	strcpy(out + keep, len > sizeof(ELIDED) ? ELIDED : "");
}

void uw_set_symbol(struct probe_unwind_frame *f, const char *name)
{
	char *d = NULL;
	if (name[0] == '_' && name[1] == 'Z')
		d = cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
	probe_unwind_shorten(d ? d : name, f->symbol, sizeof(f->symbol));
	free(d);
}
