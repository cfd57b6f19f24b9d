/*
 * runqueue.c — the slow paths of the ring-buffer runqueue of {fiber, value}
 * (the hot push/unshift/shift are inline in fl_internal.h). The ring only
 * grows: a loop that once had N runnable fibers will likely have them again,
 * and growing is the only allocation the scheduler ever does.
 */
#include "fl_internal.h"

#include <stdlib.h>
#include <string.h>

int fl__rq_init(struct fl__runqueue *q, unsigned cap)
{
	unsigned c = 16;
	while (c < cap)
		c *= 2;
	memset(q, 0, sizeof(*q));
	q->buf = calloc(c, sizeof(*q->buf));
	if (!q->buf)
		return -ENOMEM;
	q->cap = c;
	/* until the loop has its stats slot, publish into the queue itself */
	q->pub_hwm = q->pub_cap = &q->scratch;
	return 0;
}

void fl__rq_done(struct fl__runqueue *q)
{
	free(q->buf);
	q->buf = NULL;
	q->cap = q->len = q->head = 0;
}

/* Doubles the ring, unrolling it so that head is 0 again. */
int fl__rq_grow(struct fl__runqueue *q)
{
	unsigned ncap = q->cap * 2;
	struct fl__rq_entry *n = malloc(ncap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (unsigned i = 0; i < q->len; i++)
		n[i] = q->buf[(q->head + i) & (q->cap - 1)];
	free(q->buf);
	q->buf = n;
	q->head = 0;
	q->cap = ncap;
#ifndef FL_NO_STATS
	fl_stat_set(q->pub_cap, ncap);
#endif
	return 0;
}

/* Removes f's entry, keeping the order of the others. 0 or -ENOENT. */
int fl__rq_delete(struct fl__runqueue *q, fl_fiber *f)
{
	unsigned mask = q->cap - 1;
	for (unsigned i = 0; i < q->len; i++) {
		if (q->buf[(q->head + i) & mask].fiber != f)
			continue;
		for (unsigned j = i; j + 1 < q->len; j++)
			q->buf[(q->head + j) & mask] = q->buf[(q->head + j + 1) & mask];
		q->len--;
		return 0;
	}
	return -ENOENT;
}
