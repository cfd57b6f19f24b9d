/*
 * loop.c — the loop's poll, identified per thread (probe_loop.h has the
 * rule). The state is a few fixed tables: candidate loop fds and cached
 * wait keys; nothing is allocated.
 */
#include "probe_loop.h"
#include "probe_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void probe_loop_init(struct probe_loop *l, pid_t pid, pid_t tid)
{
	memset(l, 0, sizeof(*l));
	l->pid = pid;
	l->tid = tid;
	l->dirfd = -1;
	l->last_fd = -1;
}

void probe_loop_done(struct probe_loop *l)
{
	if (l->dirfd >= 0)
		close(l->dirfd);
	l->dirfd = -1;
}

static uint64_t coarse_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The thread's number of open fds: st_size of its fd directory (Linux >=
 * 6.2; older kernels report 0, which never changes and so never fires).
 * One fstat of an O_PATH fd opened once: no path walk per sample. */
static int64_t open_fds(struct probe_loop *l)
{
	if (l->dirfd == -1) {
		char path[PATH_MAX];
		l->dirfd = -2; /* tried */
		if (probe_proc_path(path, sizeof(path), "%d/task/%d/fd", (int)l->pid, (int)l->tid) >= 0) {
			int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0)
				l->dirfd = fd;
		}
	}
	struct stat st;
	if (l->dirfd < 0 || fstat(l->dirfd, &st) < 0)
		return -1;
	return (int64_t)st.st_size;
}

static int is_ring_wait(long nr)
{
	return probe_syscall_takes_fd(nr) && probe_syscall_is_event_wait(nr);
}

/* ---- keys: one read of a wait's fds, reused while the wait looks alike ---- */

static void key_of(const struct probe_sc_sample *s, int wait_fd, struct probe_loop_key *k)
{
	memset(k, 0, sizeof(*k));
	k->nr = s->nr;
	k->wait_fd = wait_fd;
	k->pc = s->pc;
	k->sp = s->sp;
	if (is_ring_wait(s->nr)) {
		k->a[0] = s->args[0];
	} else {
		/* poll: fds, nfds; select: n and the three set addresses */
		for (int i = 0; i < 4; i++)
			k->a[i] = s->args[i];
	}
}

static int key_same(const struct probe_loop_key *a, const struct probe_loop_key *b)
{
	return a->nr == b->nr && a->wait_fd == b->wait_fd && a->pc == b->pc && a->sp == b->sp &&
	       memcmp(a->a, b->a, sizeof(a->a)) == 0;
}

/* Reads what the wait of s waits on into k (its identity already set). */
static int key_read(struct probe_loop *l, const struct probe_sc_sample *s, int wait_fd, struct probe_loop_key *k)
{
	struct probe_wait_fds w;
	k->ring_key = is_ring_wait(s->nr);
	if (k->ring_key) {
		w.n = 1;
		w.truncated = 0;
		w.fds[0] = (int)(uint32_t)s->args[0];
	} else {
		int err = probe_wait_fds_read(l->pid, s, &w);
		if (err < 0)
			return err;
	}
	l->key_reads++;
	k->cand_fd = -1;
	k->cand_ino = 0;
	k->cand_kind = PROBE_FD_UNKNOWN;
	k->has_loop_fd = 0;
	k->nfds = w.n;
	k->truncated = w.truncated;
	k->fd_ino = 0;
	int kept = 0;
	for (int i = 0; i < w.n; i++) {
		int fd = w.fds[i];
		if (wait_fd >= 0) {
			/* instrumented: the published fd is known by number */
			if (fd == wait_fd) {
				k->has_loop_fd = 1;
				continue;
			}
		} else {
			enum probe_fd_kind kind = PROBE_FD_UNKNOWN;
			uint64_t ino = 0;
			char link[PROBE_TARGET_LEN];
			if (k->ring_key)
				kind = s->nr == SYS_io_uring_enter ? PROBE_FD_IO_URING : PROBE_FD_EVENTPOLL;
			else if (probe_fd_readlink(l->pid, fd, link, sizeof(link)) >= 0)
				kind = probe_fd_kind_of(link, &ino);
			if (kind == PROBE_FD_EVENTPOLL || kind == PROBE_FD_IO_URING) {
				/* prefer the thread's loop fd when the set holds several */
				if (k->cand_fd < 0 || fd == l->last_fd) {
					k->cand_fd = fd;
					k->cand_kind = kind;
				}
				continue;
			}
			if (kept == 0)
				k->fd_ino = ino;
		}
		if (kept < PROBE_VERDICT_FDS)
			k->fds[kept++] = fd;
	}
	/* a ring is known by its inode (epoll fds all share one: by number) */
	if (k->cand_kind == PROBE_FD_IO_URING && probe_fd_inode(l->pid, k->cand_fd, &k->cand_ino) < 0)
		k->cand_ino = 0;
	k->nkept = kept;
	k->hits = 0;
	k->read_ms = coarse_ms();
	k->nopen = k->ring_key ? -1 : open_fds(l);
	return 0;
}

