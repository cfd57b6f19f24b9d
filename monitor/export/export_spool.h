/*
 * export_spool.h — the on-disk queue between sampling and delivery.
 *
 * DIR/seg.<seq>.<newest ts>  immutable segments of plaintext lines, written
 *                            to a temp file, fsync'd, then renamed: a reader
 *                            never sees half a segment; seq grows by one.
 * DIR/cursor.<dest key>      "seq off rseq roff": where that destination
 *                            resumes, and where the last delivery it
 *                            acknowledged began (the resend window).
 * DIR/lock.append            flock held while a segment is added (short).
 * DIR/lock.send              flock held by the one run that delivers, trims
 *                            and moves cursors; it also holds that run's pid.
 * Lines keep their original timestamps, so a late delivery fills the right
 * whisper slot, and resending one after a doubt overwrites the same slot.
 *
 * Resend: carbon closing the connection only proves it *read* the lines;
 * carbon-cache loses what it has not yet written to whisper when it is
 * stopped. So each destination keeps the range of its last acknowledged
 * delivery (one run's new lines, at most EXPORT_SPOOL_RESEND_MAX bytes,
 * else that run's last batch) and the next run sends it again, once, at
 * the head of its first batch. Trim keeps that range until a later
 * delivery replaces it. Nothing older is ever resent. With no_resend the
 * window is always empty: for destinations that aggregate (carbon-aggregator,
 * carbon-c-relay's aggregate), where a line sent twice is counted twice.
 */
#ifndef LOOPSTAT_EXPORT_SPOOL_H
#define LOOPSTAT_EXPORT_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct export_spool_opts {
	int64_t max_bytes;   /* total size of the segments */
	int64_t max_age_s;   /* lines older than this expire (whisper would reject them) */
	int lock_wait_ms;    /* how long to wait for lock.send held by another run */
	int no_resend;       /* keep no resend window (an aggregating destination would count it twice) */
};

struct export_spool {
	char dir[1024];
	int dirfd, append_fd, send_fd;
	int have_send;               /* this run holds lock.send */
	struct export_spool_opts o;
	long long deadline_ms;       /* mono_ms() past which reads give up (-ETIMEDOUT); 0: none */
	char note[512];              /* what open did that the run should say: a stale lock taken over */
};

struct export_cursor {
	uint64_t seq;                /* segment; one that is gone means the next */
	uint64_t off;                /* byte offset in it, always at a line start */
};

/* A destination's state, DIR/cursor.<key>. resend <= next. */
struct export_mark {
	struct export_cursor next;   /* first line not yet delivered */
	struct export_cursor resend; /* [resend, next): the last delivery, sent again once; == next: none */
};

/* The resend window's bound: the size of one batch. */
#define EXPORT_SPOOL_RESEND_MAX (1u << 20)

/* One destination's delivery during one run (export_spool_batch/_ack). */
struct export_delivery {
	const char *key;             /* borrowed */
	struct export_mark mark;     /* as last stored */
	struct export_cursor start;  /* mark.next when the run began: its own lines start there */
	uint64_t span;               /* bytes of new lines in the resend window so far this run */
	int resent;                  /* this run's first batch (with the window) was acknowledged */
};

/* A batch: the resend window (first batch of a run only), then new lines. */
struct export_batch {
	char *buf;                   /* malloc'd; export_spool_batch_done frees it */
	size_t len;                  /* bytes to send; 0: nothing */
	size_t new_len;              /* of them, the new lines (after the window) */
	struct export_cursor from, to; /* the new lines' range in the spool */
	uint64_t lines;              /* new lines */
	uint64_t resent;             /* window lines (sent before, sent again) */
	uint64_t expired;            /* new lines skipped: older than min_ts */
};

/* Opens DIR, creating it (0700, parents too), and its lock files. Every
 * file is opened relative to DIR, never through a link nor blocking, and
 * must be a regular file of ours (util/safefile.h). DIR itself and the
 * directories above it must not let another user replace what is in them.
 * Another user's lock file that no live process holds is taken over (said
 * in s->note). Returns 0, or a negative errno with "spool DIR: reason" in
 * err: -EPERM for a directory or file refused (the reason says how to fix
 * it; also for a lock another user's live process holds), -EACCES, -EROFS,
 * -ENOTDIR, ... */
