/* Ops interleaved across 1,000 fibers: pipes ping-pong, sleeps, snoozes and cancels all in flight at once. */
#include "support/fl_test.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define FIBERS 1000
#define ROUNDS 20

struct pair {
	int      a[2], b[2];   /* a: ping, b: pong */
	unsigned sum;
	int      done;
};

static void *pinger(void *arg)
{
	struct pair *p = arg;
	for (unsigned i = 0; i < ROUNDS; i++) {
		unsigned v = i, back;
		cr_assert_eq(fl_write(p->a[1], &v, sizeof(v)), sizeof(v));
		cr_assert_eq(fl_read_full(p->b[0], &back, sizeof(back)), sizeof(back));
		cr_assert_eq(back, v * 2);
		p->sum += back;
		if (i % 5 == 0)
			fl_snooze();
	}
	p->done = 1;
	return NULL;
}

static void *ponger(void *arg)
{
	struct pair *p = arg;
	for (unsigned i = 0; i < ROUNDS; i++) {
		unsigned v;
		cr_assert_eq(fl_read_full(p->a[0], &v, sizeof(v)), sizeof(v));
		if (i % 7 == 0)
			cr_assert_eq(fl_sleep(0.0005), 0);
		v *= 2;
		cr_assert_eq(fl_write(p->b[1], &v, sizeof(v)), sizeof(v));
	}
	return NULL;
}

static void *doomed(void *arg)
{
	*(int *)arg = fl_sleep(60);
	return NULL;
}

static void *interleave_main(void *arg)
{
	(void)arg;
	/* FIBERS/2 pairs of ping-pong fibers plus 100 fibers cancelled mid-sleep */
	struct pair *pairs = calloc(FIBERS / 2, sizeof(*pairs));
	fl_fiber *victims[100];
	int vres[100];
	for (int i = 0; i < FIBERS / 2; i++) {
		cr_assert_eq(pipe2(pairs[i].a, O_CLOEXEC), 0);
		cr_assert_eq(pipe2(pairs[i].b, O_CLOEXEC), 0);
		fl_spin(ponger, &pairs[i], "pong");
		fl_spin(pinger, &pairs[i], "ping");
	}
	for (int i = 0; i < 100; i++)
		victims[i] = fl_spin(doomed, &vres[i], NULL);
	fl_sleep(0.01);
	cr_assert(fl_stats_slot()->fibers_live >= FIBERS, "live %lu", (unsigned long)fl_stats_slot()->fibers_live);
	for (int i = 0; i < 100; i++)
		fl_cancel(victims[i]);
	for (int spins = 0; spins < 100000; spins++) {
		int all = 1;
		for (int i = 0; i < FIBERS / 2 && all; i++)
			all = pairs[i].done;
		if (all)
			break;
		fl_sleep(0.001);
	}
	unsigned want = 0;
	for (unsigned i = 0; i < ROUNDS; i++)
		want += i * 2;
	for (int i = 0; i < FIBERS / 2; i++) {
		cr_assert(pairs[i].done);
		cr_assert_eq(pairs[i].sum, want);
		close(pairs[i].a[0]);
		close(pairs[i].a[1]);
		close(pairs[i].b[0]);
		close(pairs[i].b[1]);
	}
	for (int i = 0; i < 100; i++)
		cr_assert_eq(vres[i], -ECANCELED);
	free(pairs);
	return NULL;
}

Test(interleave, ops_across_1000_fibers, .timeout = 30)
{
	fl_test_run(interleave_main, NULL);
}