static int key_stale(struct probe_loop *l, const struct probe_loop_key *k)
{
	if (k->hits >= PROBE_LOOP_RECHECK_HITS || coarse_ms() - k->read_ms >= PROBE_LOOP_RECHECK_MS)
		return 1;
	/* a poll set in memory: re-read when the fd table changed, looked at
	 * every few hits (the fstat costs a third of the sample's pread) */
	return !k->ring_key && k->hits % PROBE_LOOP_NOPEN_EVERY == 0 && k->nopen != open_fds(l);
}

/* The key for s, read or re-read as needed. Returns it or NULL (*err set). */
static struct probe_loop_key *key_get(struct probe_loop *l, const struct probe_sc_sample *s, int wait_fd, int *err)
{
	struct probe_loop_key want, *k = NULL, *victim = &l->keys[0];
	key_of(s, wait_fd, &want);
	for (int i = 0; i < PROBE_LOOP_KEYS; i++) {
		struct probe_loop_key *e = &l->keys[i];
		if (e->used && key_same(e, &want)) {
			k = e;
			break;
		}
		if (e->used < victim->used)
			victim = e;
	}
	if (k && !key_stale(l, k)) {
		k->hits++;
		k->used = ++l->stamp;
		l->key_hits++;
		return k;
	}
	if (!k) {
		k = victim;
		*k = want;
	}
	*err = key_read(l, s, wait_fd, k);
	if (*err < 0) {
		k->used = 0; /* nothing valid in it */
		return NULL;
	}
	k->used = ++l->stamp;
	return k;
}

/* ---- candidates: the epoll/ring fds the thread waits on ------------------- */

static struct probe_loop_cand *leader(struct probe_loop *l)
{
	struct probe_loop_cand *best = NULL;
	for (int i = 0; i < l->ncand; i++) {
		struct probe_loop_cand *c = &l->cand[i];
		if (!best || c->waits > best->waits || (c->waits == best->waits && c->born < best->born))
			best = c;
	}
	return best;
}

static void cand_remove(struct probe_loop *l, int i)
{
	l->cand[i] = l->cand[--l->ncand];
}

static struct probe_loop_cand *cand_get(struct probe_loop *l, int fd, uint64_t ino, enum probe_fd_kind kind)
{
	for (int i = 0; i < l->ncand; i++) {
		struct probe_loop_cand *c = &l->cand[i];
		if (c->fd != fd)
			continue;
		if (c->kind == kind && (kind != PROBE_FD_IO_URING || !ino || !c->ino || c->ino == ino))
			return c;
		cand_remove(l, i); /* the number now names another file */
		break;
	}
	if (l->ncand == PROBE_LOOP_CANDS) {
		int worst = 0;
		for (int i = 1; i < l->ncand; i++)
			if (l->cand[i].waits < l->cand[worst].waits)
				worst = i;
		cand_remove(l, worst);
	}
	struct probe_loop_cand *c = &l->cand[l->ncand++];
	c->fd = fd;
	c->kind = kind;
	c->waits = 0;
	c->born = l->seq;
	c->ino = ino;
	if (!c->ino && probe_fd_inode(l->pid, fd, &c->ino) < 0)
		c->ino = 0;
	return c;
}

