/* The feed: a recording read at once reports each completed second once, in order, with a model over each, and ends; a live feed's options come from the command's common options in one place. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "model/feed.h"
#include "support/children.h"
#include "support/support.h"

static char *dir;

static void setup(void) { dir = ts_tmpdir("feed"); }
static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(feed, .init = setup, .fini = teardown, .timeout = 60);

struct seen {
	struct feed *f;
	int64_t first, last;
	int n, models, workers;
};

static int on_second(void *arg, int64_t sec)
{
	struct seen *s = arg;
	if (s->n == 0)
		s->first = sec;
	else
		cr_expect_eq(sec, s->last + 1, "second %lld after %lld", (long long)sec, (long long)s->last);
	s->last = sec;
	s->n++;
	struct model m;
	if (feed_range(s->f, sec, sec, &m) == 0) {
		s->models++;
		s->workers += m.n > 0;
		model_done(&m);
	}
	return 0;
}

Test(feed, a_recording_read_at_once_reports_each_second_once)
{
	int out;
	const char *args[] = { "--idle", "0.5", "--seconds", "20", "--plain", NULL };
	pid_t pid = tc_spawn_example("duty_cycle", args, &out);
	char p[16], *rec = ts_path_in(dir, "run.rec"), *o = NULL;
	snprintf(p, sizeof(p), "%d", (int)pid);
	usleep(300 * 1000);
	cr_assert_eq(ts_loopstat(&o, 30000, "record", "-o", rec, "-p", p, "--duration", "4", "--rate", "200", NULL), 0,
		     "%s", o ? o : "");
	free(o);
	tc_kill(pid);
	close(out);

	struct feed_opts fo = { .replay = rec, .keep_seconds = 1 };
	struct feed *f;
	long line = 0;
	cr_assert_eq(feed_open(&fo, &f, &line), 0);
	cr_assert_str_eq(feed_source_name(f), "replay");
	cr_assert(feed_recorded(f));
	struct seen s = { .f = f };
	struct feed_follow ff = { .second = on_second, .arg = &s };
	long long t0 = ts_now_ms();
	cr_assert_eq(feed_follow(f, &ff), FEED_ENDED);
	cr_assert_lt(ts_now_ms() - t0, 2000, "read at once, not at the recorded pace");
	/* 4 s recorded: its complete seconds, each once, each with its worker */
	cr_expect(s.n >= 3 && s.n <= 5, "%d seconds", s.n);
	cr_expect_eq(s.models, s.n);
	cr_expect_geq(s.workers, s.n - 1, "%d of %d seconds had the worker", s.workers, s.n);
	cr_expect_eq(s.first, (int64_t)feed_start_s(f), "from the recording's first second");
	/* the kept seconds are the same ones */
	const struct tracks *tr = feed_tracks(f);
	cr_assert_eq(tr->n, 1);
	cr_expect_eq(tr->now_sec - 1, s.last);
	struct model m;
	cr_assert_eq(feed_now(f, 0, 0, &m), 0);
	cr_assert_eq(m.n, 1);
	cr_expect(m.workers[0].idle_lo <= m.workers[0].idle_pct && m.workers[0].idle_pct <= m.workers[0].idle_hi,
		  "%f in [%f, %f]", m.workers[0].idle_pct, m.workers[0].idle_lo, m.workers[0].idle_hi);
	model_done(&m);
	feed_close(f);

	/* a missing recording is fopen's error; not one is -EPROTO with its line */
	fo.replay = "/nonexistent/run.rec";
	cr_expect_eq(feed_open(&fo, &f, &line), -ENOENT);
	char *bad = ts_path_in(dir, "bad.rec");
	cr_assert_eq(ts_write_file(bad, "hello\n", 6), 0);
	fo.replay = bad;
	cr_expect_eq(feed_open(&fo, &f, &line), -EPROTO);
	free(bad);
	free(rec);
}
