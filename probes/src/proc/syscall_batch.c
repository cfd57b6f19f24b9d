/*
 * syscall_batch.c — many syscall probes sampled in one io_uring_enter.
 *
 * Index i of a call is slot i of everything: the registered file table,
 * the read buffer and the user_data of the read. Results are turned into
 * samples by probe__sc_result, the very code of the pread path.
 *
 * Waiting: a read done by io-wq completes through task work for the
 * submitting thread, which wakes that thread whenever it waits in
 * io_uring_enter. Waiting there for 1000 reads cost ~500 wakeups and as
 * many preemptions of the io-wq thread per batch on the PVM guest this was
 * measured on. So the ring is DEFER_TASKRUN (task work then wakes the
 * thread only while it waits in the ring, never in nanosleep), and the
 * batch sleeps about as long as its reads take before collecting them all
 * in one enter: a few context switches per batch instead. How long is
 * learnt: if collecting still had to block, the next sleep is much longer;
 * if not, a little shorter.
 */
#include "probe_syscall_batch.h"
#include "syscall_batch_int.h"
#include "syscall_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define SQ_MIN 8
#define SQ_MAX 4096
#define SLEEP_PER_READ_NS   3000u     /* a procfs read by io-wq here: ~2.5-4 us */
#define SLEEP_PER_READ_MIN  200u
#define SLEEP_PER_READ_MAX  50000u
#define SLEEP_MAX_NS        5000000u  /* half a 100 Hz tick: the sampler's lock is held */

int probe_sc_batch_new(unsigned sq_hint, struct probe_sc_batch **out)
{
	struct probe_sc_batch *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	unsigned sq = sq_hint < SQ_MIN ? SQ_MIN : sq_hint > SQ_MAX ? SQ_MAX : sq_hint;
	/* disabled until the sampling thread enables it, so that it, not the
	 * creating thread, becomes the single issuer */
	int r = io_uring_queue_init(sq, &b->ring, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
							  IORING_SETUP_R_DISABLED);
	b->defer = r == 0;
	if (r == -EINVAL) /* before Linux 6.1 */
		r = io_uring_queue_init(sq, &b->ring, 0);
	if (r == 0) {
		/* the io-wq CPU count tracks this many threads; the kernel would
		 * allow 4 per CPU, more than that on a large host */
		unsigned max[2] = { IOWQ_TRACK_MAX, IOWQ_TRACK_MAX };
		io_uring_register_iowq_max_workers(&b->ring, max);
	}
	b->ring_ok = r < 0 ? r : 1;
	b->sleep_per_read = SLEEP_PER_READ_NS;
	b->last_path = PROBE_SC_PATH_PREAD;
	probe_sc_choice_init(&b->choice, 0);
	*out = b;
	return 0;
}

void probe_sc_batch_delete(struct probe_sc_batch *b)
{
	if (!b)
		return;
	if (b->ring_ok == 1)
		io_uring_queue_exit(&b->ring);
	free(b->reg_serial);
	free(b->upd);
	/* after a failed enter, io-wq may still copy into them */
	if (!b->leak_bufs)
		free(b->bufs);
	free(b);
}

int probe_sc_batch_ring(const struct probe_sc_batch *b)
{
	return b->ring_ok;
}

/* The ring is given up for good: every later sample is a pread. */
static void drop_ring(struct probe_sc_batch *b, int err)
{
	io_uring_queue_exit(&b->ring);
	b->ring_ok = err < 0 ? err : -EIO;
}

static size_t grow_to(size_t have, size_t want)
{
	size_t n = have ? have : 64;
	while (n < want)
		n *= 2;
	return n;
}

static int ensure_bufs(struct probe_sc_batch *b, size_t n)
{
	if (n <= b->cap)
		return 0;
	size_t cap = grow_to(b->cap, n);
	char *nb = realloc(b->bufs, cap * PROBE__SC_BUF_LEN);
	if (!nb)
		return -ENOMEM;
	b->bufs = nb;
	b->cap = cap;
	return 0;
}

