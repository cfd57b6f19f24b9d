/* The flight recorder's ring (monitor/profile/flight_ring.c) alone: events
 * whose strings fill its tables many times over come out with their own
 * strings, and a fresh ring's tables cost no resident memory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collect/recording.h"
#include "profile/flight_ring.h"
#include "support/proc_rss.h"

TestSuite(flight_ring, .timeout = 30);

#define FRAMES 16   /* at most: event i has 8 + i % 9 */
#define EVENTS 10000   /* the tables fill every ~110 events: ~90 rebuilds */

/* Event i's frame f: long and its own. */
static void frame_name(char *buf, size_t size, long i, int f)
{
	snprintf(buf, size, "frame_%ld_%d_%0200d", i, f, f);
}

struct seen {
	long n, wrong, full;
	long last_tid;
};

static int check_event(void *arg, const struct rec_event *ev)
{
	struct seen *s = arg;
	char want[256], thread[64];
	long i = ev->tid;
	s->last_tid = i;
	s->n++;
	snprintf(thread, sizeof(thread), "%d/%ld w%ld", ev->pid, i, i % 7);
	if (strcmp(ev->thread, "[ring tables full]") == 0) {
		s->full++;
		return 0;
	}
	int bad = strcmp(ev->thread, thread) != 0 || ev->nframes != 8 + i % 9;
	for (int f = 0; f < ev->nframes && !bad; f++) {
		frame_name(want, sizeof(want), i, f);
		bad = strcmp(ev->frames[f], want) != 0;
	}
	s->wrong += bad;
	return 0;
}

/* The ring written out as a recording (and deleted), read back through
 * fn: the events written. */
static long ring_read_back(struct flight_ring *r, int (*fn)(void *arg, const struct rec_event *ev), void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	struct rec_meta meta = { .rate_hz = 100 };
	struct rec_writer *w = rec_writer_new(out, &meta);
	uint64_t seq = 0, lost = 0;
	long n = flight_ring_write(r, w, &seq, 0, &lost);
	cr_assert_eq(rec_writer_end(w, 1), 0);
	fclose(out);
	flight_ring_delete(r);
	FILE *in = fmemopen(buf, len, "r");
	long line;
	cr_assert_eq(rec_read(in, &meta, fn, arg, &line), 0);
	fclose(in);
	free(buf);
	return n;
}

Test(flight_ring, strings_survive_many_rebuilds)
{
	/* the smallest ring: 1 MB of tables a set; a span of 50 events */
	struct flight_ring *r = flight_ring_new(50 * 1000000ull, 3 * FLIGHT_RING_TABLES_MIN);
	cr_assert_not_null(r);
	static char names[FRAMES][256];
	const char *frames[FRAMES];
	for (long i = 1; i <= EVENTS; i++) {
		char thread[64];
		snprintf(thread, sizeof(thread), "100/%ld w%ld", i, i % 7);
		for (int f = 0; f < FRAMES; f++) {
			frame_name(names[f], sizeof(names[f]), i, f);
			frames[f] = names[f];
		}
		struct rec_event ev = { .t_ns = (uint64_t)i * 1000000, .pid = 100, .tid = (pid_t)i,
					.cls = PROBE_RUNNING, .nr = -1, .fd = -1, .thread = thread,
					.frames = frames, .nframes = 8 + (int)(i % 9) };
		flight_ring_add(r, &ev, 1);
	}
	struct seen s = { 0 };
	cr_assert_geq(ring_read_back(r, check_event, &s), 40);
	/* the newest 51 events (a span of 50 ms behind the last), each with its own strings */
	cr_expect_eq(s.last_tid, EVENTS);
	cr_expect_eq(s.n, 51, "%ld events in the ring", s.n);
	cr_expect_eq(s.full, 0, "%ld events lost their strings", s.full);
	cr_expect_eq(s.wrong, 0, "%ld of %ld events read another event's strings", s.wrong, s.n);
}

struct order {
	pid_t next;
	long wrong;
};

static int in_order(void *arg, const struct rec_event *ev)
{
	struct order *o = arg;
	o->wrong += o->next && ev->tid != o->next;
	o->next = ev->tid + 1;
	return 0;
}

/* A ring whose span holds ~1,000 events, fed 500,000: what is resident
 * follows what it holds, not the records' array its writes went round. */
Test(flight_ring, resident_memory_follows_the_span)
{
	long before = proc_rss_kb(getpid());
	struct flight_ring *r = flight_ring_new(10 * 1000000ull, 64u << 20);
	cr_assert_not_null(r);
	const char *frames[] = { "main", "loop" };
	for (long i = 0; i < 500000; i++) {
		struct rec_event ev = { .t_ns = (uint64_t)i * 10000, .pid = 100, .tid = 100, .cls = PROBE_POLL,
					.nr = -1, .fd = -1, .thread = "100/100 w", .frames = frames, .nframes = 2 };
		flight_ring_add(r, &ev, 1);
	}
	long grown = proc_rss_kb(getpid()) - before;
	uint64_t early = flight_ring_evicted_early(r);
	flight_ring_delete(r);
	cr_expect_eq(early, 0);
	/* 48 MB of records went through a 10-ms span of 1,001 */
	cr_expect_lt(grown, 2048, "a ring holding 1,001 events made %ld kB resident", grown);
}

Test(flight_ring, a_full_ring_grows_in_order)
{
	/* the smallest ring (~10,000 records): 10,000 events a ns apart in a
	 * span of 3,000 ns (old ones leave: the oldest is far from the array's
	 * start), then 9,000 at one time, so it grows from where it is, and
	 * then turns over less than once */
	struct flight_ring *r = flight_ring_new(3000, 3 * FLIGHT_RING_TABLES_MIN);
	cr_assert_not_null(r);
	long total = 19000;
	for (long i = 1; i <= total; i++) {
		char thread[32];
		snprintf(thread, sizeof(thread), "100/%ld w", i);
		struct rec_event ev = { .t_ns = (uint64_t)(i < 10000 ? i : 10000), .pid = 100, .tid = (pid_t)i,
					.cls = PROBE_POLL, .nr = -1, .fd = -1, .thread = thread };
		flight_ring_add(r, &ev, 1);
	}
	uint64_t early = flight_ring_evicted_early(r);
	struct order o = { .next = 0 };
	long n = ring_read_back(r, in_order, &o);
	/* the newest ones, each once, in the order added: the ring grew
	 * past its start to its whole room */
	cr_expect_gt(early, 0);
	cr_expect_gt(n, 8192, "%ld written", n);
	cr_expect_eq(o.wrong, 0, "%ld events out of order", o.wrong);
	cr_expect_eq(o.next, total + 1);
}

Test(flight_ring, a_fresh_ring_is_not_resident)
{
	/* 64 MB: 8 MB of tables a set, the records' array the rest */
	long before = proc_rss_kb(getpid());
	struct flight_ring *r = flight_ring_new(10 * 1000000000ull, 64u << 20);
	cr_assert_not_null(r);
	const char *frames[] = { "main", "loop" };
	struct rec_event ev = { .t_ns = 1, .pid = 100, .tid = 100, .cls = PROBE_POLL, .nr = -1, .fd = -1,
				.thread = "100/100 w", .frames = frames, .nframes = 2 };
	flight_ring_add(r, &ev, 1);
	long grown = proc_rss_kb(getpid()) - before;
	flight_ring_delete(r);
	/* the index pages the first strings land in, not 2 MB of indexes a set */
	cr_expect_lt(grown, 1024, "a fresh 64-MB ring with one event made %ld kB resident", grown);
}
