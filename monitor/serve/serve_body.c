/*
 * serve_body.c — the /metrics bodies of one window: rendered once from the
 * model through export's points and Prometheus writer (so serve and the
 * textfile cannot disagree on a name), then shared by reference count
 * between the publisher and every scrape in flight.
 */
#include "serve/serve_int.h"
#include "export/export_points.h"
#include "export/export_prom.h"
#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int render(const struct export_points *b, enum export_prom_fmt fmt, char **text, size_t *len)
{
	FILE *f = open_memstream(text, len);
	if (!f)
		return -ENOMEM;
	export_prom_render(f, b->pts, b->n, fmt, NULL);
	return fclose(f) == 0 ? 0 : -ENOMEM;
}

int serve_body_new(const struct model *m, const char *prefix, const char *host, int64_t now,
                   const struct serve_gauge *g, size_t ng, struct serve_body **out)
{
	struct serve_body *body = calloc(1, sizeof(*body));
	if (!body)
		return -ENOMEM;
	atomic_init(&body->refs, 1);
	body->made_s = mono_s();
	struct export_points b;
	export_points_init(&b);
	int rc = export_points_add_model(&b, m, prefix, host, now);
	if (rc == 0)
		rc = export_points_add_source(&b, m, prefix, host, now);
	if (rc == 0)
		rc = export_points_add_ignored(&b, m, prefix, host, now);
	for (size_t i = 0; rc == 0 && i < ng; i++)
		rc = export_points_add_gauge(&b, prefix, host, now, g[i].name, g[i].help, g[i].value);
	if (rc == 0)
		rc = render(&b, EXPORT_PROM_TEXT, &body->text, &body->text_len);
	if (rc == 0)
		rc = render(&b, EXPORT_PROM_OPENMETRICS, &body->om, &body->om_len);
	export_points_done(&b);
	if (rc < 0) {
		serve_body_put(body);
		return rc;
	}
	*out = body;
	return 0;
}

struct serve_body *serve_body_get(struct serve_body *body)
{
	atomic_fetch_add_explicit(&body->refs, 1, memory_order_relaxed);
	return body;
}

void serve_body_put(struct serve_body *body)
{
	if (!body || atomic_fetch_sub_explicit(&body->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(body->text);
	free(body->om);
	free(body);
}

double serve_body_age(const struct serve_body *body)
{
	return mono_s() - body->made_s;
}
