/*
 * export_spool.c — append-only segments, per-destination cursors, flock.
 */
#include "export/export_spool.h"
#include "export/export_send.h"
#include "util/safefile.h"
#include "util/clock.h"
#include "util/textsafe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* enough for any one line (EXPORT_LINE_MAX is 2048) */
#define EXPORT_SPOOL_PEEK 4096

struct seg {
	uint64_t seq;
	int64_t newest;   /* newest timestamp in it */
	int64_t size;
	char name[256];
};

/* Another user's lock file nobody holds: 0; held: 1, its text in pid; -errno: cannot tell. */
static int foreign_lock_held(int dirfd, const char *name, const struct stat *seen, char *pid, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	pid[0] = '\0';
	if (fd < 0)
		return -errno;
	int held = -ESTALE;
	if (fstat(fd, &st) == 0 && st.st_ino == seen->st_ino && st.st_dev == seen->st_dev && S_ISREG(st.st_mode)) {
		held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
		ssize_t n = pread(fd, pid, len - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		textsafe(pid);   /* that user's text, on root's terminal */
	}
	close(fd);   /* drops our flock if we got it */
	return held;
}

/* DIR/name, a lock file: ours; or another user's that nobody holds any
 * more, taken over; or refused (-EPERM) with why in err. */
static int open_lock(struct export_spool *s, const char *name, char *err, size_t errlen)
{
	struct stat st;
	char why[512], pid[32];
	int fd = safefile_open(s->dirfd, name, O_RDWR | O_CREAT, 0600, &st, why, sizeof(why));
	if (fd == -EPERM && fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid != geteuid() && st.st_nlink == 1) {
		int held = foreign_lock_held(s->dirfd, name, &st, pid, sizeof(pid));
		if (held == 1) {
			snprintf(why, sizeof(why), "%s belongs to uid %u and is held by a live process of that user "
			         "(pid %s): two users deliver from one spool; give each its own --spool", name,
			         (unsigned)st.st_uid, pid[0] ? pid : "?");
		} else if (held == 0 && unlinkat(s->dirfd, name, 0) == 0) {
			/* left behind by a run that is gone: ours from now on */
			unsigned uid = (unsigned)st.st_uid;
			fd = safefile_open(s->dirfd, name, O_RDWR | O_CREAT | O_EXCL, 0600, &st, why, sizeof(why));
			size_t n = strlen(s->note);
			snprintf(s->note + n, sizeof(s->note) - n, "%stook over %s of uid %u, left by pid %s (gone)",
			         n ? "; " : "", name, uid, pid[0] ? pid : "?");
		}
	}
	if (fd == -EPERM && !strstr(why, "held by"))
		snprintf(why + strlen(why), sizeof(why) - strlen(why), ": someone else writes to this directory; "
		         "remove it, and keep other users from writing here");
	if (fd < 0)
		snprintf(err, errlen, "spool %s: %s", s->dir, why);
	return fd;
}

int export_spool_open(struct export_spool *s, const char *dir, const struct export_spool_opts *o,
                      char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->dirfd = s->append_fd = s->send_fd = -1;
	s->o = *o;
	if (!dir || !*dir || strlen(dir) >= sizeof(s->dir)) {
		snprintf(err, errlen, "spool: empty or too long directory name");
		return -EINVAL;
	}
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	char why[1024];
	int rc = s->dirfd = safefile_dir_open(dir, 1, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "spool %s: %s", dir, why);
		return rc;
	}
	rc = s->append_fd = open_lock(s, "lock.append", err, errlen);
	if (rc >= 0)
		rc = s->send_fd = open_lock(s, "lock.send", err, errlen);
	if (rc < 0) {
		export_spool_close(s);
		return rc;
	}
	return 0;
}