/* A bigger table is a new sparse one: all slots start empty. */
static int ensure_table(struct probe_sc_batch *b, size_t n)
{
	if (n <= b->nfiles)
		return 0;
	size_t nf = grow_to(b->nfiles, n);
	if (nf > INT_MAX)
		return -ENOMEM;
	uint64_t *rs = calloc(nf, sizeof(*rs));
	int *upd = calloc(nf, sizeof(*upd));
	if (!rs || !upd) {
		free(rs);
		free(upd);
		return -ENOMEM;
	}
	if (b->nfiles)
		io_uring_unregister_files(&b->ring);
	int r = io_uring_register_files_sparse(&b->ring, (unsigned)nf);
	if (r < 0) {
		free(rs);
		free(upd);
		b->nfiles = 0;
		drop_ring(b, r);
		return 0;
	}
	free(b->reg_serial);
	free(b->upd);
	b->reg_serial = rs;
	b->upd = upd;
	b->nfiles = (unsigned)nf;
	b->reg_used = 0;
	return 0;
}

/*
 * Registers the file of each probe whose slot holds another file, and
 * empties the slots past n so that files of dropped probes are released.
 * One io_uring_register call for the whole changed range (unchanged slots
 * inside it are skipped), none in the steady state.
 */
static void sync_files(struct probe_sc_batch *b, struct probe_syscall *const *probes, size_t n)
{
	size_t lo = SIZE_MAX, hi = 0, end = n > b->reg_used ? n : b->reg_used;
	for (size_t i = 0; i < end; i++) {
		struct probe_syscall *p = i < n ? probes[i] : NULL;
		b->upd[i] = IORING_REGISTER_FILES_SKIP;
		if (p && p->serial != b->reg_serial[i])
			probe__syscall_ensure(p);   /* never register a number the budget closed */
		if (i < n && (!p || p->fd < 0 || p->serial == b->reg_serial[i]))
			continue; /* a skipped probe keeps its slot for when it is back */
		if (i >= n && !b->reg_serial[i])
			continue;
		b->upd[i] = i < n ? p->fd : -1;
		lo = i < lo ? i : lo;
		hi = i;
	}
	if (lo == SIZE_MAX) {
		b->reg_used = (unsigned)n;
		return;
	}
	int r = io_uring_register_files_update(&b->ring, (unsigned)lo, b->upd + lo, (unsigned)(hi - lo + 1));
	size_t done = r < 0 ? 0 : (size_t)r;
	for (size_t i = lo; i <= hi; i++) {
		if (b->upd[i] == IORING_REGISTER_FILES_SKIP)
			continue;
		/* past a failure the slot's content is unknown: pread until it is retried */
		b->reg_serial[i] = i - lo < done && b->upd[i] >= 0 ? probes[i]->serial : 0;
	}
	/* after a failure, slots past n may still hold files: clear them again next time */
	b->reg_used = done == hi - lo + 1 || n > b->reg_used ? (unsigned)n : b->reg_used;
}

static char *buf_of(struct probe_sc_batch *b, size_t i)
{
	return b->bufs + i * PROBE__SC_BUF_LEN;
}

static void finish(struct probe_sc_batch *b, struct probe_syscall *const *probes, const struct io_uring_cqe *cqe,
		   struct probe_sc_sample *out, int *rc)
{
	size_t i = (size_t)cqe->user_data;
	/* what pread would have retried, or a read the ring dropped: read it again */
	if (cqe->res == -EINTR || cqe->res == -EAGAIN || cqe->res == -ECANCELED)
		rc[i] = probe_syscall_sample(probes[i], &out[i]);
	else
		rc[i] = probe__sc_result(buf_of(b, i), cqe->res, &out[i]);
}

/* Submits the k queued reads and waits for all of them. Returns 0, or the
 * -errno of an enter that cannot be retried: then some reads may still be
 * in flight and the caller must stop using the ring and its buffers. */
static int submit_and_reap(struct probe_sc_batch *b, unsigned k, struct probe_syscall *const *probes,
			   struct probe_sc_sample *out, int *rc)
{
	unsigned got = 0;
	int r = io_uring_submit_and_wait(&b->ring, k);
	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&b->ring, head, cqe) {
			finish(b, probes, cqe, out, rc);
			seen++;
		}
		io_uring_cq_advance(&b->ring, seen);
		got += seen;
		if (got == k)
			return 0;
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			return r;
		r = io_uring_submit_and_wait(&b->ring, k - got);
	}
}

static void sample_pread(struct probe_syscall *const *probes, size_t from, size_t to, struct probe_sc_sample *out,
			 int *rc)
{
	for (size_t i = from; i < to; i++)
		if (probes[i])
			rc[i] = probe_syscall_sample(probes[i], &out[i]);
}

