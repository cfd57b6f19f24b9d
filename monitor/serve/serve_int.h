/*
 * serve_int.h — what serve_body.c and serve_http.c share: a window's
 * rendered bodies, reference-counted so that a scrape in flight keeps the
 * bodies it answers with while the next window's are swapped in.
 */
#ifndef LOOPSTAT_SERVE_INT_H
#define LOOPSTAT_SERVE_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "serve/serve.h"

struct serve_body {
	atomic_int refs;
	char *text;          /* owned: text format 0.0.4 */
	size_t text_len;
	char *om;            /* owned: OpenMetrics 1.0.0, ending in # EOF */
	size_t om_len;
	double made_s;       /* CLOCK_MONOTONIC, seconds */
};

/* Renders m, and the ng gauges g after it, into a new body with one
 * reference. 0 or -ENOMEM. */
int serve_body_new(const struct model *m, const char *prefix, const char *host, int64_t now,
                   const struct serve_gauge *g, size_t ng, struct serve_body **out);

/* Takes one more reference; returns body. */
struct serve_body *serve_body_get(struct serve_body *body);

/* Drops one reference, freeing the body with the last (NULL: nothing). */
void serve_body_put(struct serve_body *body);

/* Seconds since it was rendered. */
double serve_body_age(const struct serve_body *body);

#endif /* LOOPSTAT_SERVE_INT_H */
