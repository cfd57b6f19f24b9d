/*
 * precision.c — each worker's sampling stride, from the precision its idle
 * share needs (precision.h).
 */
#include "collect/precision.h"
#include "collect/series.h"
#include "util/stats.h"

#include <math.h>
#include <stdlib.h>

struct prec_conf prec_conf(double rate_hz, double half_pts)
{
	return (struct prec_conf){ .rate_hz = rate_hz, .half_pts = half_pts > 0 ? half_pts : 0,
				   .window_s = PREC_WINDOW_S, .floor_hz = PREC_FLOOR_HZ };
}

void prec_init(struct prec *p)
{
	*p = (struct prec){ .sec = -1, .k = 1, .last_cls = -1 };
}

/* Ticks to skip before the next sample when each is taken with
 * probability 1/k: geometric, so skipping is memoryless. */
static uint32_t draw_skip(uint32_t k, unsigned *rng)
{
	if (k <= 1)
		return 0;
	double u = ((double)rand_r(rng) + 1.0) / ((double)RAND_MAX + 1.0);   /* (0, 1] */
	double s = floor(log(u) / log1p(-1.0 / k));
	return s < 1e6 ? (uint32_t)s : 1000000;
}

/* The stride whose samples reach the target half-width over the window,
 * for the busy share q the decayed counts give: the samples a Wilson
 * interval (the model's floor) of that half-width needs (stats_wilson_need),
 * which stays finite at q = 0 or 1: a loop seen only in its poll still
 * needs z²/(2h) samples to say it is. */
static uint32_t stride_for(const struct prec *p, const struct prec_conf *c)
{
	if (c->half_pts <= 0 || p->n < 1)
		return 1;
	double kmax = floor(c->rate_hz / c->floor_hz);
	if (kmax <= 1)
		return 1;
	double q = p->busy / p->n, h = c->half_pts / 100;
	double need_hz = stats_wilson_need(q, h) / c->window_s;
	double k = floor(c->rate_hz / need_hz);
	return k < 1 ? 1 : k > kmax ? (uint32_t)kmax : (uint32_t)k;
}

/* A new second: last second's counts into the decayed ones, and its k. */
static void roll(struct prec *p, const struct prec_conf *c, int64_t sec, unsigned *rng)
{
	double decay = p->sec >= 0 && sec > p->sec ? pow(1 - 1 / c->window_s, (double)(sec - p->sec)) : 1;
	p->n = p->n * decay + p->sec_n;
	p->busy = p->busy * decay + p->sec_busy;
	p->sec_n = p->sec_busy = 0;
	uint32_t k = stride_for(p, c);
	/* thin out gradually, and not at all after a change */
	uint32_t most = p->changed ? p->k : 2 * p->k;
	if (k > most)
		k = most;
	if (k != p->k) {
		p->k = k;
		p->skip = draw_skip(k, rng);   /* memoryless: a fresh draw is as good as the rest of the old one */
	}
	p->changed = 0;
	p->sec = sec;
}

uint32_t prec_take(struct prec *p, const struct prec_conf *c, int64_t sec, unsigned *rng)
{
	if (sec != p->sec)
		roll(p, c, sec, rng);
	if (p->skip) {
		p->skip--;
		p->skipped++;
		return 0;
	}
	uint32_t w = p->k;
	p->skip = draw_skip(p->k, rng);
	return w;
}

void prec_note(struct prec *p, int cls, uint32_t weight)
{
	p->sec_n += weight;
	p->sec_busy += cls != SERIES_POLL ? weight : 0;
	if (p->last_cls >= 0 && cls != p->last_cls) {
		/* a change: every tick from now on, until the seconds after it are quiet */
		p->changed = 1;
		p->k = 1;
		p->skip = 0;
	}
	p->last_cls = (int8_t)cls;
	p->skipped = 0;
}