void export_spool_close(struct export_spool *s)
{
	if (s->send_fd >= 0)
		close(s->send_fd);   /* drops the flock too */
	if (s->append_fd >= 0)
		close(s->append_fd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	s->dirfd = s->append_fd = s->send_fd = -1;
	s->have_send = 0;
}

static int lock_wait(int fd, int wait_ms)
{
	long long t0 = mono_ms();
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		long long el = mono_ms() - t0;
		if (el >= wait_ms)
			return -EWOULDBLOCK;
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

static int cmp_seg(const void *a, const void *b)
{
	uint64_t x = ((const struct seg *)a)->seq, y = ((const struct seg *)b)->seq;
	return x < y ? -1 : x > y;
}

/* The segments, oldest first; *out malloc'd. Names that look like one but
 * are no regular file of ours are left out, counted in *ignored (may be
 * NULL: deliveries list from several threads), the first one said in why. */
static int list_segs_ex(struct export_spool *s, struct seg **out, int *n, int *ignored, char *why1, size_t len)
{
	*out = NULL;
	*n = 0;
	int fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	int cap = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		uint64_t seq;
		long long newest;
		int used = 0;
		if (sscanf(e->d_name, "seg.%" SCNu64 ".%lld%n", &seq, &newest, &used) != 2 || e->d_name[used])
			continue;
		struct stat st;
		char why[128];
		if (fstatat(s->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (safefile_refusal(&st, why, sizeof(why))) {
			/* planted by someone who can write here: never opened */
			if (ignored && !(*ignored)++)
				snprintf(why1, len, "%.64s %s", e->d_name, why);
			continue;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			struct seg *g = realloc(*out, (size_t)cap * sizeof(**out));
			if (!g) {
				closedir(d);
				free(*out);
				*out = NULL;
				return -ENOMEM;
			}
			*out = g;
		}
		struct seg *g = &(*out)[(*n)++];
		g->seq = seq;
		g->newest = newest;
		g->size = st.st_size;
		snprintf(g->name, sizeof(g->name), "%s", e->d_name);
	}
	closedir(d);
	if (*n)
		qsort(*out, (size_t)*n, sizeof(**out), cmp_seg);
	return 0;
}

static int list_segs(struct export_spool *s, struct seg **out, int *n)
{
	return list_segs_ex(s, out, n, NULL, NULL, 0);
}

int export_spool_foreign(struct export_spool *s, char *why, size_t len)
{
	struct seg *segs;
	int n, ignored = 0;
	why[0] = '\0';
	if (list_segs_ex(s, &segs, &n, &ignored, why, len) == 0)
		free(segs);
	textsafe(why);   /* a name someone else chose (%llu skips a newline) */
	return ignored;
}

static int64_t newest_ts(const char *buf, size_t len)
{
	int64_t newest = 0;
	const char *p = buf, *end = buf + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *sp = nl;
		while (sp > p && sp[-1] != ' ')
			sp--;
		int64_t ts = strtoll(sp, NULL, 10);
		if (ts > newest)
			newest = ts;
		p = nl + 1;
	}
	return newest;
}

/* DIR/name := buf, atomically. A name that is not a regular file of ours
 * is someone else's doing: -EPERM, like any file of theirs. */
static int replace(struct export_spool *s, const char *name, const char *buf, size_t len, char *err, size_t errlen)
{
	int rc = safefile_replace(s->dirfd, name, NULL, buf, len, 0600, err, errlen);
	return rc == -EEXIST ? -EPERM : rc;
}

static int past_deadline(const struct export_spool *s)
{
	return s->deadline_ms && mono_ms() > s->deadline_ms;
}

int export_spool_append(struct export_spool *s, const char *buf, size_t len, char *err, size_t errlen)
{
	if (len == 0)
		return 0;
	int rc = lock_wait(s->append_fd, s->o.lock_wait_ms > 2000 ? s->o.lock_wait_ms : 2000);
	if (rc < 0) {
		snprintf(err, errlen, "spool %s: flock(lock.append): %s", s->dir, strerror(-rc));
		return rc;
	}
	struct seg *segs;
	int n;
	rc = list_segs(s, &segs, &n);
	if (rc == 0) {
		/* DIR/next keeps seq growing when every segment has been deleted:
		 * a cursor past the end must never skip a new segment */
		uint64_t seq = n ? segs[n - 1].seq + 1 : 1, next = 0;
		char final[64], nbuf[32], why[512];
		ssize_t got = safefile_read(s->dirfd, "next", nbuf, sizeof(nbuf), why, sizeof(why));
		rc = got == -ENOENT ? 0 : got < 0 ? (int)got : 0;
		next = got > 0 ? strtoull(nbuf, NULL, 10) : 0;
		if (next > seq)
			seq = next;
		int nl = snprintf(nbuf, sizeof(nbuf), "%" PRIu64 "\n", seq + 1);
		if (rc == 0)
			rc = replace(s, "next", nbuf, (size_t)nl, why, sizeof(why));
		snprintf(final, sizeof(final), "seg.%016" PRIu64 ".%lld", seq, (long long)newest_ts(buf, len));
		if (rc == 0)
			rc = replace(s, final, buf, len, why, sizeof(why));
		free(segs);
		if (rc < 0)
			snprintf(err, errlen, "spool %s: write segment: %s%s", s->dir, why, rc == -EPERM ? ": someone "
			         "else writes to this directory; remove it, and keep other users from writing here" : "");
	} else {
		snprintf(err, errlen, "spool %s: list: %s", s->dir, strerror(-rc));
	}
	flock(s->append_fd, LOCK_UN);
	return rc;
}

int export_spool_lock_send(struct export_spool *s, char *err, size_t errlen)
{
	int rc = lock_wait(s->send_fd, s->o.lock_wait_ms);
	if (rc < 0) {
		char pid[32] = "";
		ssize_t n = pread(s->send_fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		textsafe(pid);
		if (rc == -EWOULDBLOCK)
			snprintf(err, errlen, "another run (pid %s) is delivering from %s; waited %d ms",
			         pid[0] ? pid : "?", s->dir, s->o.lock_wait_ms);
		else
			snprintf(err, errlen, "spool %s: flock(lock.send): %s", s->dir, strerror(-rc));
		return rc;
	}
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(s->send_fd, 0) == 0 && pwrite(s->send_fd, pid, (size_t)n, 0) < 0)
		(void)0; /* the pid is only for the other run's message */
	s->have_send = 1;
	return 0;
}

int export_spool_mark_load(struct export_spool *s, const char *key, struct export_mark *m)
{
	char name[320], buf[128], why[256];
	snprintf(name, sizeof(name), "cursor.%s", key);
	memset(m, 0, sizeof(*m));
	ssize_t n = safefile_read(s->dirfd, name, buf, sizeof(buf), why, sizeof(why));
	if (n <= 0)
		return n == -ENOENT ? 0 : (int)n;
	int got = sscanf(buf, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64, &m->next.seq, &m->next.off,
	                 &m->resend.seq, &m->resend.off);
	if (got < 2)
		memset(m, 0, sizeof(*m));
	/* the older two-number form, or a window past the cursor: nothing to resend */
	if (got != 4 || m->resend.seq > m->next.seq ||
	    (m->resend.seq == m->next.seq && m->resend.off > m->next.off))
		m->resend = m->next;
	return 0;
}

int export_spool_mark_store(struct export_spool *s, const char *key, const struct export_mark *m)
{
	char name[320], buf[128], why[512];
	snprintf(name, sizeof(name), "cursor.%s", key);
	int n = snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", m->next.seq,
	                 m->next.off, m->resend.seq, m->resend.off);
	return replace(s, name, buf, (size_t)n, why, sizeof(why));
}

/* Segment g, a regular file of ours (as listed; checked again on the fd). */
static int open_seg(struct export_spool *s, const struct seg *g, struct stat *st, char *why, size_t len)
{
	return safefile_open(s->dirfd, g->name, O_RDONLY, 0, st, why, len);
}

/* Lines in segment g at or after byte off. */
static int64_t count_lines(struct export_spool *s, const struct seg *g, uint64_t off)
{
	struct stat st;
	char why[160];
	int fd = open_seg(s, g, &st, why, sizeof(why));
	if (fd < 0)
		return 0;
	char buf[65536];
	int64_t lines = 0;
	ssize_t n;
	/* no further than the size it had: a segment never grows */
	while (off < (uint64_t)st.st_size && !past_deadline(s) &&
	       (n = pread(fd, buf, (size_t)((uint64_t)st.st_size - off < sizeof(buf) ? (uint64_t)st.st_size - off :
	                                    sizeof(buf)), (off_t)off)) > 0) {
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
		off += (uint64_t)n;
	}
	close(fd);
	return lines;
}

/* Lines of g that the cursor c has not passed. */
static int64_t unsent_in(struct export_spool *s, const struct seg *g, const struct export_cursor *c)
{
	if (c->seq > g->seq)
		return 0;
	return count_lines(s, g, c->seq == g->seq ? c->off : 0);
}

int export_spool_trim(struct export_spool *s, const char *const keys[], int nkeys, int64_t now,
                      uint64_t expired[])
{
	struct seg *segs;
	int n, rc = list_segs(s, &segs, &n);
	if (rc < 0)
		return rc;
	struct export_mark mk[32];
	if (nkeys > 32)
		nkeys = 32;
	for (int k = 0; k < nkeys; k++)
		export_spool_mark_load(s, keys[k], &mk[k]);
	int64_t total = 0;
	for (int i = 0; i < n; i++)
		total += segs[i].size;
	for (int i = 0; i < n; i++) {
		const struct seg *g = &segs[i];
		int passed = nkeys > 0, old = g->newest < now - s->o.max_age_s;
		/* the resend window (never past next) is kept too */
		for (int k = 0; k < nkeys; k++) {
			const struct export_cursor *c = &mk[k].resend;
			passed &= c->seq > g->seq || (c->seq == g->seq && c->off >= (uint64_t)g->size);
		}
		int full = total > s->o.max_bytes && i < n - 1;
		if (!passed && !old && !full)
			continue;
		if (!passed)
			for (int k = 0; k < nkeys; k++)
				expired[k] += (uint64_t)unsent_in(s, g, &mk[k].next);
		if (unlinkat(s->dirfd, g->name, 0) == 0)
			total -= g->size;
	}
	free(segs);
	fsync(s->dirfd);
	return 0;
}

int export_spool_read(struct export_spool *s, const struct export_cursor *from, const struct export_cursor *until,
                      size_t max, int64_t min_ts, char **buf, size_t *len, struct export_cursor *to,
                      uint64_t *lines, uint64_t *expired)
{
	struct seg *segs;
	int n, rc = list_segs(s, &segs, &n);
	*buf = NULL;
	*len = 0;
	*to = *from;
	if (rc < 0)
		return rc;
	char *out = malloc(max + 1);
	if (!out) {
		free(segs);
		return -ENOMEM;
	}
	size_t olen = 0;
	for (int i = 0; i < n && olen < max; i++) {
		const struct seg *g = &segs[i];
		if (g->seq < to->seq)
			continue;
		if (until && g->seq > until->seq)
			break;
		uint64_t off = g->seq == to->seq ? to->off : 0;
		size_t want = max - olen;
		if (until && g->seq == until->seq) {
			if (off >= until->off)
				break;
			if (until->off - off < want)
				want = (size_t)(until->off - off);
		}
		if (past_deadline(s)) {
			rc = -ETIMEDOUT;
			break;
		}
		to->seq = g->seq;
		to->off = off;
		struct stat st;
		char why[160];
		int fd = open_seg(s, g, &st, why, sizeof(why));
		if (fd < 0)
			continue;
		/* read what fits, then keep whole lines only */
		ssize_t got = pread(fd, out + olen, want, (off_t)off);
		close(fd);
		if (got <= 0) {
			if ((int64_t)off >= g->size)  /* done with it: next segment */
				to->seq = g->seq + 1, to->off = 0;
			continue;
		}
		char *p = out + olen, *end = p + got, *w = p;
		while (p < end) {
			char *nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl)
				break;
			char *sp = nl;
			while (sp > p && sp[-1] != ' ')
				sp--;
			size_t ll = (size_t)(nl + 1 - p);
			if (strtoll(sp, NULL, 10) < min_ts) {
				++*expired;
			} else {
				memmove(w, p, ll);
				w += ll;
				++*lines;
			}
			to->off += ll;
			p = nl + 1;
		}
		olen = (size_t)(w - out);
		/* a tail without a newline (a damaged segment: ours are renamed
		 * whole) would stop this cursor for ever: count it and move on */
		if ((int64_t)(off + (uint64_t)got) >= g->size && (int64_t)to->off < g->size) {
			++*expired;
			to->off = (uint64_t)g->size;
		}
		if ((int64_t)to->off >= g->size)
			to->seq = g->seq + 1, to->off = 0;
		else
			break;   /* the batch is full mid-segment */
	}
	free(segs);
	if (rc < 0) {
		free(out);
		return rc;
	}
	out[olen] = '\0';
	*buf = out;
	*len = olen;
	return 0;
}

