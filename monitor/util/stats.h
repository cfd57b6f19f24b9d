/*
 * stats.h — the statistics every layer shares, written once: the normal
 * and Student-t 95% quantiles, Wilson's score interval, the samples a
 * Wilson interval of a given width needs, and Kish's effective sample
 * size. Pure functions, no state: the sampler's precision targeting
 * (collect/precision.c) and the model's estimates (model/estimate.c: batch
 * means over these) call the same ones. Views never do: they print the
 * model's intervals (scripts/check-layers.sh holds them to it).
 */
#ifndef LOOPSTAT_STATS_H
#define LOOPSTAT_STATS_H

#define STATS_Z975 1.959963984540054   /* the normal distribution's 0.975 quantile */

/* The 0.975 quantile of Student's t with df degrees of freedom (df >= 1,
 * fractional ones interpolated; inf: the normal's). NaN for NaN. */
double stats_t975(double df);

/* Wilson's 95% score interval of a proportion p of n samples (n may be an
 * effective size, fractional): its centre and half-width, as proportions.
 * It stays honest at p = 0 or 1 and for small n. NaN when n <= 0. */
double stats_wilson_centre(double p, double n);
double stats_wilson_half(double p, double n);

/* About the samples a Wilson interval of half-width h needs at proportion
 * q: z²·(q(1−q)/h² + 1/(2h)), finite at q = 0 or 1 (a share seen at 0 or
 * 1 still needs samples to say so). */
double stats_wilson_need(double q, double h);

/* Kish's effective sample size of weighted samples: (Σw)² / Σw²
 * (0 when Σw² is 0). */
double stats_kish(double sum_w, double sum_w2);

#endif /* LOOPSTAT_STATS_H */
