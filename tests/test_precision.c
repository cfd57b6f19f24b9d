/*
 * Precision-targeted sampling (collect/precision.h): each worker's stride,
 * the weights that keep its counts unbiased, the interval that counts the
 * samples really taken, and real workers sampled by `loopstat list`.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collect/precision.h"
#include "collect/series.h"
#include "model/estimate.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/probe_child.h"
#include "support/support.h"

#define HZ 100

/* One second of ticks at HZ, each in class cls (SERIES_POLL or another):
 * returns the samples taken. */
static int second_of(struct prec *p, const struct prec_conf *c, int64_t sec, int cls, unsigned *rng)
{
	int taken = 0;
	for (int t = 0; t < HZ; t++) {
		uint32_t w = prec_take(p, c, sec, rng);
		if (w) {
			prec_note(p, cls, w);
			taken++;
		}
	}
	return taken;
}

/* A loop only ever seen in its poll: the stride doubles each second up to
 * what a 1-point Wilson interval over 10 s needs (z²/(2h) = 192 samples:
 * 19.2 Hz, a stride of 5 at 100 Hz), and stays there. */
Test(precision, parked_loop_thins_to_its_target)
{
	struct prec p;
	struct prec_conf c = prec_conf(HZ, 1);
	unsigned rng = 7;
	static const uint32_t want[] = { 1, 2, 4, 5, 5, 5, 5, 5, 5, 5 };
	int taken = 0;
	prec_init(&p);
	for (int64_t sec = 0; sec < 10; sec++) {
		int n = second_of(&p, &c, sec, SERIES_POLL, &rng);
		cr_assert_eq(p.k, want[sec], "second %lld: stride %u, not %u", (long long)sec, p.k, want[sec]);
		if (sec >= 4)
			taken += n;
	}
	/* 6 s at 1 tick in 5: 120 expected; binomial sd ~10 */
	cr_expect(taken >= 80 && taken <= 160, "%d samples in 6 s at a stride of 5", taken);
}

Test(precision, off_and_floor)
{
	struct prec p;
	unsigned rng = 11;
	struct prec_conf off = prec_conf(HZ, 0);
	prec_init(&p);
	for (int64_t sec = 0; sec < 8; sec++)
		cr_assert_eq(second_of(&p, &off, sec, SERIES_POLL, &rng), HZ, "off: every tick");
	/* 50 points would need under 1 Hz: the floor (10 Hz) holds */
	struct prec_conf wide = prec_conf(HZ, 50);
	prec_init(&p);
	for (int64_t sec = 0; sec < 8; sec++)
		second_of(&p, &wide, sec, SERIES_POLL, &rng);
	cr_assert_eq(p.k, (uint32_t)(HZ / PREC_FLOOR_HZ), "stride %u at the floor", p.k);
	/* a rate at the floor or under it: every tick */
	struct prec_conf slow = prec_conf(PREC_FLOOR_HZ, 50);
	prec_init(&p);
	for (int64_t sec = 0; sec < 8; sec++)
		second_of(&p, &slow, sec, SERIES_POLL, &rng);
	cr_assert_eq(p.k, 1u);
}

/* A change is sampled at every tick from the next tick on, and the stride
 * does not grow in the second after it. */
Test(precision, a_change_samples_every_tick)
{
	struct prec p;
	struct prec_conf c = prec_conf(HZ, 1);
	unsigned rng = 3;
	prec_init(&p);
	int64_t sec = 0;
	for (; sec < 6; sec++)
		second_of(&p, &c, sec, SERIES_POLL, &rng);
	cr_assert_eq(p.k, 5u);
	uint32_t w;
	while (!(w = prec_take(&p, &c, sec, &rng)))
		;
	prec_note(&p, SERIES_RUNNING, w);
	for (int t = 0; t < 20; t++) {
		cr_assert_eq(prec_take(&p, &c, sec, &rng), 1u, "tick %d after the change", t);
		prec_note(&p, t < 10 ? SERIES_RUNNING : SERIES_POLL, 1);
	}
	prec_take(&p, &c, sec + 1, &rng);
	cr_assert_eq(p.k, 1u, "the second after a change stays at every tick");
}

/*
 * What the weights are for: a worker parked for long stretches with short
 * bursts of work is thinned while parked and sampled at every tick around
 * a burst. Counting each sample once over-counts the bursts; counting each
 * k times (Horvitz-Thompson) does not. Over many runs of a known stream
 * the weighted share's mean error is within 3 standard errors of 0 and the
 * unweighted one's far outside (so the test can tell the two apart).
 */
