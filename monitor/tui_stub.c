/*
 * tui_stub.c — TEMPORARY: weak stand-ins for the sampler and model (being
 * written on main) so the dashboard links and its drawing tests run before
 * they land. The real, strong definitions replace these at link time; this
 * file goes away once monitor/sampler.c and model.c are merged.
 */
#include "sampler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define WEAK __attribute__((weak))

struct sampler { double hz; };

WEAK void model_done(struct model *m)
{
	free(m->workers);
	m->workers = NULL;
	m->n = 0;
}

WEAK int sampler_new(const struct sampler_opts *o, struct sampler **out)
{
	struct sampler *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->hz = o->rate_hz > 0 ? o->rate_hz : SAMPLER_DEFAULT_HZ;
	*out = s;
	return 0;
}

WEAK int sampler_start(struct sampler *s) { (void)s; return 0; }
WEAK void sampler_stop(struct sampler *s) { (void)s; }
WEAK void sampler_delete(struct sampler *s) { free(s); }
WEAK void sampler_set_rate(struct sampler *s, double hz) { s->hz = hz; }
WEAK double sampler_rate(struct sampler *s) { return s->hz; }
WEAK void sampler_set_paused(struct sampler *s, int paused) { (void)s; (void)paused; }
WEAK void sampler_set_all_threads(struct sampler *s, int on) { (void)s; (void)on; }

WEAK int sampler_model(struct sampler *s, double window_s, struct model *m)
{
	memset(m, 0, sizeof(*m));
	m->rate_hz = s->hz;
	m->window_s = window_s;
	return 0;
}
