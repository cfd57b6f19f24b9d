/* The export spool on its own: segments in order, cursors, seq never reused after the spool empties, a damaged tail never stops a cursor, trim by age and size counts what it drops, the last delivery resent once (bounded, kept by trim until replaced). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_spool.h"
#include "support/support.h"

static struct export_spool open_spool(const char *dir, int64_t max_bytes, int64_t max_age)
{
	struct export_spool s;
	struct export_spool_opts o = { max_bytes, max_age, 100 };
	char err[512];
	cr_assert_eq(export_spool_open(&s, dir, &o, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(export_spool_lock_send(&s, err, sizeof(err)), 0, "%s", err);
	return s;
}

static void append(struct export_spool *s, const char *text)
{
	char err[512];
	cr_assert_eq(export_spool_append(s, text, strlen(text), err, sizeof(err)), 0, "%s", err);
}

/* Everything readable from c, as one string (caller frees). */
static char *read_all(struct export_spool *s, struct export_cursor *c, int64_t min_ts, uint64_t *lines,
                      uint64_t *expired)
{
	char *all = calloc(1, 1);
	size_t total = 0;
	for (;;) {
		char *buf;
		size_t len;
		struct export_cursor to;
		cr_assert_eq(export_spool_read(s, c, NULL, 64, min_ts, &buf, &len, &to, lines, expired), 0);
		int moved = to.seq != c->seq || to.off != c->off;
		*c = to;
		all = realloc(all, total + len + 1);
		memcpy(all + total, buf, len);
		total += len;
		all[total] = '\0';
		free(buf);
		if (!len && !moved)
			return all;
	}
}

Test(export_spool, order_cursor_and_seq_after_empty, .timeout = 10)
{
	char *dir = ts_tmpdir("expspool");
	struct export_spool s = open_spool(dir, 1 << 20, 3600);
	append(&s, "a 1 100\nb 2 101\n");
	append(&s, "c 3 102\n");
	struct export_cursor c = { 0, 0 };
	uint64_t lines = 0, expired = 0;
	char *all = read_all(&s, &c, 0, &lines, &expired);
	cr_assert_str_eq(all, "a 1 100\nb 2 101\nc 3 102\n");
	free(all);
	cr_assert_eq(lines, 3);
	struct export_mark m = { c, c }, got;
	cr_assert_eq(export_spool_mark_store(&s, "d1", &m), 0);
	cr_assert_eq(export_spool_mark_load(&s, "d1", &got), 0);
	struct export_cursor back = got.next;
	cr_assert(back.seq == c.seq && back.off == c.off);
	cr_assert(got.resend.seq == c.seq && got.resend.off == c.off);
	/* every cursor passed: trim empties the spool */
	const char *keys[] = { "d1" };
	uint64_t exp[1] = { 0 };
	cr_assert_eq(export_spool_trim(&s, keys, 1, 200, exp), 0);
	cr_assert_eq(export_spool_bytes(&s), 0);
	cr_assert_eq(exp[0], 0);
	/* a new segment after that must not hide behind the cursor */
	append(&s, "d 4 103\n");
	lines = 0;
	all = read_all(&s, &back, 0, &lines, &expired);
	cr_assert_str_eq(all, "d 4 103\n");
	free(all);
	uint64_t pending;
	int64_t oldest;
	struct export_cursor start = { 0, 0 };
	cr_assert_eq(export_spool_pending(&s, &start, &pending, &oldest), 0);
	cr_assert_eq(pending, 1);
	cr_assert_eq(oldest, 103);
	export_spool_close(&s);
	ts_rmtree_free(dir);
}

Test(export_spool, damaged_tail_and_trim_counts, .timeout = 10)
{
	char *dir = ts_tmpdir("expspool2"), path[400];
	struct export_spool s = open_spool(dir, 4096, 50);
	/* a segment cut short by a disk error: its last line has no newline */
	snprintf(path, sizeof(path), "%s/seg.0000000000000001.100", dir);
	cr_assert_eq(ts_write_file(path, "a 1 100\nb 2 1", 13), 0);
	append(&s, "c 3 150\n");
	struct export_cursor c = { 0, 0 };
	uint64_t lines = 0, expired = 0;
	char *all = read_all(&s, &c, 0, &lines, &expired);
	cr_assert_str_eq(all, "a 1 100\nc 3 150\n");
	cr_assert_eq(expired, 1, "the broken tail is counted");
	free(all);
	/* by age: the segment whose newest line is older than now - 50 goes, counted for the
	 * destination that had not read it, not for the one that had */
	struct export_mark done = { c, c }, none = { { 0, 0 }, { 0, 0 } };
	cr_assert_eq(export_spool_mark_store(&s, "read", &done), 0);
	cr_assert_eq(export_spool_mark_store(&s, "unread", &none), 0);
	const char *keys[] = { "read", "unread" };
	uint64_t exp[2] = { 0, 0 };
	cr_assert_eq(export_spool_trim(&s, keys, 2, 180, exp), 0);
	cr_assert_eq(exp[0], 0);
	cr_assert_eq(exp[1], 1, "one complete line of the old segment expired for 'unread'");
	/* by size: 4 KiB bound, the newest segment always stays */
	char big[3000];
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 3; i++) {
		snprintf(big + 2000, 40, " %d 170\n", i);
		append(&s, big);
	}
	exp[0] = exp[1] = 0;
	cr_assert_eq(export_spool_trim(&s, keys, 2, 180, exp), 0);
	cr_assert_leq(export_spool_bytes(&s), 4096);
	/* the 8-byte segment of "c" and the first big one went: "read" had seen "c" */
	cr_assert_eq(exp[0], 1);
	cr_assert_eq(exp[1], 2);
	export_spool_close(&s);
	ts_rmtree_free(dir);
}

