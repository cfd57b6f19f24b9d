/* pread or the ring, chosen on made-up costs: both directions, re-checks that switch when costs change, and the same on a real batch of real children. */
#include <criterion/criterion.h>

#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "probe_syscall_batch.h"
#include "support/probe_child.h"

#define MS 1000000ull

/* Runs ticks of n reads at `now` until the choice stops measuring, each
 * costing cost[path] ns per read; returns the number of measured ticks. */
static unsigned run_check(struct probe_sc_choice *c, uint64_t now, size_t n, const uint64_t cost[2])
{
	unsigned measured = 0;
	for (;;) {
		int m;
		enum probe_sc_path p = probe_sc_choice_next(c, now, n, &m);
		cr_assert(p == PROBE_SC_PATH_PREAD || p == PROBE_SC_PATH_RING);
		if (!m)
			return measured;
		probe_sc_choice_record(c, p, cost[p == PROBE_SC_PATH_RING] * n, n);
		cr_assert_lt(++measured, 100, "the check never ends");
	}
}

Test(probe_sc_choice, start_picks_the_cheaper_either_way)
{
	struct probe_sc_choice c;
	const uint64_t ring_cheap[2] = { 3000, 2000 }, pread_cheap[2] = { 400, 520 };
	probe_sc_choice_init(&c, 0);
	cr_assert_eq(run_check(&c, 1, 1000, ring_cheap), 2 * PROBE_SC_START_TICKS);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_RING);
	probe_sc_choice_init(&c, 0);
	cr_assert_eq(run_check(&c, 1, 1000, pread_cheap), 2 * PROBE_SC_START_TICKS);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_PREAD);
	/* equal: pread, which needs no io-wq threads */
	const uint64_t same[2] = { 500, 500 };
	probe_sc_choice_init(&c, 0);
	run_check(&c, 1, 10, same);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_PREAD);
	cr_assert_eq(c.switches, 0);
}

/* Between checks nothing is measured; a re-check follows changed costs. */
Test(probe_sc_choice, recheck_switches_when_costs_change)
{
	struct probe_sc_choice c;
	const uint64_t ring_cheap[2] = { 3000, 2000 }, pread_cheap[2] = { 400, 520 };
	probe_sc_choice_init(&c, 1000 * MS);
	run_check(&c, 0, 500, ring_cheap);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_RING);
	/* costs changed, but no check is due: the choice holds */
	cr_assert_eq(run_check(&c, 999 * MS, 500, pread_cheap), 0);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_RING);
	cr_assert_eq(run_check(&c, 1000 * MS, 500, pread_cheap), 2 * PROBE_SC_CHECK_TICKS);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_PREAD);
	cr_assert_eq(c.switches, 1);
	cr_assert_eq(run_check(&c, 2000 * MS, 500, ring_cheap), 2 * PROBE_SC_CHECK_TICKS);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_RING);
	cr_assert_eq(c.switches, 2);
	cr_assert_eq(c.checks, 3);
}

/* The least cost of a check counts: one disturbed tick does not decide. */
Test(probe_sc_choice, one_disturbed_tick_does_not_decide)
{
	struct probe_sc_choice c;
	probe_sc_choice_init(&c, 0);
	unsigned t = 0;
	for (int m = 1; m;) {
		enum probe_sc_path p = probe_sc_choice_next(&c, 1, 100, &m);
		if (!m)
			break;
		/* ring is cheaper, but its first tick pays for new io-wq threads */
		uint64_t per = p == PROBE_SC_PATH_RING ? (t++ == 0 ? 50000 : 900) : 1000;
		probe_sc_choice_record(&c, p, per * 100, 100);
	}
	cr_assert_eq(c.chosen, PROBE_SC_PATH_RING);
}

