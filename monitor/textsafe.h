/*
 * textsafe.h — names come from the processes themselves (comm, tags): before
 * a text view prints one, control characters (C0, DEL, C1 — raw or
 * UTF-8-encoded) and bytes that are not valid UTF-8 become '?', so no name
 * can move the cursor, change the terminal's state or break a column.
 */
#ifndef LOOPSTAT_TEXTSAFE_H
#define LOOPSTAT_TEXTSAFE_H

/* In place; the result is never longer. Returns s. */
char *textsafe(char *s);

#endif /* LOOPSTAT_TEXTSAFE_H */
