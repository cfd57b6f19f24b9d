/*
 * syscall_batch_choose.c — pread or the ring, chosen by measurement.
 *
 * A tick's cost is the CPU time of the calling thread plus that of its
 * io-wq threads (whose reads do not show in the caller's own clock), per
 * read, so that a fleet that grew between two checks compares fairly.
 * Each check runs both paths alternately and keeps the least cost seen for
 * each: on a machine shared with other load, the least is the one least
 * disturbed by it, and both paths get the same treatment. Ties go to pread,
 * which needs no io-wq threads.
 */
#include "probe_syscall_batch.h"
#include "probe_clock.h"
#include "syscall_batch_int.h"

#include <time.h>

static int idx(enum probe_sc_path p)
{
	return p == PROBE_SC_PATH_RING;
}

static void begin_check(struct probe_sc_choice *c, unsigned ticks, uint64_t now_ns, size_t nreads)
{
	c->left[0] = c->left[1] = ticks;
	c->best[0] = c->best[1] = UINT64_MAX;
	c->next_check_ns = now_ns + c->recheck_ns;
	c->n_at_check = nreads;
}

void probe_sc_choice_init(struct probe_sc_choice *c, uint64_t recheck_ns)
{
	*c = (struct probe_sc_choice){ .chosen = PROBE_SC_PATH_PREAD };
	c->recheck_ns = recheck_ns ? recheck_ns : PROBE_SC_RECHECK_NS;
	c->next_check_ns = 0; /* the first tick with reads starts the first check */
}

enum probe_sc_path probe_sc_choice_next(struct probe_sc_choice *c, uint64_t now_ns, size_t nreads, int *measure)
{
	*measure = 0;
	if (!nreads)
		return c->chosen;
	if (!c->left[0] && !c->left[1]) {
		if (!c->checks && !c->next_check_ns)
			begin_check(c, PROBE_SC_START_TICKS, now_ns, nreads);
		else if (now_ns >= c->next_check_ns || nreads > 2 * c->n_at_check || 2 * nreads < c->n_at_check)
			begin_check(c, PROBE_SC_CHECK_TICKS, now_ns, nreads);
		else
			return c->chosen;
	}
	*measure = 1;
	/* alternate, ring first: what is left decides */
	return c->left[1] >= c->left[0] ? PROBE_SC_PATH_RING : PROBE_SC_PATH_PREAD;
}

void probe_sc_choice_record(struct probe_sc_choice *c, enum probe_sc_path p, uint64_t cost_ns, size_t nreads)
{
	int i = idx(p);
	if (!nreads || !c->left[i])
		return;
	uint64_t per = cost_ns / nreads;
	if (per < c->best[i])
		c->best[i] = per;
	c->left[i]--;
	if (c->left[0] || c->left[1])
		return;
	enum probe_sc_path was = c->chosen;
	c->chosen = c->best[1] < c->best[0] ? PROBE_SC_PATH_RING : PROBE_SC_PATH_PREAD;
	c->checks++;
	c->switches += c->chosen != was && c->checks > 1;
}

/* ---- on a batch ------------------------------------------------------------ */

/* What the caller pays: its own thread, plus its io-wq threads on the ring
 * (their scan, ~30 us, runs outside the measured span). */
static uint64_t run_measured(struct probe_sc_batch *b, enum probe_sc_path p, struct probe_syscall *const *probes,
			     size_t n, struct probe_sc_sample *out, int *rc, size_t live)
{
	if (b->cost_fn) {
		probe__sc_batch_run(b, p, probes, n, out, rc);
		return b->cost_fn(b->cost_arg, b->last_path, live);
	}
	uint64_t w0 = 0, w1 = 0;
	if (p == PROBE_SC_PATH_RING)
		probe_sc_batch_iowq_cpu_ns(b, &w0);
	uint64_t t0 = probe_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	probe__sc_batch_run(b, p, probes, n, out, rc);
	uint64_t t1 = probe_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (b->last_path == PROBE_SC_PATH_RING)
		probe_sc_batch_iowq_cpu_ns(b, &w1);
	return (t1 - t0) + (w1 >= w0 ? w1 - w0 : 0);
}

int probe_sc_batch_sample(struct probe_sc_batch *b, struct probe_syscall *const *probes, size_t n,
			  struct probe_sc_sample *out, int *rc)
{
	if (b->path != PROBE_SC_PATH_AUTO || b->ring_ok != 1) {
		probe__sc_batch_run(b, b->ring_ok == 1 ? b->path : PROBE_SC_PATH_PREAD, probes, n, out, rc);
		return 0;
	}
	size_t live = 0;
	for (size_t i = 0; i < n; i++)
		live += probes[i] != NULL;
	int measure;
	enum probe_sc_path p = probe_sc_choice_next(&b->choice, probe_clock_ns(CLOCK_MONOTONIC), live, &measure);
	if (!measure) {
		probe__sc_batch_run(b, p, probes, n, out, rc);
		return 0;
	}
	uint64_t cost = run_measured(b, p, probes, n, out, rc, live);
	/* a ring that failed under the tick read with pread: nothing to learn */
	if (b->last_path == p)
		probe_sc_choice_record(&b->choice, p, cost, live);
	return 0;
}

void probe_sc_batch_set_path(struct probe_sc_batch *b, enum probe_sc_path p)
{
	b->path = p;
}

enum probe_sc_path probe_sc_batch_last_path(const struct probe_sc_batch *b)
{
	return b->last_path;
}

void probe_sc_batch_set_cost_model(struct probe_sc_batch *b, probe_sc_cost_fn fn, void *arg, uint64_t recheck_ns)
{
	b->cost_fn = fn;
	b->cost_arg = arg;
	probe_sc_choice_init(&b->choice, recheck_ns);
}