/* The thread moved to another candidate: forget those closed or replaced
 * meanwhile (a nested loop's epoll fd is closed when its call returns). */
static void check_others(struct probe_loop *l, int keep_fd)
{
	for (int i = l->ncand - 1; i >= 0; i--) {
		struct probe_loop_cand *c = &l->cand[i];
		uint64_t ino;
		if (c->fd == keep_fd)
			continue;
		int err = probe_fd_inode(l->pid, c->fd, &ino);
		if (err == -EBADF || (err == 0 && c->ino && ino != c->ino))
			cand_remove(l, i);
	}
}

static void set_basis(struct probe_loop *l, int wait_fd, struct probe_verdict *out)
{
	out->loop_fd = -1;
	if (wait_fd >= 0) {
		out->basis = PROBE_BASIS_PUBLISHED;
		out->loop_fd = wait_fd;
		return;
	}
	struct probe_loop_cand *lead = leader(l);
	if (l->unreadable)
		out->basis = PROBE_BASIS_UNREADABLE;
	else if (!lead)
		out->basis = l->plain_seen ? PROBE_BASIS_PLAIN : PROBE_BASIS_NONE;
	else if (lead->waits < PROBE_LOOP_LEARN_WAITS)
		out->basis = PROBE_BASIS_LEARNING;
	else
		out->basis = lead->kind == PROBE_FD_IO_URING ? PROBE_BASIS_RING_FD : PROBE_BASIS_EPOLL_FD;
	if (lead && (out->basis != PROBE_BASIS_LEARNING))
		out->loop_fd = lead->fd;
}

static void blocked_on(struct probe_verdict *out, long nr, const struct probe_loop_key *k, enum probe_wait_kind w)
{
	out->cls = PROBE_BLOCKED;
	out->nr = nr;
	out->wait = w;
	out->fd = k->nkept > 0 && w == PROBE_WAIT_FDS ? k->fds[0] : -1;
	out->fd_ino = out->fd >= 0 ? k->fd_ino : 0;
}

static void copy_fds(struct probe_verdict *out, const struct probe_loop_key *k)
{
	out->nfds = k->nfds;
	for (int i = 0; i < k->nkept; i++)
		out->fds[i] = k->fds[i];
}

/* A wait on an epoll/ring fd: the loop's poll or a nested loop's. */
static void candidate_wait(struct probe_loop *l, const struct probe_loop_key *k, struct probe_verdict *out)
{
	struct probe_loop_cand *c = cand_get(l, k->cand_fd, k->cand_ino, k->cand_kind);
	c->waits++;
	l->seq++;
	if (l->last_fd != c->fd) {
		int fd = c->fd;
		check_others(l, fd);
		l->last_fd = fd;
	}
	struct probe_loop_cand *lead = leader(l);
	out->nr = k->nr;
	if (lead && lead->fd == k->cand_fd) {
		out->cls = PROBE_POLL;
		out->wait = PROBE_WAIT_LOOP;
		out->fd = k->cand_fd;
	} else {
		out->cls = PROBE_BLOCKED;
		out->wait = PROBE_WAIT_NESTED;
		out->fd = k->cand_fd;
	}
	out->fd_ino = 0;
}

