/*
 * sample_batch.c — the sampler's per-tick reads: pread for a few workers,
 * one io_uring batch for many, and the sampler's true CPU cost.
 *
 * Why a threshold: a batch costs one io_uring_enter plus waking io-wq
 * threads and switching to them and back, per tick, whatever the number of
 * reads; it pays only once that is less than the preads it replaces.
 *
 * Why the io-wq threads matter to the sampler's real-time policy: the reads
 * of a batch run on them, not on the sampling thread, so (1) the sampler's
 * CPU share must include their CPU time, or a sampler that costs 30% of a
 * core would look like 5% and keep its real-time priority; and (2) they
 * must have the sampling thread's policy: they inherit it when created, but
 * keep it when the sampling thread changes later, so a sampler that dropped
 * real-time would leave real-time io-wq threads behind (or, the other way,
 * real-time sampling whose reads queue behind the workers it measures).
 */
#include "sample_batch.h"
#include "probe_syscall_batch.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

struct sample_batch {
	struct probe_sc_batch *batch; /* owned; created at the first large tick */
	int       batch_err;          /* probe_sc_batch_new failed: pread only */
	struct probe_syscall **slots; /* borrowed probes, cap long */
	struct probe_sc_sample *out;
	int      *rc;
	size_t    n, cap;
	int       used_ring;
};

int sample_batch_new(struct sample_batch **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void sample_batch_delete(struct sample_batch *sb)
{
	if (!sb)
		return;
	probe_sc_batch_delete(sb->batch);
	free(sb->slots);
	free(sb->out);
	free(sb->rc);
	free(sb);
}

struct probe_syscall **sample_batch_slots(struct sample_batch *sb, size_t n)
{
	if (n > sb->cap) {
		size_t cap = sb->cap ? sb->cap : 64;
		while (cap < n)
			cap *= 2;
		struct probe_syscall **s = realloc(sb->slots, cap * sizeof(*s));
		if (s)
			sb->slots = s;
		struct probe_sc_sample *o = s ? realloc(sb->out, cap * sizeof(*o)) : NULL;
		if (o)
			sb->out = o;
		int *rc = o ? realloc(sb->rc, cap * sizeof(*rc)) : NULL;
		if (!rc)
			return NULL;
		sb->rc = rc;
		sb->cap = cap;
	}
	sb->n = n;
	return sb->slots;
}

void sample_batch_run(struct sample_batch *sb)
{
	size_t live = 0;
	for (size_t i = 0; i < sb->n; i++)
		live += sb->slots[i] != NULL;
	if (live >= SAMPLE_BATCH_MIN && !sb->batch && !sb->batch_err)
		sb->batch_err = probe_sc_batch_new(SAMPLE_BATCH_SQ, &sb->batch);
	sb->used_ring = 0;
	if (live >= SAMPLE_BATCH_MIN && sb->batch) {
		probe_sc_batch_sample(sb->batch, sb->slots, sb->n, sb->out, sb->rc);
		sb->used_ring = probe_sc_batch_ring(sb->batch) == 1;
		return;
	}
	for (size_t i = 0; i < sb->n; i++)
		if (sb->slots[i])
			sb->rc[i] = probe_syscall_sample(sb->slots[i], &sb->out[i]);
}

int sample_batch_result(const struct sample_batch *sb, size_t i, struct probe_sc_sample *out)
{
	*out = sb->out[i];
	return sb->rc[i];
}

int sample_batch_used_ring(const struct sample_batch *sb)
{
	return sb->used_ring;
}

uint64_t sample_batch_cpu_ns(struct sample_batch *sb)
{
	struct timespec ts;
	uint64_t iowq = 0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	if (sb->batch)
		probe_sc_batch_iowq_cpu_ns(sb->batch, &iowq);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + iowq;
}

int sample_batch_set_realtime(struct sample_batch *sb, int on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };
	int policy = on ? SCHED_FIFO : SCHED_OTHER;
	if (pthread_setschedparam(pthread_self(), policy, &sp) != 0)
		return 0;
	/* best effort: the same rights that allowed ours allow theirs */
	if (sb->batch)
		probe_sc_batch_iowq_setsched(sb->batch, policy, sp.sched_priority);
	return 1;
}
