/* top --replay's source: a recording fed into series at its recorded times gives the model the live run would have (shares, blockers with targets, keys with fibers), advancing with the clock; bad files are refused. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "model/feed.h"
#include "model/model_build.h"
#include "collect/recording.h"
#include "collect/replay.h"
#include "support/probe_child.h"

/* 3 s at 1 kHz of one instrumented worker: per 10 ms, 5 blocked in read on a
 * pipe (fiber "reader"), 3 running (fiber "parser"), 2 in its poll. */
static FILE *recording(void)
{
	FILE *f = tmpfile();
	cr_assert(f);
	struct rec_meta meta = { .rate_hz = 1000, .title = "pid 42 (w)" };
	struct rec_writer *w = rec_writer_new(f, &meta);
	cr_assert(w);
	const char *frames[] = { "libc.so.6`read", "w`wait_for_pipe" };
	for (int i = 0; i < 3000; i++) {
		int k = i % 10;
		struct rec_event ev = { .t_ns = 1000000000ull + (uint64_t)i * 1000000, .pid = 42, .tid = 43,
					    .instrumented = 1, .thread = "42/43 w", .nr = -1, .fd = -1 };
		if (k < 5) {
			ev.cls = PROBE_BLOCKED, ev.nr = SYS_read, ev.fd = 6, ev.syscall = "read";
			ev.target = "fd 6 pipe:[7]", ev.fiber = "reader", ev.frames = frames, ev.nframes = 2;
			ev.sp = 0x7000, ev.pc = 0x1234;
		} else if (k < 8) {
			ev.cls = PROBE_RUNNING, ev.fiber = "parser";
		} else {
			ev.cls = PROBE_POLL, ev.nr = SYS_epoll_wait, ev.fd = 3, ev.target = "[idle] epoll_wait fd 3";
			ev.sp = 0x7100, ev.pc = 0x2000;
		}
		cr_assert_eq(rec_write(w, &ev), 0);
	}
	cr_assert_eq(rec_writer_end(w, 3.0), 0);
	rewind(f);
	return f;
}

static void model_at(struct replay *r, uint64_t t_ns, double window_s, struct model *m)
{
	struct source src;
	replay_source(r, &src);
	replay_advance_to(r, t_ns);
	cr_assert_eq(model_of_source(&src, window_s, m), 0);
	cr_assert_eq(m->n, 1);
}

Test(replay, recorded_samples_make_the_live_model, .timeout = PROBE_TEST_TIMEOUT)
{
	FILE *f = recording();
	struct replay *r = NULL;
	long line;
	cr_assert_eq(replay_open(f, &r, &line), 0);
	fclose(f);
	cr_assert_eq(replay_samples(r), 3000);
	cr_assert_float_eq(replay_rate(r), 1000, 1e-9);

	struct model m;
	model_at(r, 2000000000ull, 0, &m);   /* half way: the first 1000 samples */
	struct worker_view *w = &m.workers[0];
	cr_assert_eq(w->samples, 1001, "samples up to t: %llu", (unsigned long long)w->samples);
	model_done(&m);

	model_at(r, replay_end_ns(r), 0, &m);
	w = &m.workers[0];
	cr_assert_eq(w->pid, 42);
	cr_assert_eq(w->tid, 43);
	cr_assert_str_eq(w->name, "w");
	cr_assert(w->instrumented);
	cr_assert_eq(w->samples, 3000);
	cr_assert_float_eq(w->idle_pct, 20.0, 0.01);
	cr_assert_float_eq(w->blocked_pct, 50.0, 0.01);
	cr_assert_float_eq(w->running_pct, 30.0, 0.01);
	cr_assert_geq(w->nblocked_top, 1);
	cr_assert_str_eq(w->blocked_top[0].syscall, "read");
	cr_assert_eq(w->blocked_top[0].fd, 6);
	cr_assert_str_eq(w->blocked_top[0].target, "pipe:[7]", "the recorded target, not a lookup here");
	int reader = 0, parser = 0;
	for (int i = 0; i < w->nkeys; i++) {
		if (strcmp(w->keys[i].fiber, "reader") == 0 && strcmp(w->keys[i].cls, "blocked") == 0 &&
		    w->keys[i].pc == 0x1234)
			reader = w->keys[i].pct > 49.9 && w->keys[i].pct < 50.1;
		if (strcmp(w->keys[i].fiber, "parser") == 0 && strcmp(w->keys[i].cls, "running") == 0)
			parser = w->keys[i].pct > 29.9 && w->keys[i].pct < 30.1;
	}
	cr_assert(reader && parser, "keys carry the recorded fibers and call sites");
	model_done(&m);
	replay_delete(r);
}

Test(replay, a_window_moves_with_the_replay_clock, .timeout = PROBE_TEST_TIMEOUT)
{
	FILE *f = recording();
	struct replay *r = NULL;
	long line;
	cr_assert_eq(replay_open(f, &r, &line), 0);
	fclose(f);
	struct model m;
	model_at(r, replay_end_ns(r), 1.0, &m);   /* the last second only */
	cr_assert_lt(m.workers[0].samples, 1500, "a 1 s window holds about 1000 samples, not the run");
	cr_assert_gt(m.workers[0].samples, 500);
	model_done(&m);
	replay_delete(r);
}

Test(replay, bad_recordings_are_refused, .timeout = PROBE_TEST_TIMEOUT)
{
	static const char *const bad[] = {
		"",
		"loopstat-record 2\n",
		"loopstat-record 1\ne 1 2 3 0 1 -1 -1 0 0 0 0 0 9 0 0 0 0\n",        /* string 9 never defined */
		"loopstat-record 1\ns 1 t\ne 1 2 3 0 7 -1 -1 0 0 0 0 0 1 0 0 0 0\n",  /* class 7 */
		"loopstat-record 1\ns 1 t\ne 1 2 3 0 1 -1\n",                      /* cut short */
		"loopstat-record 1\ns 2 t\n",                                        /* ids out of order */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		FILE *f = fmemopen((void *)bad[i], strlen(bad[i]) + (bad[i][0] ? 0 : 1), "r");
		cr_assert(f);
		struct replay *r = NULL;
		long line;
		/* the empty case is one NUL byte: its own error (a NUL in a line) */
		int want = bad[i][0] ? -EPROTO : -EILSEQ;
		cr_assert_eq(replay_open(f, &r, &line), want, "case %zu accepted", i);
		cr_assert_null(r);
		fclose(f);
	}
	/* an unknown record type is skipped: a newer minor's addition */
	const char ok[] = "loopstat-record 1\nx future\ns 1 42/43 w\ne 5 42 43 0 2 -1 -1 0 0 0 0 0 1 0 0 0 0\n";
	FILE *f = fmemopen((void *)ok, sizeof(ok) - 1, "r");
	struct replay *r = NULL;
	long line;
	cr_assert_eq(replay_open(f, &r, &line), 0);
	cr_assert_eq(replay_samples(r), 1);
	replay_delete(r);
	fclose(f);
}