int probe_loop_classify(struct probe_loop *l, const struct probe_sc_sample *s, int wait_fd,
			struct probe_verdict *out)
{
	probe_classify(s, wait_fd, out);
	int ring = 0, set = 0;
	if (s->state == PROBE_SC_IN_SYSCALL && probe_sample_waits_for_events(s)) {
		ring = is_ring_wait(s->nr);
		set = probe_syscall_is_poll_set(s->nr);
	}
	/* a registered ring's index cannot be resolved: probe_classify's POLL */
	if (ring && out->fd < 0)
		ring = 0;
	if (!ring && !set)
		goto done;

	if (wait_fd >= 0 && ring) {
		/* probe_classify compared arg0 with the published fd already */
		out->wait = out->cls == PROBE_POLL ? PROBE_WAIT_LOOP : PROBE_WAIT_NESTED;
		goto done;
	}
	if (set && l->unreadable) {
		out->wait = PROBE_WAIT_UNREAD; /* probe_classify's verdict stands */
		goto done;
	}
	int err = 0;
	const struct probe_loop_key *k = key_get(l, s, wait_fd, &err);
	if (!k) {
		if (!probe_wait_fds_unreadable(err)) {
			l->resamples++;
			set_basis(l, wait_fd, out);
			return -EAGAIN;
		}
		l->unreadable = 1;
		out->wait = PROBE_WAIT_UNREAD;
		goto done;
	}
	copy_fds(out, k);
	if (wait_fd >= 0) {
		if (k->has_loop_fd) {
			out->cls = PROBE_POLL;
			out->wait = PROBE_WAIT_LOOP;
			out->fd = wait_fd;
		} else {
			blocked_on(out, s->nr, k, k->nfds || k->truncated ? PROBE_WAIT_FDS : PROBE_WAIT_SLEEP);
		}
	} else if (k->cand_fd >= 0) {
		candidate_wait(l, k, out);
	} else if (k->nfds == 0 && !k->truncated) {
		blocked_on(out, s->nr, k, PROBE_WAIT_SLEEP);
	} else if (l->ncand == 0) {
		/* never waited on an epoll/ring fd: a plain poll loop */
		l->plain_seen = 1;
		out->cls = PROBE_POLL;
		out->wait = PROBE_WAIT_FDS;
		out->fd = k->nkept ? k->fds[0] : -1;
		out->fd_ino = k->nkept ? k->fd_ino : 0;
	} else {
		blocked_on(out, s->nr, k, PROBE_WAIT_FDS);
	}
done:
	set_basis(l, wait_fd, out);
	return 0;
}

const char *probe_loop_basis_text(enum probe_loop_basis basis, int loop_fd, char *buf, size_t len)
{
	switch (basis) {
	case PROBE_BASIS_EPOLL_FD:
		snprintf(buf, len, "epoll fd %d", loop_fd);
		break;
	case PROBE_BASIS_RING_FD:
		snprintf(buf, len, "ring fd %d", loop_fd);
		break;
	case PROBE_BASIS_PUBLISHED:
		snprintf(buf, len, "published wait fd");
		break;
	case PROBE_BASIS_PLAIN:
		snprintf(buf, len, "plain poll loop (any poll counts)");
		break;
	case PROBE_BASIS_UNREADABLE:
		snprintf(buf, len, "fd set unreadable: any poll counts as idle");
		break;
	case PROBE_BASIS_LEARNING:
		snprintf(buf, len, "learning");
		break;
	default:
		snprintf(buf, len, "any event wait counts");
		break;
	}
	return buf;
}

const char *probe_wait_kind_name(enum probe_wait_kind w)
{
	switch (w) {
	case PROBE_WAIT_NONE: return "-";
	case PROBE_WAIT_LOOP: return "loop";
	case PROBE_WAIT_NESTED: return "nested loop";
	case PROBE_WAIT_FDS: return "fds";
	case PROBE_WAIT_SLEEP: return "sleep";
	case PROBE_WAIT_UNREAD: return "unreadable";
	}
	return "?";
}
