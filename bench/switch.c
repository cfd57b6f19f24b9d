/*
 * switch — fiber switch cost: two fibers snoozing back and forth, against
 * two ucontexts swapcontext()ing back and forth, measured in the same run,
 * interleaved over several rounds (the machine is noisy); medians reported.
 *
 *   switch              full report with figures
 *   switch --fl-only    fiberloop only: min and median ns/switch of the
 *                       rounds (used by stats_overhead.sh)
 */
#include "fiberloop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#define ROUNDS 7

static long iters = 2000000;

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *snoozer(void *arg)
{
	(void)arg;
	for (long i = 0; i < iters; i++)
		fl_snooze();
	return NULL;
}

static double fl_result;

static void *fl_main(void *arg)
{
	(void)arg;
	fl_fiber *a = fl_spin(snoozer, NULL, NULL), *b = fl_spin(snoozer, NULL, NULL);
	fl_fiber_ref(a);
	fl_fiber_ref(b);
	double t0 = now_ns();
	fl_await(a, NULL);
	fl_await(b, NULL);
	/* 2 * iters snoozes, each one switch (plus 2 negligible exits) */
	fl_result = (now_ns() - t0) / (2.0 * (double)iters);
	fl_fiber_unref(a);
	fl_fiber_unref(b);
	return NULL;
}

static double bench_fl(void)
{
	if (fl_run(fl_main, NULL, NULL, NULL) != 0) {
		fprintf(stderr, "switch: fl_run failed\n");
		exit(1);
	}
	return fl_result;
}

static ucontext_t uc_main, uc_a, uc_b;

static void uc_fn_a(void)
{
	for (long i = 0; i < iters; i++)
		swapcontext(&uc_a, &uc_b);
}

static void uc_fn_b(void)
{
	for (long i = 0; i < iters; i++)
		swapcontext(&uc_b, &uc_a);
}

static double bench_uc(void)
{
	static char sa[65536], sb[65536];
	getcontext(&uc_a);
	uc_a.uc_stack.ss_sp = sa;
	uc_a.uc_stack.ss_size = sizeof(sa);
	uc_a.uc_link = &uc_main;
	makecontext(&uc_a, uc_fn_a, 0);
	getcontext(&uc_b);
	uc_b.uc_stack.ss_sp = sb;
	uc_b.uc_stack.ss_size = sizeof(sb);
	uc_b.uc_link = &uc_main;
	makecontext(&uc_b, uc_fn_b, 0);
	double t0 = now_ns();
	swapcontext(&uc_main, &uc_a);
	/* a did iters swaps to b, b did iters-1 back before a finished */
	return (now_ns() - t0) / (2.0 * (double)iters);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int fl_only = argc > 1 && strcmp(argv[1], "--fl-only") == 0;
	double fl[ROUNDS], uc[ROUNDS], ratio[ROUNDS];
	if (getenv("SWITCH_ITERS"))
		iters = atol(getenv("SWITCH_ITERS"));
	bench_fl(); /* warm-up: stacks, ring, caches */
	for (int r = 0; r < ROUNDS; r++) {
		fl[r] = bench_fl();
		if (fl_only)
			continue;
		uc[r] = bench_uc();
		ratio[r] = uc[r] / fl[r];
		printf("round %d: fiberloop %.2f ns/switch, ucontext %.2f ns/switch, ratio %.1f\n", r, fl[r], uc[r],
		       ratio[r]);
	}
	if (fl_only) {
		/* the minimum filters out rounds another process interrupted */
		double min = fl[0];
		for (int r = 1; r < ROUNDS; r++)
			min = fl[r] < min ? fl[r] : min;
		printf("switch_ns_min %.3f\nswitch_ns_median %.3f\n", min, median(fl, ROUNDS));
		return 0;
	}
	printf("iterations %ld per fiber, %d rounds, medians:\n", iters, ROUNDS);
	printf("figure switch_ns %.2f ns\n", median(fl, ROUNDS));
	printf("figure switch_speedup_vs_ucontext %.1f x\n", median(ratio, ROUNDS));
	return 0;
}
