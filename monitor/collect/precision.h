/*
 * precision.h — how often each worker is sampled: at the rate its idle
 * share's interval needs (design.md, "Precision-targeted sampling").
 *
 * At each tick a worker is sampled with probability 1/k, and a sample
 * taken counts k times (its weight): every count the series keeps is then
 * an unbiased (Horvitz–Thompson) estimate of what sampling at every tick
 * would have counted, whatever k was, because k is chosen from what was
 * seen before the tick and the draw is independent of the worker. Which
 * ticks are taken is a geometric countdown (memoryless: the same as a
 * fresh 1-in-k draw at every tick), so sample times stay random.
 *
 * k is chosen once a second from the worker's recent samples: the number
 * of samples a 95% interval of half-width half_pts needs over window_s
 * seconds is about z²·(q(1−q)/h² + 1/(2h)) for a share q (Wilson's, which
 * stays finite at q = 0 or 1); k is the largest stride that still takes
 * that many, at most rate/floor_hz, and at most twice the last second's.
 * At the defaults (±2 points over 10 s, 100 Hz) a parked loop is sampled
 * at 10 Hz, one busy 1% of the time at 20 Hz, one busy 5% or more at every
 * tick; at ±1 point a parked loop at 20 Hz, one busy 1% at every tick. A sample whose class differs from the one before, or out of
 * the poll, sets k to 1 at once: a worker whose state changes is sampled
 * at every tick, and a busy span's end is always seen at full resolution.
 * A loop parked in its poll drops to floor_hz within a few seconds.
 *
 * Pure: no clock, no /proc; bench/check_coverage drives it on synthetic
 * streams to show the intervals stay honest.
 */
#ifndef LOOPSTAT_PRECISION_H
#define LOOPSTAT_PRECISION_H

#include <stdint.h>

#define PREC_DEFAULT_PTS   2.0   /* target 95% half-width of idle%, points */
#define PREC_WINDOW_S      10.0  /* ... over this many seconds */
#define PREC_FLOOR_HZ      10.0  /* never sampled less often than this */

struct prec_conf {
	double rate_hz;          /* the ticks' rate: k = 1 samples at it */
	double half_pts;         /* target half-width; 0: every tick (k = 1 always) */
	double window_s;
	double floor_hz;
};

struct prec {
	/* what a skipped tick touches, first: 24 bytes */
	uint32_t skip;           /* ticks to skip before the next sample */
	uint32_t skipped;        /* ticks skipped since the last sample */
	int64_t  sec;            /* the second k was chosen for; -1: none yet */
	uint32_t k;              /* the stride: sampled with probability 1/k */
	int8_t   last_cls;       /* the class of the last sample, -1: none */
	uint8_t  changed;        /* a sample this second changed class */
	double   n, busy;        /* weighted samples and those out of the poll, decayed over the window */
	double   sec_n, sec_busy; /* this second's, not yet in n and busy */
};

/* The configuration for a tick rate and a target (half_pts 0: off). */
struct prec_conf prec_conf(double rate_hz, double half_pts);

void prec_init(struct prec *p);

/*
 * At a tick of second sec: 0 when the worker is skipped, else the weight
 * of the sample to take now (k). A second's first tick chooses its k. A
 * taken tick that yields no sample (a failed read) is simply missing: the
 * skip is as likely whatever the worker was doing.
 */
uint32_t prec_take(struct prec *p, const struct prec_conf *c, int64_t sec, unsigned *rng);

/* The sample taken at that tick: its class (SERIES_POLL for the loop's
 * poll, another series class otherwise) and the weight prec_take gave. */
void prec_note(struct prec *p, int cls, uint32_t weight);

#endif /* LOOPSTAT_PRECISION_H */