int export_spool_pending(struct export_spool *s, const struct export_cursor *c, uint64_t *lines,
                         int64_t *oldest_ts)
{
	struct seg *segs;
	int n, rc = list_segs(s, &segs, &n);
	*lines = 0;
	*oldest_ts = 0;
	if (rc < 0)
		return rc;
	for (int i = 0; i < n; i++) {
		int64_t l = unsent_in(s, &segs[i], c);
		if (l > 0 && !*oldest_ts) {
			/* the first unsent line is the oldest: segments are in time order */
			struct export_cursor at = { segs[i].seq, c->seq == segs[i].seq ? c->off : 0 }, to;
			char *buf;
			size_t len;
			uint64_t one = 0, exp = 0;
			if (export_spool_read(s, &at, NULL, EXPORT_SPOOL_PEEK, INT64_MIN, &buf, &len, &to, &one, &exp) == 0 &&
			    len) {
				char *nl = memchr(buf, '\n', len), *sp = nl;
				while (sp && sp > buf && sp[-1] != ' ')
					sp--;
				if (sp)
					*oldest_ts = strtoll(sp, NULL, 10);
			}
			free(buf);
		}
		*lines += (uint64_t)l;
	}
	free(segs);
	return 0;
}

int64_t export_spool_bytes(struct export_spool *s)
{
	struct seg *segs;
	int n;
	if (list_segs(s, &segs, &n) < 0)
		return 0;
	int64_t total = 0;
	for (int i = 0; i < n; i++)
		total += segs[i].size;
	free(segs);
	return total;
}