Test(precision, weights_keep_the_share_unbiased)
{
	const int runs = 300, secs = 60;
	unsigned rng = 12345, world = 99;
	double e_w = 0, e_w2 = 0, e_u = 0;
	for (int r = 0; r < runs; r++) {
		struct prec p;
		struct prec_conf c = prec_conf(HZ, 2);
		prec_init(&p);
		int busy = 0;
		double idle_ticks = 0, ticks = 0, w_idle = 0, w_all = 0, u_idle = 0, u_all = 0;
		for (int64_t sec = 0; sec < secs; sec++)
			for (int t = 0; t < HZ; t++) {
				/* parked runs of 1500 ticks on average, bursts of 20 */
				double u = (double)rand_r(&world) / RAND_MAX;
				busy = busy ? u > 1.0 / 20 : u < 1.0 / 1500;
				idle_ticks += !busy;
				ticks++;
				uint32_t w = prec_take(&p, &c, sec, &rng);
				if (!w)
					continue;
				prec_note(&p, busy ? SERIES_RUNNING : SERIES_POLL, w);
				w_idle += busy ? 0 : w;
				w_all += w;
				u_idle += !busy;
				u_all++;
			}
		double truth = 100 * idle_ticks / ticks;
		double ew = 100 * w_idle / w_all - truth, eu = 100 * u_idle / u_all - truth;
		e_w += ew;
		e_w2 += ew * ew;
		e_u += eu;
	}
	double mean = e_w / runs, sd = sqrt(e_w2 / runs - mean * mean), se = sd / sqrt(runs);
	cr_expect(fabs(mean) <= 3 * se, "weighted: mean error %.3f points, se %.3f", mean, se);
	cr_expect(e_u / runs < -5 * se, "unweighted: mean error %.3f points (se of the weighted %.3f)", e_u / runs, se);
}

/* A sample of weight k counts k times, k² in n2, once in taken; the totals
 * and the key table count it k times too. */
Test(precision, series_counts_a_weighted_sample)
{
	static struct series a;
	series_init(&a);
	struct probe_verdict poll = { .cls = PROBE_POLL, .nr = 232, .fd = 3 };
	struct series_ctx ctx = { .weight = 5 };
	series_add_sample(&a, 1500000000ull, &poll, &ctx);
	series_add_sample(&a, 1600000000ull, &poll, NULL);
	const struct series_bucket *b = &a.detail[1];
	cr_assert_eq(b->sec, 1);
	cr_assert_eq(b->n[SERIES_POLL], 6u);
	cr_assert_eq(b->n2[SERIES_POLL], 26u);
	cr_assert_eq(b->taken, 2u);
	cr_assert_eq(a.total.n[SERIES_POLL], 6u);
	cr_assert_eq(a.total.keys[0].n, 6u);
	cr_assert_eq(a.samples, 2u);
}

/* The interval counts the samples taken (Kish's size), not their weights:
 * 20 s of 20 samples of weight 5 are 400 samples, not 2000. */
Test(precision, interval_counts_samples_taken)
{
	struct est_sec thin[20], full[20];
	for (int i = 0; i < 20; i++) {
		thin[i] = (struct est_sec){ 100, 100, 20 * 25 };
		full[i] = (struct est_sec){ 100, 100, 0 };
	}
	struct estimate et, ef;
	cr_assert_eq(est_batch_means(thin, 20, EST_PROPORTION, 100, &et), 0);
	cr_assert_eq(est_batch_means(full, 20, EST_PROPORTION, 100, &ef), 0);
	cr_assert_float_eq(et.n, 400, 1e-9);
	cr_assert_float_eq(ef.n, 2000, 1e-9);
	cr_assert_eq(et.est, 100);
	/* Wilson's lower bound at 100 %: n/(n+z²) */
	cr_expect_float_eq(et.lo, 100 * 400 / (400 + 1.959964 * 1.959964), 1e-3, "%f", et.lo);
	cr_expect_lt(et.lo, ef.lo);
	struct est_sec bad = { 1, 2, -1 };
	cr_assert_eq(est_batch_means(&bad, 1, EST_PROPORTION, 100, &et), -EINVAL);
}

struct listed {
	double samples, idle, ci, wait;
};

/* `loopstat list --json` of pid[i] for 6 s at precision[i], the n of
 * them side by side: each one's worker's samples, idle and interval. */
static void list_at(int n, const pid_t pid[], const char *const precision[], struct listed *l)
{
	char p[3][16];
	char *argv[3][12], *outs[3] = { NULL, NULL, NULL };
	char *const *argvs[3];
	int rcs[3];
	cr_assert(n >= 1 && n <= 3);
	for (int i = 0; i < n; i++) {
		snprintf(p[i], sizeof(p[i]), "%d", (int)pid[i]);
		/* --source proc: the samples' strides and intervals are what this judges */
		char *a[] = { (char *)ts_loopstat_bin(), "list", "-p", p[i], "--duration", "6", "--precision",
			      (char *)precision[i], "--json", "--source", "proc", NULL };
		memcpy(argv[i], a, sizeof(a));
		argvs[i] = argv[i];
	}
	ts_run_all(n, argvs, outs, rcs, 30000);
	for (int i = 0; i < n; i++) {
		cr_assert_eq(rcs[i], 0, "exit %d: %s", rcs[i], outs[i]);
		json_object *doc = json_tokener_parse(outs[i]);
		cr_assert(doc, "not JSON: %s", outs[i]);
		json_object *w = tj_worker(doc, pid[i], 0);
		l[i] = (struct listed){ tj_num(w, "samples"), tj_num(w, "idle_pct"), tj_num(w, "idle_ci95"),
					tj_num(w, "cpu_wait_pct") };
		json_object_put(doc);
		free(outs[i]);
	}
}