/* Whether this thread may submit: a DEFER_TASKRUN ring belongs to the
 * first thread that samples with it. */
static int take_ring(struct probe_sc_batch *b)
{
	static __thread pid_t tid; /* gettid is a real syscall: once per thread */
	if (!tid)
		tid = gettid();
	if (b->defer && !b->owner) {
		/* liburing 2.3 declares io_uring_enable_rings but does not export it */
		int r = io_uring_register((unsigned)b->ring.ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0);
		if (r < 0) {
			drop_ring(b, r);
			return 0;
		}
		b->owner = tid;
	}
	if (b->defer && b->owner != tid)
		return 0;
	b->submitter = tid;
	return 1;
}

static long blocked_count(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_nvcsw;
}

/* Submits k reads and sleeps about as long as they take (see the top). */
static int submit_and_sleep(struct probe_sc_batch *b, unsigned k)
{
	int r = io_uring_submit(&b->ring);
	if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
		return r;
	uint64_t ns = b->sleep_per_read * k;
	if (ns > SLEEP_MAX_NS)
		ns = SLEEP_MAX_NS;
	struct timespec ts = { 0, (long)ns };
	nanosleep(&ts, NULL); /* a signal only makes the wait below longer */
	return 0;
}

static void learn_sleep(struct probe_sc_batch *b, int had_to_block)
{
	uint64_t s = b->sleep_per_read;
	/* a sleep too long costs only latency inside the tick; one too short
	 * costs hundreds of wakeups: grow fast, shrink slowly */
	s = had_to_block ? s + s / 2 + 1 : s - s / 256;
	b->sleep_per_read = s < SLEEP_PER_READ_MIN ? SLEEP_PER_READ_MIN : s > SLEEP_PER_READ_MAX ? SLEEP_PER_READ_MAX : s;
}

/* Queued reads to results; 0, or the -errno after which the ring and its
 * buffers must not be used again. */
static int collect(struct probe_sc_batch *b, unsigned k, struct probe_syscall *const *probes,
		   struct probe_sc_sample *out, int *rc)
{
	if (!b->defer)
		return submit_and_reap(b, k, probes, out, rc);
	int r = submit_and_sleep(b, k);
	if (r < 0)
		return r;
	long before = blocked_count();
	r = submit_and_reap(b, k, probes, out, rc);
	learn_sleep(b, blocked_count() != before);
	return r;
}

void probe__sc_batch_run(struct probe_sc_batch *b, enum probe_sc_path path, struct probe_syscall *const *probes,
			 size_t n, struct probe_sc_sample *out, int *rc)
{
	b->last_path = PROBE_SC_PATH_PREAD;
	if (path != PROBE_SC_PATH_RING) {
		sample_pread(probes, 0, n, out, rc);
		return;
	}
	/* without memory for buffers, pread needs none: the samples still come;
	 * the ring is taken first, as only its owner may register files */
	if (b->ring_ok != 1 || !take_ring(b) || ensure_bufs(b, n) < 0 || ensure_table(b, n) < 0 ||
	    b->ring_ok != 1) {
		sample_pread(probes, 0, n, out, rc);
		return;
	}
	b->last_path = PROBE_SC_PATH_RING;
	sync_files(b, probes, n);
	for (size_t i = 0, from = 0; i < n; from = i) {
		unsigned k = 0;
		for (; i < n; i++) {
			struct probe_syscall *p = probes[i];
			if (!p)
				continue;
			if (p->fd < 0 || p->serial != b->reg_serial[i]) {
				rc[i] = probe_syscall_sample(p, &out[i]);
				continue;
			}
			struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
			if (!sqe)
				break; /* more probes than the ring holds: the rest next round */
			io_uring_prep_read(sqe, (int)i, buf_of(b, i), PROBE__SC_BUF_LEN, 0);
			sqe->flags |= IOSQE_FIXED_FILE | IOSQE_ASYNC;
			sqe->user_data = i;
			k++;
		}
		if (k && collect(b, k, probes, out, rc) < 0) {
			b->leak_bufs = 1;
			drop_ring(b, -EIO);
			b->last_path = PROBE_SC_PATH_PREAD;
			sample_pread(probes, from, n, out, rc);
			return;
		}
	}
}
