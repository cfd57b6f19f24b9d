/* The export spool on its own: segments in order, cursors, seq never reused after the spool empties, a damaged tail never stops a cursor, trim by age and size counts what it drops. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export_spool.h"
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
		cr_assert_eq(export_spool_read(s, c, 64, min_ts, &buf, &len, &to, lines, expired), 0);
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
	cr_assert_eq(export_spool_cursor_store(&s, "d1", &c), 0);
	struct export_cursor back;
	cr_assert_eq(export_spool_cursor_load(&s, "d1", &back), 0);
	cr_assert(back.seq == c.seq && back.off == c.off);
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
	struct export_cursor done = c, none = { 0, 0 };
	cr_assert_eq(export_spool_cursor_store(&s, "read", &done), 0);
	cr_assert_eq(export_spool_cursor_store(&s, "unread", &none), 0);
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