int export_spool_delivery_begin(struct export_spool *s, const char *key, struct export_delivery *d)
{
	memset(d, 0, sizeof(*d));
	d->key = key;
	int rc = export_spool_mark_load(s, key, &d->mark);
	d->start = d->mark.next;
	d->resent = s->o.no_resend;   /* no window to lead the first batch */
	return rc;
}

static int same_pos(const struct export_cursor *a, const struct export_cursor *b)
{
	return a->seq == b->seq && a->off == b->off;
}

/* Appends [from, until) to *buf: reads until there, or until a read makes
 * no progress (its segments were trimmed). */
static int read_window(struct export_spool *s, struct export_cursor at, const struct export_cursor *until,
                       int64_t min_ts, char **buf, size_t *len, uint64_t *lines)
{
	while (!same_pos(&at, until)) {
		char *part;
		size_t plen;
		struct export_cursor to;
		uint64_t skipped = 0;  /* delivered once already: not "expired" */
		int rc = export_spool_read(s, &at, until, EXPORT_SPOOL_RESEND_MAX, min_ts, &part, &plen, &to, lines,
		                           &skipped);
		if (rc < 0)
			return rc;
		char *grown = plen ? realloc(*buf, *len + plen + 1) : NULL;
		if (plen && !grown) {
			free(part);
			return -ENOMEM;
		}
		if (plen) {
			memcpy(grown + *len, part, plen);
			*buf = grown;
			*len += plen;
		}
		free(part);
		if (same_pos(&to, &at))
			break;
		at = to;
	}
	return 0;
}