/* One run's delivery to "d": every batch until the spool is drained, each
 * confirmed. Returns what was sent, as one string (caller frees). */
static char *run_delivery(struct export_spool *s, size_t max, int64_t min_ts, uint64_t *lines, uint64_t *resent)
{
	struct export_delivery d;
	cr_assert_eq(export_spool_delivery_begin(s, "d", &d), 0);
	char *all = calloc(1, 1);
	size_t total = 0;
	*lines = *resent = 0;
	for (;;) {
		struct export_batch b;
		int brc = export_spool_batch(s, &d, max, min_ts, &b);
		cr_assert_eq(brc, 0, "batch: %d, total %zu", brc, total);
		all = realloc(all, total + b.len + 1);
		memcpy(all + total, b.buf, b.len);
		total += b.len;
		all[total] = '\0';
		cr_assert_eq(export_spool_ack(s, &d, &b), 0);
		*lines += b.lines;
		*resent += b.resent;
		int done = !b.len && b.from.seq == b.to.seq && b.from.off == b.to.off;
		export_spool_batch_done(&b);
		if (done)
			return all;
	}
}

static int64_t trim_d(struct export_spool *s, int64_t now)
{
	const char *keys[] = { "d" };
	uint64_t exp[1] = { 0 };
	cr_assert_eq(export_spool_trim(s, keys, 1, now, exp), 0);
	cr_assert_eq(exp[0], 0, "nothing in the window counts as expired");
	return export_spool_bytes(s);
}

Test(export_spool, last_delivery_resent_once_and_kept_until_replaced, .timeout = 20)
{
	char *dir = ts_tmpdir("expresend"), path[400];
	struct export_spool s = open_spool(dir, 64 << 20, 3600);
	uint64_t lines, resent;
	/* run 1: nothing delivered before, nothing resent */
	append(&s, "a 1 100\n");
	append(&s, "a2 1 100\n");
	char *got = run_delivery(&s, 1 << 20, 0, &lines, &resent);
	cr_assert_str_eq(got, "a 1 100\na2 1 100\n");
	cr_assert(lines == 2 && resent == 0);
	free(got);
	cr_assert_eq(trim_d(&s, 200), 17, "the window outlives its delivery");
	/* run 2: run 1's delivery first, then its own; once */
	append(&s, "b 2 101\n");
	got = run_delivery(&s, 1 << 20, 0, &lines, &resent);
	cr_assert_str_eq(got, "a 1 100\na2 1 100\nb 2 101\n");
	cr_assert(lines == 1 && resent == 2);
	free(got);
	cr_assert_eq(trim_d(&s, 200), 8, "run 1's segments go once run 2's delivery replaced them");
	/* run 3 fails (not confirmed): run 4 still resends run 2's, never run 1's */
	append(&s, "c 3 102\n");
	struct export_delivery d;
	struct export_batch b;
	cr_assert_eq(export_spool_delivery_begin(&s, "d", &d), 0);
	cr_assert_eq(export_spool_batch(&s, &d, 1 << 20, 0, &b), 0);
	cr_assert_str_eq(b.buf, "b 2 101\nc 3 102\n");
	cr_assert(b.resent == 1 && b.lines == 1 && b.new_len == 8);
	export_spool_batch_done(&b);
	got = run_delivery(&s, 1 << 20, 0, &lines, &resent);
	cr_assert_str_eq(got, "b 2 101\nc 3 102\n");
	free(got);
	/* a resent line below min_ts is left out, not counted expired */
	append(&s, "e 5 500\n");
	got = run_delivery(&s, 1 << 20, 200, &lines, &resent);
	cr_assert_str_eq(got, "e 5 500\n");
	cr_assert(lines == 1 && resent == 0);
	free(got);
	cr_assert_eq(trim_d(&s, 200), 8);

	/* bounded: a run that delivers more than EXPORT_SPOOL_RESEND_MAX leaves its last batch alone */
	size_t cap = EXPORT_SPOOL_RESEND_MAX * 3 / 2, len = 0;
	char *big = malloc(cap + 64);
	int n = 0;
	while (len < cap)
		len += (size_t)sprintf(big + len, "big.%07d 1 600\n", n++);
	char err[512];
	cr_assert_eq(export_spool_append(&s, big, len, err, sizeof(err)), 0, "%s", err);
	free(big);
	got = run_delivery(&s, EXPORT_SPOOL_RESEND_MAX, 0, &lines, &resent);
	cr_assert_eq(lines, (uint64_t)n);
	cr_assert_eq(resent, 1, "e, the delivery before");
	size_t ll = strlen("big.0000000 1 600\n"), first_batch = EXPORT_SPOOL_RESEND_MAX / ll * ll;  /* whole lines */
	free(got);
	append(&s, "f 6 601\n");
	got = run_delivery(&s, 1 << 20, 0, &lines, &resent);
	cr_assert_eq(resent, (uint64_t)n - first_batch / ll, "the last batch only: %lu", (unsigned long)resent);
	cr_assert_eq(strncmp(got, "big.", 4), 0);
	cr_assert_eq(strlen(got), len - first_batch + 8);
	free(got);

	/* a cursor file of the older form resends nothing */
	snprintf(path, sizeof(path), "%s/cursor.old", dir);
	cr_assert_eq(ts_write_file(path, "3 8\n", 4), 0);
	struct export_mark m;
	cr_assert_eq(export_spool_mark_load(&s, "old", &m), 0);
	cr_assert(m.next.seq == 3 && m.next.off == 8 && m.resend.seq == 3 && m.resend.off == 8);
	export_spool_close(&s);
	ts_rmtree_free(dir);
}