int export_spool_open(struct export_spool *s, const char *dir, const struct export_spool_opts *o,
                      char *err, size_t errlen);
void export_spool_close(struct export_spool *s);

/* Adds buf (whole lines) as one new segment, durably (fsync of file and
 * dir). Needs only lock.append. Returns 0 or -errno with a reason. */
int export_spool_append(struct export_spool *s, const char *buf, size_t len, char *err, size_t errlen);

/* Takes lock.send, waiting at most o.lock_wait_ms. Returns 0, or
 * -EWOULDBLOCK with "another run (pid N) is delivering from DIR" in err. */
int export_spool_lock_send(struct export_spool *s, char *err, size_t errlen);

/* Needs lock.send. Deletes segments every mark of keys[] has passed (its
 * resend window too), then
 * the ones whose newest line is older than max_age, then the oldest ones
 * while the spool is larger than max_bytes (the newest one always stays).
 * Lines that a destination had not received yet are added to expired[i]. */
int export_spool_trim(struct export_spool *s, const char *const keys[], int nkeys, int64_t now,
                      uint64_t expired[]);

/* A missing cursor file is {0, 0} with nothing to resend: the start of the
 * spool; a file of the older "seq off" form has nothing to resend either.
 * -EPERM: DIR/cursor.<key> is no regular file of ours. */
int export_spool_mark_load(struct export_spool *s, const char *key, struct export_mark *m);
/* Atomically (temp file, fsync, rename). Needs lock.send. -EPERM: what is
 * at DIR/cursor.<key> is no regular file of ours, left as it is. */
int export_spool_mark_store(struct export_spool *s, const char *key, const struct export_mark *m);

/* Reads at most max bytes of whole lines from *from, stopping at *until
 * (NULL: the end of the spool): lines whose timestamp is below min_ts are
 * skipped and counted in *expired, the others are copied to *buf (malloc'd,
 * caller frees; *len 0 at the end) and counted in *lines. *to is the
 * position after the last line consumed. */
int export_spool_read(struct export_spool *s, const struct export_cursor *from, const struct export_cursor *until,
                      size_t max, int64_t min_ts, char **buf, size_t *len, struct export_cursor *to,
                      uint64_t *lines, uint64_t *expired);

/* Starts d for key: loads its mark. Needs lock.send. 0 or -errno. */
int export_spool_delivery_begin(struct export_spool *s, const char *key, struct export_delivery *d);
/* The next batch for d: up to max bytes of new lines from d->mark.next,
 * led, in the run's first batch, by the resend window (its lines below
 * min_ts are left out: carbon has them or would refuse them). 0 or -errno. */
int export_spool_batch(struct export_spool *s, struct export_delivery *d, size_t max, int64_t min_ts,
                       struct export_batch *b);
/* The destination confirmed b: moves d's mark past it and makes the window
 * this run's new lines so far (or b's alone past EXPORT_SPOOL_RESEND_MAX);
 * a run that confirms no new line keeps the window it found. Stored
 * durably when it changed. 0 or -errno. */
int export_spool_ack(struct export_spool *s, struct export_delivery *d, const struct export_batch *b);
void export_spool_batch_done(struct export_batch *b);

/* Lines not yet delivered after c and the timestamp of the oldest (0 if none). */
int export_spool_pending(struct export_spool *s, const struct export_cursor *c, uint64_t *lines,
                         int64_t *oldest_ts);
/* Total bytes of the segments. */
int64_t export_spool_bytes(struct export_spool *s);

/* Names in DIR that look like segments but are no regular file of ours
 * (someone else wrote them: never read): how many, the first said in why. */
int export_spool_foreign(struct export_spool *s, char *why, size_t len);

#endif /* LOOPSTAT_EXPORT_SPOOL_H */