int export_spool_batch(struct export_spool *s, struct export_delivery *d, size_t max, int64_t min_ts,
                       struct export_batch *b)
{
	memset(b, 0, sizeof(*b));
	b->from = b->to = d->mark.next;
	int rc = export_spool_read(s, &d->mark.next, NULL, max, min_ts, &b->buf, &b->new_len, &b->to, &b->lines,
	                           &b->expired);
	b->len = b->new_len;
	if (rc < 0 || d->resent || same_pos(&d->mark.resend, &d->mark.next))
		return rc;
	/* the window goes first: older stamps, one connection */
	char *win = NULL;
	size_t wlen = 0;
	rc = read_window(s, d->mark.resend, &d->mark.next, min_ts, &win, &wlen, &b->resent);
	if (rc == 0 && wlen) {
		char *both = realloc(win, wlen + b->new_len + 1);
		if (!both) {
			rc = -ENOMEM;
		} else {
			memcpy(both + wlen, b->buf, b->new_len);
			both[wlen + b->new_len] = '\0';
			free(b->buf);
			b->buf = both;
			b->len = wlen + b->new_len;
			win = NULL;
		}
	}
	free(win);
	return rc;
}

int export_spool_ack(struct export_spool *s, struct export_delivery *d, const struct export_batch *b)
{
	struct export_mark m = d->mark;
	m.next = b->to;
	if (b->lines) {
		if (d->span + b->new_len > EXPORT_SPOOL_RESEND_MAX)
			m.resend = b->from, d->span = 0;    /* too much to send twice: this batch alone */
		else if (d->span == 0)
			m.resend = d->start;                /* the run's first new lines: the window is the run's */
		d->span += b->new_len;
	} else if (same_pos(&d->mark.resend, &d->mark.next)) {
		m.resend = m.next;   /* past expired lines only: still nothing to resend */
	}
	d->resent = 1;
	if (s->o.no_resend)
		m.resend = m.next;   /* nothing kept to send again: trim frees it at once */
	if (same_pos(&m.next, &d->mark.next) && same_pos(&m.resend, &d->mark.resend))
		return 0;
	int rc = export_spool_mark_store(s, d->key, &m);
	if (rc == 0)
		d->mark = m;
	return rc;
}

void export_spool_batch_done(struct export_batch *b)
{
	free(b->buf);
	b->buf = NULL;
}
