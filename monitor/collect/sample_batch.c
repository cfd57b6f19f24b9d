/*
 * sample_batch.c — the sampler's per-tick reads and its true CPU cost.
 *
 * Whether a tick reads with pread or one io_uring batch is probe_sc_batch's
 * decision, made by measuring both (probe_syscall_batch.h): no fleet size
 * is right on every machine.
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
#include "collect/sample_batch.h"
#include "probe_syscall_batch.h"
#include "util/clock.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

struct sample_batch {
	struct probe_sc_batch *batch; /* owned */
	struct probe_syscall **slots; /* borrowed probes, cap long */
	struct probe_sc_sample *out;
	int      *rc;
	size_t    n, cap;
	int       used_ring;
};

int sample_batch_new(struct sample_batch **out)
{
	struct sample_batch *sb = calloc(1, sizeof(*sb));
	if (!sb || probe_sc_batch_new(SAMPLE_BATCH_SQ, &sb->batch) < 0) {
		free(sb);
		return -ENOMEM;
	}
	*out = sb;
	return 0;
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
	probe_sc_batch_sample(sb->batch, sb->slots, sb->n, sb->out, sb->rc);
	sb->used_ring = probe_sc_batch_last_path(sb->batch) == PROBE_SC_PATH_RING;
}

int sample_batch_result(const struct sample_batch *sb, size_t i, struct probe_sc_sample *out)
{
	*out = sb->out[i];
	return sb->rc[i];
}

void sample_batch_set_path(struct sample_batch *sb, enum probe_sc_path p)
{
	probe_sc_batch_set_path(sb->batch, p);
}

int sample_batch_used_ring(const struct sample_batch *sb)
{
	return sb->used_ring;
}

uint64_t sample_batch_cpu_ns(struct sample_batch *sb)
{
	uint64_t iowq = 0;
	probe_sc_batch_iowq_cpu_ns(sb->batch, &iowq);
	return thread_cpu_ns() + iowq;
}

int sample_batch_set_realtime(struct sample_batch *sb, int on)
{
	struct sched_param sp = { .sched_priority = on ? 1 : 0 };
	int policy = on ? SCHED_FIFO : SCHED_OTHER;
	if (pthread_setschedparam(pthread_self(), policy, &sp) != 0)
		return 0;
	/* best effort: the same rights that allowed ours allow theirs */
	probe_sc_batch_iowq_setsched(sb->batch, policy, sp.sched_priority);
	return 1;
}