/* loop_truth's "self idle_pct X" line, read from out to its end: its own
 * clock of its time in its poll. */
static double own_idle(int out)
{
	char buf[512] = "";
	size_t len = 0;
	ssize_t r;
	while (len < sizeof(buf) - 1 && (r = read(out, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	double self = NAN;
	const char *l = strstr(buf, "self idle_pct ");
	cr_assert(l && sscanf(l, "self idle_pct %lf", &self) == 1, "%s", buf);
	return self;
}

static void list_of(pid_t pid, const char *precision, double *samples, double *idle, double *ci)
{
	struct listed l;
	list_at(1, &pid, &precision, &l);
	*samples = l.samples, *idle = l.idle, *ci = l.ci;
}

/* A real process parked in epoll_wait: a few samples a second say it is
 * idle as well as the interval asks; --precision 0 samples it at 100 Hz.
 * An uninstrumented loop busy a few percent of its time changes state at
 * every period: it is sampled at every tick, as before. The three lists
 * run side by side (a parked child cannot tell two monitors from one). */
Test(precision, parked_sampled_less_busy_at_every_tick, .timeout = 60)
{
	int ep = epoll_create1(0), out;
	cr_assert_geq(ep, 0);
	pid_t parked = tchild_fork(tchild_park_epoll_wait, TCHILD_FD(ep));
	cr_assert_gt(parked, 0);
	const char *args[] = { "--case", "plain", "--work", "0.3", "--seconds", "30", NULL };
	pid_t busy = tc_spawn_example("loop_truth", args, &out);
	cr_assert_gt(busy, 0);
	const pid_t pids[] = { parked, parked, busy };
	static const char *const prec[] = { "1", "0", "1" };
	struct listed l[3];
	list_at(3, pids, prec, l);
	cr_expect_eq(l[0].idle, 100, "idle %.2f", l[0].idle);
	/* 1 s at 100, then 50, 25 and 20 Hz for the rest: ~270 of ~600 ticks */
	cr_expect(l[0].samples >= 150 && l[0].samples <= 360, "%.0f samples in 6 s", l[0].samples);
	cr_expect(l[0].ci <= 1.5, "+-%.2f points", l[0].ci);
	cr_expect_eq(l[1].idle, 100, "idle %.2f at every tick", l[1].idle);
	cr_expect_geq(l[1].samples, 480, "%.0f samples in 6 s at every tick", l[1].samples);
	cr_expect_geq(l[2].samples, 480, "busy: %.0f samples in 6 s", l[2].samples);
	/* the busy loop's own clock, printed as it ends: every tick's samples
	 * read its idle within their interval and 2 points of it */
	kill(busy, SIGTERM);
	double self = own_idle(out);
	waitpid(busy, NULL, 0);
	cr_log_info("busy: idle %.2f +-%.2f (cpu wait %.2f), its own clock %.2f\n", l[2].idle, l[2].ci, l[2].wait, self);
	cr_expect(ts_idle_agrees(l[2].idle, self, l[2].wait, l[2].ci + 2),
		  "busy: idle %.2f +-%.2f (cpu wait %.2f), its own clock %.2f", l[2].idle, l[2].ci, l[2].wait, self);
	tchild_reap(parked);
	close(out);
	close(ep);
}

/* A loop parked for seconds between short bursts, thinned while parked:
 * its weighted idle agrees with its own clock. */
Test(precision, thinned_loop_agrees_with_its_clock, .timeout = 60)
{
	int out;
	const char *args[] = { "--case", "nested", "--spans", "30x1", "--idle-ms", "4000", "--seconds", "7", NULL };
	pid_t pid = tc_spawn_example("loop_truth", args, &out);
	cr_assert_gt(pid, 0);
	double n, idle, ci;
	list_of(pid, "2", &n, &idle, &ci);
	double self = own_idle(out);   /* to its end: it exits after --seconds */
	waitpid(pid, NULL, 0);
	close(out);
	/* every 4 s a burst of 30 ms: the seconds of it and after it at every
	 * tick, then 1 in 2, then what the target needs (~20 Hz) */
	cr_expect_lt(n, 0.8 * 600, "%.0f samples in 6 s: not thinned", n);
	cr_expect(fabs(idle - self) <= 1.5, "idle %.2f +-%.2f, its own clock %.2f", idle, ci, self);
}
