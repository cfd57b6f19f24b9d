/*
 * shm_quiet.c — a table read answered without copying the table, when
 * nothing it returns can have changed since the last one.
 *
 * A slot has one writer, the loop thread, and that thread writes nothing
 * while it sits in a blocking poll: it sets poll_since_ns just before the
 * poll and clears it just after. So while the slot table's generation (its
 * seqlock: every slot taken or released moves it) is the one a read saw,
 * and every slot that read returned still shows the same non-zero
 * poll_since_ns, a new read would copy the same bytes. What that costs is
 * two generation loads and a few loads per slot from the mapping, against
 * a copy of every slot up to the first free one.
 *
 * A read is reused only after two full reads in a row returned the very
 * same workers, every one in a blocking poll: the first copy of a poll may
 * have been taken while the writer was storing the counters it updates
 * just before setting poll_since_ns (the copy can see the new poll_since_ns
 * and older counters), the second was taken after the poll had long begun.
 * A slot that lies about its poll (poll_since_ns kept while it works) keeps
 * showing the counters it showed: no more than it could claim by writing
 * them, and the sampler's cross-checks catch the lie itself.
 */
#include "shm_int.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void shm_quiet_note(struct shm_quiet *q, uint64_t gen, uint64_t listed_ns, const struct probe_shm_worker *w, int n,
		    int reusable)
{
	int ok = reusable && n >= 1 && n <= SHM_QUIET_MAX;
	for (int i = 0; ok && i < n; i++)
		ok = w[i].values[PROBE_SHM_poll_since_ns] != 0;
	/* copy_worker zeroes each worker before filling it: padding compares equal */
	q->stable = ok && q->n == n && q->gen == gen && memcmp(q->w, w, (size_t)n * sizeof(*w)) == 0;
	q->n = ok ? n : 0;
	q->gen = gen;
	q->alive_ns = listed_ns;
	if (ok)
		memcpy(q->w, w, (size_t)n * sizeof(*w));
}

void shm_quiet_forget(struct shm_quiet *q)
{
	q->n = 0;
	q->stable = 0;
}

/*
 * Whether every kept thread is still one of the writer's: signal 0 checks
 * that the thread exists in that thread group, without touching it. A
 * thread can end inside its poll without a word to its slot (cancelled
 * there, or killed by another thread's execve), and the full read's
 * listing would then refuse its slot; this refuses the reuse instead.
 */
int shm_quiet_alive(struct shm_quiet *q, pid_t pid)
{
	for (int i = 0; i < q->n; i++)
		if (syscall(SYS_tgkill, pid, q->w[i].tid, 0) < 0 && errno != EPERM)
			return shm_quiet_forget(q), 0;
	return 1;
}

int shm_quiet_unchanged(struct shm_quiet *q, struct shm_map *m, const struct shm_quiet_geometry *geo)
{
	uint64_t gen;
	if (!q->stable || m->state != SHM_MAP_ON)
		return 0;
	if (shm_map_generation(m, 0, &gen) < 0 || gen != q->gen)
		return 0;
	for (int i = 0; i < q->n; i++) {
		const struct probe_shm_worker *w = &q->w[i];
		struct shm_hot_raw r;
		/* the slot's offset was inside the validated size when it was read */
		size_t off = geo->header_size + (size_t)w->slot * geo->slot_size;
		if (shm_map_read_hot(m, off, geo->minor1, &r) < 0 || r.state != LOOPSTAT_SLOT_ACTIVE ||
		    r.tid != w->tid || r.generation != w->generation ||
		    r.poll_since_ns != w->values[PROBE_SHM_poll_since_ns])
			return shm_quiet_forget(q), 0;
	}
	/* the slot loads between two equal generations, as a read's copies are */
	if (shm_map_generation(m, 1, &gen) < 0 || gen != q->gen)
		return shm_quiet_forget(q), 0;
	return 1;
}

int shm_quiet_copy(struct shm_quiet *q, struct probe_shm_worker *out, size_t max)
{
	size_t n = (size_t)q->n < max ? (size_t)q->n : max;
	memcpy(out, q->w, n * sizeof(*out));
	q->reused++;
	return q->n;
}