/* A fleet that doubles or halves is re-measured at once. */
Test(probe_sc_choice, a_changed_fleet_is_checked_at_once)
{
	struct probe_sc_choice c;
	const uint64_t pread_cheap[2] = { 400, 900 }, ring_cheap[2] = { 400, 300 };
	probe_sc_choice_init(&c, 1000 * MS);
	run_check(&c, 0, 5, pread_cheap);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_PREAD);
	cr_assert_eq(run_check(&c, MS, 10, ring_cheap), 0, "twice the size is not more than twice");
	cr_assert_eq(run_check(&c, MS, 11, ring_cheap), 2 * PROBE_SC_CHECK_TICKS);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_RING);
	cr_assert_eq(run_check(&c, 2 * MS, 5, pread_cheap), 2 * PROBE_SC_CHECK_TICKS);
	cr_assert_eq(c.chosen, PROBE_SC_PATH_PREAD);
	/* no reads: nothing to measure, nothing changes */
	int m;
	cr_assert_eq(probe_sc_choice_next(&c, 5000 * MS, 0, &m), PROBE_SC_PATH_PREAD);
	cr_assert_eq(m, 0);
}

/* ---- on a real batch ------------------------------------------------------- */

static uint64_t fake_cost[2];

static uint64_t fake(void *arg, enum probe_sc_path p, size_t nreads)
{
	(void)arg;
	return fake_cost[p == PROBE_SC_PATH_RING] * nreads;
}

#define KIDS 4

/* Samples k ticks; returns how many read through the ring, checking every
 * sample against a lone pread. */
static int ticks(struct probe_sc_batch *b, struct probe_syscall **p, int k)
{
	struct probe_sc_sample out[KIDS], s;
	int rc[KIDS], ring = 0;
	for (int t = 0; t < k; t++) {
		cr_assert_eq(probe_sc_batch_sample(b, p, KIDS, out, rc), 0);
		ring += probe_sc_batch_last_path(b) == PROBE_SC_PATH_RING;
		for (int i = 0; i < KIDS; i++) {
			cr_assert_eq(rc[i], 0);
			cr_assert_eq(probe_syscall_sample(p[i], &s), 0);
			cr_assert_eq(out[i].state, PROBE_SC_IN_SYSCALL);
			cr_assert_eq(out[i].nr, s.nr);
		}
	}
	return ring;
}

Test(probe_sc_choice, a_batch_follows_its_cost_model, .timeout = PROBE_TEST_TIMEOUT)
{
	int ep = epoll_create1(0);
	cr_assert_geq(ep, 0);
	struct probe_syscall sc[KIDS], *p[KIDS];
	pid_t pid[KIDS];
	for (int i = 0; i < KIDS; i++) {
		struct probe_sc_sample s;
		pid[i] = tchild_fork(tchild_park_epoll_wait, TCHILD_FD(ep));
		cr_assert_gt(pid[i], 0);
		cr_assert_eq(probe_syscall_open(&sc[i], pid[i], pid[i]), 0);
		cr_assert_eq(tchild_wait_state(&sc[i], PROBE_SC_IN_SYSCALL, 5000, &s), 0);
		p[i] = &sc[i];
	}
	struct probe_sc_batch *b;
	cr_assert_eq(probe_sc_batch_new(16, &b), 0);
	tchild_need_ring(probe_sc_batch_ring(b));
	fake_cost[0] = 3000;
	fake_cost[1] = 1000;
	probe_sc_batch_set_cost_model(b, fake, NULL, 50 * MS);
	cr_assert_eq(ticks(b, p, 2 * PROBE_SC_START_TICKS), PROBE_SC_START_TICKS);
	cr_assert_eq(ticks(b, p, 10), 10, "the ring is cheaper: every tick uses it");
	fake_cost[0] = 500;
	struct timespec gap = { 0, 60 * MS };
	nanosleep(&gap, NULL);
	cr_assert_eq(ticks(b, p, 2 * PROBE_SC_CHECK_TICKS), PROBE_SC_CHECK_TICKS);
	cr_assert_eq(ticks(b, p, 10), 0, "pread became cheaper: no tick uses the ring");
	probe_sc_batch_delete(b);
	for (int i = 0; i < KIDS; i++) {
		probe_syscall_close(&sc[i]);
		tchild_reap(pid[i]);
	}
	close(ep);
}
