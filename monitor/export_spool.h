/*
 * export_spool.h — the on-disk queue between sampling and delivery.
 *
 * DIR/seg.<seq>.<newest ts>  immutable segments of plaintext lines, written
 *                            to a temp file, fsync'd, then renamed: a reader
 *                            never sees half a segment; seq grows by one.
 * DIR/cursor.<dest key>      "seq offset": where that destination resumes.
 * DIR/lock.append            flock held while a segment is added (short).
 * DIR/lock.send              flock held by the one run that delivers, trims
 *                            and moves cursors; it also holds that run's pid.
 * Lines keep their original timestamps, so a late delivery fills the right
 * whisper slot, and resending one after a doubt overwrites the same slot.
 */
#ifndef LOOPSTAT_EXPORT_SPOOL_H
#define LOOPSTAT_EXPORT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct export_spool_opts {
	int64_t max_bytes;   /* total size of the segments */
	int64_t max_age_s;   /* lines older than this expire (whisper would reject them) */
	int lock_wait_ms;    /* how long to wait for lock.send held by another run */
};

struct export_spool {
	char dir[1024];
	int dirfd, append_fd, send_fd;
	int have_send;               /* this run holds lock.send */
	struct export_spool_opts o;
};

struct export_cursor {
	uint64_t seq;                /* segment; one that is gone means the next */
	uint64_t off;                /* byte offset in it, always at a line start */
};

/* Creates DIR (0700, parents too) and its lock files. Returns 0, or a
 * negative errno with "spool DIR: call: reason" in err (-EACCES, -EROFS,
 * -ENOTDIR, ...). */
int export_spool_open(struct export_spool *s, const char *dir, const struct export_spool_opts *o,
                      char *err, size_t errlen);
void export_spool_close(struct export_spool *s);

/* Adds buf (whole lines) as one new segment, durably (fsync of file and
 * dir). Needs only lock.append. Returns 0 or -errno with a reason. */
int export_spool_append(struct export_spool *s, const char *buf, size_t len, char *err, size_t errlen);

/* Takes lock.send, waiting at most o.lock_wait_ms. Returns 0, or
 * -EWOULDBLOCK with "another run (pid N) is delivering from DIR" in err. */
int export_spool_lock_send(struct export_spool *s, char *err, size_t errlen);

/* Needs lock.send. Deletes segments every cursor of keys[] has passed, then
 * the ones whose newest line is older than max_age, then the oldest ones
 * while the spool is larger than max_bytes (the newest one always stays).
 * Lines that a destination had not received yet are added to expired[i]. */
int export_spool_trim(struct export_spool *s, const char *const keys[], int nkeys, int64_t now,
                      uint64_t expired[]);

/* A missing cursor file is {0, 0}: the start of the spool. */
int export_spool_cursor_load(struct export_spool *s, const char *key, struct export_cursor *c);
/* Atomically (temp file, fsync, rename). Needs lock.send. */
int export_spool_cursor_store(struct export_spool *s, const char *key, const struct export_cursor *c);

/* Reads at most max bytes of whole lines from *from: lines whose timestamp
 * is below min_ts are skipped and counted in *expired, the others are
 * copied to *buf (malloc'd, caller frees; *len 0 at the end of the spool)
 * and counted in *lines. *to is the position after the last line consumed. */
int export_spool_read(struct export_spool *s, const struct export_cursor *from, size_t max, int64_t min_ts,
                      char **buf, size_t *len, struct export_cursor *to, uint64_t *lines, uint64_t *expired);

/* Lines not yet delivered after c and the timestamp of the oldest (0 if none). */
int export_spool_pending(struct export_spool *s, const struct export_cursor *c, uint64_t *lines,
                         int64_t *oldest_ts);
/* Total bytes of the segments. */
int64_t export_spool_bytes(struct export_spool *s);

#endif /* LOOPSTAT_EXPORT_SPOOL_H */
