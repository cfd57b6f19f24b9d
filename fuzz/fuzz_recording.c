/* libFuzzer: the recording reader (collect/recording.c) and its
 * consumers, report's accumulator, tree and stalls by stack (profile/),
 * the flight recorder's ring and its writing out (flight_ring.c: every
 * event and limit reading through a small ring, the ring written as a
 * recording with the file's triggers, and that read back), top --replay's
 * series (collect/replay.c) and diff's readers (monitor/diff/: the
 * differential profile of the file against itself, its metrics through
 * the feed, and the same bytes as a --json document): a recording is
 * anyone's file. */
#include "fuzz.h"
#include <errno.h>
#include <math.h>
#include "collect/recording.h"
#include "collect/replay.h"
#include "profile/flight_ring.h"
#include "profile/profile_acc.h"
#include "profile/profile_out.h"
#include "diff/diff.h"
#include "diff/diff_profile.h"

static int add(void *arg, const struct rec_event *ev)
{
	return profile_acc_add(arg, ev);
}

static int ring_add(void *arg, const struct rec_event *ev)
{
	flight_ring_add(arg, ev, 1 + (uint32_t)(ev->t_ns % 3));
	return 0;
}

static int count(void *arg, const struct rec_event *ev)
{
	(void)ev;
	++*(long *)arg;
	return 0;
}

/* The flight recorder: every event into a ring of the smallest bound (a
 * span of 1 s: old ones leave, tables rebuild), written out with the
 * file's triggers, and the result read back whole. */
static void ring_round_trip(const uint8_t *data, size_t size)
{
	struct flight_ring *ring = flight_ring_new(1000000000ull, 3 * FLIGHT_RING_TABLES_MIN);
	FILE *f = ring ? fmemopen((void *)data, size, "r") : NULL;
	struct rec_meta meta;
	long line;
	if (f && rec_read(f, &meta, ring_add, ring, &line) == 0) {
		char *buf = NULL;
		size_t len = 0;
		FILE *out = open_memstream(&buf, &len);
		struct rec_writer *w = out ? rec_writer_new(out, &meta) : NULL;
		if (w) {
			uint64_t seq = 0, lost = 0, oldest, newest;
			flight_ring_times(ring, &oldest, &newest);
			for (unsigned i = 0; i < meta.ntriggers; i++)
				rec_write_trigger(w, &meta.triggers[i]);
			/* the file's limit tallies as readings, through the ring and out again */
			for (unsigned i = 0; i < meta.nlimits; i++) {
				const struct rec_limit_tally *k = &meta.limits[i];
				struct rec_limit l = { .t_ns = k->last_ns, .pid = k->pid, .tid = k->tid,
						       .reading = k->nread ? k->reading_max : NAN };
				snprintf(l.limit, sizeof(l.limit), "%s", k->limit);
				flight_ring_add_limit(ring, &l);
			}
			flight_ring_write(ring, w, &seq, oldest, &lost);
			rec_writer_end(w, 1);
		}
		if (out)
			fclose(out);
		/* what the ring wrote is a recording: it reads back */
		FILE *back = buf ? fmemopen(buf, len, "r") : NULL;
		struct rec_meta m2;
		long n = 0;
		if (back) {
			int err = rec_read(back, &m2, count, &n, &line);
			if (err != 0 && err != -ENOMEM && err != -E2BIG)
				abort();
			fclose(back);
		}
		free(buf);
	}
	if (f)
		fclose(f);
	flight_ring_delete(ring);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* report: every event into the accumulator, the text, svg, pprof and json written */
	FILE *f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	struct profile_acc *acc = profile_acc_new(PROFILE_ACC_AUTO_FIBER);
	struct rec_meta meta;
	long line;
	int err = acc ? rec_read(f, &meta, add, acc, &line) : -1;
	fclose(f);
	struct profile_tree *t = err == 0 ? profile_acc_finish(acc) : NULL;
	if (t) {
		FILE *null = fopen("/dev/null", "w");
		struct profile_meta pm = { .title = meta.title, .rate_hz = meta.rate_hz, .duration_s = meta.duration_s,
					   .start_unix = meta.start_unix };
		profile_write(null, PROFILE_FMT_TEXT, t, &pm, NULL);
		profile_write(null, PROFILE_FMT_SVG, t, &pm, NULL);
		profile_write(null, PROFILE_FMT_PPROF, t, &pm, NULL);
		profile_write(null, PROFILE_FMT_JSON, t, &pm, NULL);   /* after the merge: thread nodes' services */
		profile_acc_write_stalls(acc, null);                  /* stalls by stack */
		fclose(null);
	}
	profile_acc_delete(acc);

	/* the ring only for a file report took whole: one the reader refuses
	 * fails the ring's read at the same line, and each ring costs ASan
	 * ~3 MB of fresh mappings (4x the executions a second without it) */
	if (err == 0)
		ring_round_trip(data, size);

	/* top --replay: the whole recording fed into the series, a snapshot taken */
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	struct replay *r = NULL;
	if (replay_open(f, &r, &line) == 0) {
		replay_advance_to(r, replay_end_ns(r));
		struct source src;
		replay_source(r, &src);
		struct snapshot snap = { 0 };
		if (src.ops->snapshot(src.impl, 10, 1, &snap) == 0)
			snapshot_done(&snap);
		replay_delete(r);
	}
	fclose(f);

	/* diff: the file against itself, both readers, every output */
	char path[128];
	snprintf(path, sizeof(path), "%s/in", fuzz_dir());
	fuzz_write(path, data, size);
	FILE *null = fopen("/dev/null", "w");
	struct diff_profile d = { 0 };
	if (null && diff_profile_load(&d, path, path) < 0) {
		diff_profile_write(null, "text", &d, "t");
		diff_profile_write(null, "folded", &d, "t");
		diff_profile_write(null, "svg", &d, "t");
	}
	diff_profile_done(&d);
	struct diff_run a;
	if (null && diff_run_load(&a, path) < 0) {
		struct diff_result res;
		struct check_set set;
		check_set_init(&set);
		if (diff_compare(&a, &a, &set, CHECK_RUN_SD_PTS, &res) == 0) {
			diff_write_text(null, &a, &a, &res, &set);
			diff_result_done(&res);
		}
		check_set_done(&set);
		diff_run_done(&a);
	}
	if (null)
		fclose(null);
	return 0;
}
