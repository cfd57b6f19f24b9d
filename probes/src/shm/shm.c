/*
 * shm.c — validated reader of loopstat segments: a guarded read-only
 * mapping (shm_map.c) for the per-tick hot fields and, once the hot reads
 * have made it, for the slot table; pread before that and for a segment
 * that cannot be (or no longer is) mapped.
 */
#include "probe_shm.h"
#include "probe_proc.h"
#include "probe_stat.h"
#include "shm_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const struct probe_shm_value_info probe_shm_values[PROBE_SHM_NVALUES] = {
#define PROBE_X_INFO(n, k, u, d) { #n, k, u, d },
	LOOPSTAT_SLOT_VALUES(PROBE_X_INFO)
#undef PROBE_X_INFO
};

/* The smallest header and slot that ABI major 1 can have: minor 0's (the
 * slot grew at minor 2; what an older writer's slot lacks reads as 0). */
#define MIN_HEADER_SIZE offsetof(struct loopstat_shm_header, reserved)
#define MIN_SLOT_SIZE   ((offsetof(struct loopstat_shm_slot, span_h0) + 63) / 64 * 64)
_Static_assert(MIN_SLOT_SIZE == 832, "minors 0 and 1 have 832-byte slots");
/* Bounds that keep a hostile header from making us allocate or read much. */
#define MAX_HEADER_SIZE (64u * 1024)
#define MAX_SLOT_SIZE   (64u * 1024)
#define MAX_SLOTS       65536u
#define MAX_SEGMENT     (64u * 1024 * 1024)
#define READ_RETRIES    4
#define CHUNK_BYTES     (8u * 1024)   /* slots copied per pread */
#define REJECT_SLACK    64u           /* refused ACTIVE slots beyond the thread count before a read stops */

struct probe_shm {
	int      fd;
	pid_t    pid;
	uid_t    owner;
	dev_t    dev;
	ino_t    ino;
	uint64_t start_time;
	uint16_t abi_minor;
	uint32_t header_size;  /* geometry validated at open, never re-read */
	uint32_t slot_size;
	uint32_t slot_count;
	size_t   size;         /* header_size + slot_count * slot_size */
	char    *chunk;        /* owned: the header and a run of slots */
	size_t   slots_per_chunk;
	pid_t   *tids;         /* owned: the writer's threads, sorted, as last listed */
	char    *claimed;      /* owned, parallel to tids: taken by a slot in this read */
	size_t   ntids, tidcap;
	uint64_t tids_ns;      /* CLOCK_MONOTONIC when tids was listed; 0: never */
	uint64_t miss_ns;      /* when it was last listed for a tid it lacked; 0: never */
	uint64_t tid_loads;    /* listings of /proc/PID/task, for tests */
	struct shm_writer_memo writer; /* what the writer checks remember */
	struct probe_shm_read_info last;
	struct shm_map map;    /* made at the first probe_shm_read_hot; table reads use it once made */
	struct shm_quiet quiet; /* the last read, reused while nothing in it can have changed */
	char     path[PATH_MAX];
};

const char *probe_shm_dir(void)
{
	const char *env = getenv(LOOPSTAT_SHM_DIR_ENV);
	return env && *env ? env : LOOPSTAT_SHM_DEFAULT_DIR;
}

const char *probe_shm_backend_name(uint32_t backend)
{
	switch (backend) {
	case LOOPSTAT_BACKEND_IO_URING: return "io_uring";
	case LOOPSTAT_BACKEND_LIBEV: return "libev";
	default: return "none";
	}
}

int probe_shm_check_header(const struct loopstat_shm_header *h, size_t file_size)
{
	if (h->magic != LOOPSTAT_SHM_MAGIC)
		return -EBADMSG;
	if (h->byte_order != LOOPSTAT_SHM_BYTE_ORDER || h->abi_major != LOOPSTAT_SHM_ABI_MAJOR)
		return -EPROTONOSUPPORT;
	if (__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE) != 1)
		return -EAGAIN;
	if (h->header_size < MIN_HEADER_SIZE || h->header_size > MAX_HEADER_SIZE ||
	    h->slot_size < MIN_SLOT_SIZE || h->slot_size > MAX_SLOT_SIZE ||
	    h->slot_count == 0 || h->slot_count > MAX_SLOTS || h->pid <= 0)
		return -EBADMSG;
	uint64_t need = (uint64_t)h->header_size + (uint64_t)h->slot_count * h->slot_size;
	if (need > file_size || need > MAX_SEGMENT)
		return -EBADMSG;
	return 0;
}

/*
 * Whether a refusal holds for the file for good. A suffixed name is
 * published complete, so any of these does; a legacy writer may be caught
 * between creating its file and writing the header, which takes it
 * microseconds: bad contents count only in a file older than a second.
 */
static int permanent(int err, int suffixed, const struct stat *st)
{
	if (err == -EBADMSG || err == -EAGAIN) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		return suffixed || (st->st_mtim.tv_sec + 1 < now.tv_sec && st->st_ctim.tv_sec + 1 < now.tv_sec);
	}
	return err == -EPROTONOSUPPORT || err == -ESRCH || err == -ESTALE || err == -EPERM || err == -EACCES ||
	       err == -ENOLINK || err == -ELOOP;
}

static int open_checked(const char *path, struct probe_shm **out, struct stat *st)
{
	struct loopstat_shm_header h;
	int err, suffixed = 0;

	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		err = -errno;
		goto close_fd;
	}
	err = -EBADMSG;
	if (!S_ISREG(st->st_mode) || (size_t)st->st_size < MIN_HEADER_SIZE)
		goto close_fd;
	memset(&h, 0, sizeof(h));
	if (pread(fd, &h, sizeof(h), 0) < (ssize_t)MIN_HEADER_SIZE)
		goto close_fd;
	if ((err = probe_shm_check_header(&h, (size_t)st->st_size)) < 0)
		goto close_fd;
	err = -EBADMSG;
	pid_t named = shm_name_pid(path, &suffixed);
	if (named > 0 && named != h.pid)
		goto close_fd;
	/* the writer's /proc files held from the first check on: every check of
	 * the handle then reads the process this one validated (its start
	 * time, owner and mapping), never a newcomer under the same pid */
	struct shm_writer_memo memo = SHM_WRITER_MEMO_INIT;
	shm_writer_hold(&memo, h.pid);
	/* a suffixed name is published only once mapped; a legacy one may be
	 * caught before, and probe_shm_check_writer() checks it later */
	if ((err = shm_check_writer(h.pid, h.start_time, st->st_uid, st->st_dev, st->st_ino, suffixed, &memo)) < 0)
		goto release_memo;

	struct probe_shm *shm = calloc(1, sizeof(*shm));
	if (!shm) {
		err = -ENOMEM;
		goto release_memo;
	}
	shm->slots_per_chunk = h.slot_size >= CHUNK_BYTES ? 1 : CHUNK_BYTES / h.slot_size;
	shm->chunk = malloc(h.header_size + shm->slots_per_chunk * h.slot_size);
	if (!shm->chunk) {
		err = -ENOMEM;
		goto free_shm;
	}
	shm->fd = fd;
	shm->pid = h.pid;
	shm->owner = st->st_uid;
	shm->dev = st->st_dev;
	shm->ino = st->st_ino;
	shm->start_time = h.start_time;
	shm->writer = memo;
	shm->abi_minor = h.abi_minor;
	shm->header_size = h.header_size;
	shm->slot_size = h.slot_size;
	shm->slot_count = h.slot_count;
	shm->size = h.header_size + (size_t)h.slot_count * h.slot_size;
	snprintf(shm->path, sizeof(shm->path), "%s", path);
	*out = shm;
	return 0;

free_shm:
	free(shm);
release_memo:
	shm_writer_release(&memo);
close_fd:
	close(fd);
	return err;
}

int probe_shm_open(const char *path, struct probe_shm **out)
{
	struct stat st;
	int suffixed = 0;
	*out = NULL;
	int err = open_checked(path, out, &st);
	if ((err == -EACCES || err == -ELOOP) && lstat(path, &st) < 0)
		return err;
	if (err < 0 && shm_name_pid(path, &suffixed) > 0 && permanent(err, suffixed, &st))
		shm_cache_reject(st.st_dev, st.st_ino, path);
	return err;
}

void probe_shm_close(struct probe_shm *shm)
{
	if (!shm)
		return;
	shm_map_close(&shm->map);
	shm_writer_release(&shm->writer);
	close(shm->fd);
	free(shm->chunk);
	free(shm->tids);
	free(shm->claimed);
	free(shm);
}

uint16_t probe_shm_abi_minor(const struct probe_shm *shm) { return shm->abi_minor; }

int probe_shm_check_writer(struct probe_shm *shm)
{
	return shm_check_writer(shm->pid, shm->start_time, shm->owner, shm->dev, shm->ino, 1, &shm->writer);
}

int probe_shm_stale(const char *path, pid_t pid)
{
	struct probe_stat st;
	int err = probe_stat_read(pid, 0, &st);
	if (err == -ESRCH || err == -EINVAL)
		return -ESRCH;
	if (err)
		return 0;
	struct probe_shm *shm;
	if ((err = probe_shm_open(path, &shm)) == 0) {
		err = probe_shm_check_writer(shm);
		probe_shm_close(shm);
	}
	return err == -ESRCH || err == -ESTALE || err == -ENOLINK ? err : 0;
}

const char *probe_shm_stale_why(int err)
{
	switch (err) {
	case -ESRCH: return "is gone";
	case -ESTALE: return "was reused";
	case -ENOLINK: return "no longer maps it";
	default: return NULL;
	}
}

/* The generation that closes a pass: through the mapping when the pass
 * went through it. */
static int read_generation(struct probe_shm *shm, uint64_t *gen)
{
	if (shm->map.state == SHM_MAP_ON)
		return shm_map_generation(&shm->map, 1, gen);
	ssize_t n = pread(shm->fd, gen, sizeof(*gen), offsetof(struct loopstat_shm_header, generation));
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*gen) ? 0 : -EBADMSG;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

static int add_tid(struct probe_shm *shm, pid_t tid)
{
	if (shm->ntids == shm->tidcap) {
		size_t cap = shm->tidcap ? shm->tidcap * 2 : 16;
		pid_t *nt = realloc(shm->tids, cap * sizeof(*nt));
		if (nt)
			shm->tids = nt;
		char *nc = nt ? realloc(shm->claimed, cap) : NULL;
		if (!nc)
			return -ENOMEM;
		shm->claimed = nc;
		shm->tidcap = cap;
	}
	shm->tids[shm->ntids++] = tid;
	return 0;
}

/*
 * The writer's threads now, from /proc/PID/task, sorted; at most
 * PROBE_SHM_MAX_TIDS (a slot naming another is rejected). getdents64 into
 * a buffer on the stack: a read allocates nothing once the table has
 * grown to the writer's thread count.
 */
static int load_tids(struct probe_shm *shm, uint64_t now)
{
	char path[PATH_MAX];
	char buf[4096] __attribute__((aligned(8)));
	int err;
	shm->ntids = 0;
	shm->tids_ns = 0;
	shm->tid_loads++;
	if ((err = probe_proc_path(path, sizeof(path), "%d/task", (int)shm->pid)) < 0)
		return err;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t n;
	err = 0;
	while (!err && shm->ntids < PROBE_SHM_MAX_TIDS && (n = getdents64(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n && !err && shm->ntids < PROBE_SHM_MAX_TIDS;) {
			struct dirent64 *de = (struct dirent64 *)(buf + off);
			off += de->d_reclen;
			char *end;
			long t = strtol(de->d_name, &end, 10);
			if (*end || t <= 0 || t > INT_MAX)
				continue;
			err = add_tid(shm, (pid_t)t);
		}
	}
	close(fd);
	if (err)
		return err;
	qsort(shm->tids, shm->ntids, sizeof(*shm->tids), cmp_pid);
	if (shm->ntids)
		memset(shm->claimed, 0, shm->ntids);
	shm->tids_ns = now;
	return 0;
}

/*
 * Whether an ACTIVE slot's tid is a thread of the writer as last listed;
 * each thread can be claimed by one slot per read (a forged table repeats
 * tids). A positive tid not in the list sets *missed: it may be a thread
 * born since (probe_shm_read lists again).
 */
static int claim_tid(struct probe_shm *shm, pid_t tid, int *missed)
{
	if (tid <= 0)
		return 0;
	pid_t *t = bsearch(&tid, shm->tids, shm->ntids, sizeof(*shm->tids), cmp_pid);
	if (!t)
		*missed = 1;
	if (!t || shm->claimed[t - shm->tids])
		return 0;
	shm->claimed[t - shm->tids] = 1;
	return 1;
}

static void copy_tag(char *dst, const struct loopstat_shm_tag *t)
{
	uint32_t len = t->len < LOOPSTAT_TAG_LEN ? t->len : LOOPSTAT_TAG_LEN - 1;
	memcpy(dst, t->name, len);
	dst[len] = '\0';
}

static void copy_worker(const struct probe_shm *shm, const struct loopstat_shm_slot *s,
			struct probe_shm_worker *w)
{
	memset(w, 0, sizeof(*w));
	w->pid = shm->pid;
	w->tid = s->tid;
	w->state = s->state;
	w->backend = s->backend;
	w->wait_fd = s->wait_fd;
	w->generation = s->generation;
	memcpy(w->tag, s->tag, sizeof(w->tag));
	w->tag[sizeof(w->tag) - 1] = '\0';
#define PROBE_X_COPY(n, k, u, d) w->values[PROBE_SHM_##n] = s->n;
	LOOPSTAT_SLOT_VALUES(PROBE_X_COPY)
#undef PROBE_X_COPY
	/* an older minor's writer left what is now its later fields as padding */
	if (shm->abi_minor < 1)
		w->values[PROBE_SHM_poll_since_ns] = 0;
	if (shm->abi_minor < 2)
		memset(&w->values[PROBE_SHM_span_h0], 0, LOOPSTAT_SPAN_BUCKETS * sizeof(w->values[0]));
	uint64_t ti = s->current_tag;
	if (ti >= 1 && ti <= LOOPSTAT_TAG_MAX)
		copy_tag(w->fiber_tag, &s->tags[ti - 1]);
}

/*
 * One consistent pass over the slot table: the header generation (a
 * seqlock, odd while the writer resets a slot) is even and unchanged
 * around it. Slots are read in chunks up to the first never-used one (a
 * writer takes the lowest free slot, so none after it was ever used) and
 * at most PROBE_SHM_READ_BUDGET bytes: a huge or sparse segment costs no
 * more than that, and nothing is allocated per read.
 *
 * Mapped, the generation is loaded first and each slot's known part is
 * copied straight from the mapping; the runs and the budget stay as the
 * pread path counts them, so that both paths return the same.
 */
static int read_pass(struct probe_shm *shm, struct probe_shm_worker *out, size_t max, int include_exited,
		     uint64_t *gen, int *found, int *missed)
{
	size_t per = shm->slots_per_chunk;
	/* the first run, sized for the slots used last time and the free one
	 * that ends them: a one-thread writer costs two slots' copy, not a
	 * chunk's (the sampler reads every segment ten times a second) */
	size_t first = shm->last.slots + 1 < per ? shm->last.slots + 1 : per;
	int err, mapped = shm->map.state == SHM_MAP_ON;
	*found = 0;
	*missed = 0;
	memset(&shm->last, 0, sizeof(shm->last));
	if (shm->ntids)
		memset(shm->claimed, 0, shm->ntids);
	if (mapped) {
		if ((err = shm_map_generation(&shm->map, 0, gen)) < 0)
			return err;
		if (*gen % 2)
			return -EAGAIN;
	}
	for (uint32_t i = 0; i < shm->slot_count;) {
		size_t want = i == 0 ? first : per;
		size_t n = shm->slot_count - i < want ? shm->slot_count - i : want;
		size_t len = n * shm->slot_size;
		if (shm->last.bytes + len > PROBE_SHM_READ_BUDGET) {
			shm->last.over_budget = 1;
			return 0;
		}
		/* the first run comes with the header, and so with the
		 * generation the pass is checked against: one call fewer in
		 * the window */
		size_t head = i == 0 ? shm->header_size : 0;
		size_t run = shm->header_size + (size_t)i * shm->slot_size;
		if (!mapped) {
			ssize_t got = pread(shm->fd, shm->chunk, head + len, i == 0 ? 0 : (off_t)run);
			if (got < 0)
				return -errno;
			if ((size_t)got < head + len)
				return -EBADMSG;
			if (i == 0) {
				memcpy(gen, shm->chunk + offsetof(struct loopstat_shm_header, generation),
				       sizeof(*gen));
				if (*gen % 2)
					return -EAGAIN;
			}
		}
		shm->last.bytes += len;
		for (size_t j = 0; j < n; j++) {
			/* slot_size may exceed our struct (newer minor): copy our
			 * part only; or fall short of it (older minor): the rest is 0 */
			struct loopstat_shm_slot sl;
			size_t part = shm->slot_size < sizeof(sl) ? shm->slot_size : sizeof(sl);
			if (part < sizeof(sl))
				memset((char *)&sl + part, 0, sizeof(sl) - part);
			if (!mapped)
				memcpy(&sl, shm->chunk + head + j * shm->slot_size, part);
			else if ((err = shm_map_copy(&shm->map, run + j * shm->slot_size, part, &sl)) < 0)
				return err;
			if (sl.state == LOOPSTAT_SLOT_FREE)
				return 0;
			shm->last.slots++;
			if (sl.state == LOOPSTAT_SLOT_ACTIVE) {
				if (!claim_tid(shm, sl.tid, missed)) {
					/* a writer has at most one ACTIVE slot per live
					 * thread: far more refusals than threads is a
					 * forged table, not worth reading to its end */
					if (++shm->last.rejected > shm->ntids + REJECT_SLACK) {
						shm->last.over_budget = 1;
						return 0;
					}
					continue;
				}
			} else if (!(include_exited && sl.state == LOOPSTAT_SLOT_EXITED)) {
				continue;
			}
			if ((size_t)*found < max) {
				copy_worker(shm, &sl, &out[*found]);
				out[*found].slot = i + (uint32_t)j;
			}
			(*found)++;
		}
		i += (uint32_t)n;
	}
	return 0;
}

/* One consistent read of the slot table against the current tid list;
 * *missed: a slot named a tid not in it. */
static int read_consistent(struct probe_shm *shm, struct probe_shm_worker *out, size_t max, int include_exited,
			   int *missed)
{
	for (int attempt = 0; attempt < READ_RETRIES; attempt++) {
		uint64_t before = 0, after;
		int found, err;
		if (attempt)
			sched_yield(); /* the writer is mid-reset: let it finish */
		err = read_pass(shm, out, max, include_exited, &before, &found, missed);
		if (err == -EAGAIN)
			continue;
		if (err < 0)
			return err;
		if ((err = read_generation(shm, &after)) < 0)
			return err;
		if (after == before) {
			int whole = !*missed && !shm->last.rejected && !shm->last.over_budget && !include_exited &&
				    (size_t)found <= max;
			shm_quiet_note(&shm->quiet, after, shm->tids_ns, out, found, whole);
			return found;
		}
	}
	return -EAGAIN;
}

/*
 * The writer's tid list is kept between reads (listing /proc/PID/task at
 * every read of every segment was a sixth of the sampler's time) and
 * listed again:
 *  - when it is TIDS_TTL_NS old, so that exited threads drop out (a slot
 *    naming a thread that exited is accepted that much longer; sampling
 *    it through /proc/PID/task/TID finds it gone, and a reused tid is
 *    another process's, never under PID);
 *  - when a slot names a tid not in it — a thread born since, accepted at
 *    this very read — unless the list was just made by this read, or was
 *    made for a miss less than TIDS_TTL_NS ago: a writer whose slots name
 *    made-up tids makes us list once a second, not at every read, and its
 *    made-up tids are refused against a list at most that old. A new
 *    thread then waits for the next listing, at most TIDS_TTL_NS.
 */
#define TIDS_TTL_NS 1000000000ull

/*
 * A file shrunk below what was validated fails the read, and the mapping
 * is dropped (pread for good). Through pread that is an fstat per read.
 * Mapped, it is an fstat only when the tid list is due (once a second, with
 * the listing's own calls): a cut that leaves a page the read touches past
 * EOF faults, which fails the read and drops the mapping on the spot; a
 * cut inside a page reads zeros from it up to the page's end, which the
 * slot checks read as FREE (state 0, the table ends there) or reject (tid
 * 0), and otherwise as zero values of the slot the cut runs through —
 * no worse than the garbage its owner could write, and seen as a shrink
 * within TIDS_TTL_NS.
 */
static int check_size(struct probe_shm *shm)
{
	struct stat st;
	if (fstat(shm->fd, &st) < 0)
		return -errno;
	if ((size_t)st.st_size < shm->size) {
		shm_map_close(&shm->map);
		return -EBADMSG;
	}
	return 0;
}

int probe_shm_read(struct probe_shm *shm, struct probe_shm_worker *out, size_t max, int include_exited)
{
	uint64_t now = probe_mono_ns();
	int err, listed = 0, due = !shm->tids_ns || now - shm->tids_ns >= TIDS_TTL_NS;
	/* nothing it returned can have changed: the last read's answer. Once
	 * a second the size is checked as ever, and its threads are checked
	 * alive in place of the listing (a thread born since takes a slot,
	 * which moves the generation) */
	struct shm_quiet_geometry geo = { shm->header_size, shm->slot_size, shm->abi_minor >= 1 };
	if (!include_exited && shm_quiet_unchanged(&shm->quiet, &shm->map, &geo)) {
		if (now - shm->quiet.alive_ns < TIDS_TTL_NS)
			return shm_quiet_copy(&shm->quiet, out, max);
		if ((err = check_size(shm)) < 0)
			return err;
		if (shm_quiet_alive(&shm->quiet, shm->pid)) {
			shm->quiet.alive_ns = now;
			return shm_quiet_copy(&shm->quiet, out, max);
		}
	}
	if ((shm->map.state != SHM_MAP_ON || due) && (err = check_size(shm)) < 0)
		return err;
	/* the writer's threads, listed before and not inside the seqlock window,
	 * which should hold nothing slower than the copies */
	if (due) {
		if ((err = load_tids(shm, now)) < 0)
			return err;
		listed = 1;
	}
	int missed, found = read_consistent(shm, out, max, include_exited, &missed);
	if (found < 0)
		shm_quiet_forget(&shm->quiet);
	if (found < 0 || !missed || listed || (shm->miss_ns && now - shm->miss_ns < TIDS_TTL_NS))
		return found;
	shm->miss_ns = now;
	if ((err = load_tids(shm, now)) < 0)
		return err;
	return read_consistent(shm, out, max, include_exited, &missed);
}

void probe_shm_last_read(const struct probe_shm *shm, struct probe_shm_read_info *info)
{
	*info = shm->last;
}

/* The checks and copies both hot paths share. */
static int hot_result(const struct probe_shm_worker *w, const struct shm_hot_raw *r, struct probe_shm_hot *hot)
{
	if (r->state != LOOPSTAT_SLOT_ACTIVE || r->tid != w->tid || r->generation != w->generation)
		return -ESTALE;
	hot->poll_since_ns = r->poll_since_ns;
	hot->current_fiber = r->current_fiber;
	hot->fiber_tag[0] = '\0';
	uint64_t ti = r->current_tag;
	hot->tag_index = ti >= 1 && ti <= LOOPSTAT_TAG_MAX ? (uint32_t)ti : 0;
	if (hot->tag_index)
		copy_tag(hot->fiber_tag, &r->tag);
	return 0;
}

/* One pread of the slot's head at byte offset off, up to poll_since_ns:
 * the path for a segment that cannot be (or no longer is) mapped. */
static int read_hot_pread(struct probe_shm *shm, size_t off, struct shm_hot_raw *r)
{
	/* the chunk holds at least a header and one slot; a minor-0 writer has
	 * no poll_since_ns, and its padding there means nothing */
	struct loopstat_shm_slot sl;
	size_t len = shm->abi_minor >= 1 ? offsetof(struct loopstat_shm_slot, poll_since_ns) + sizeof(uint64_t)
					 : offsetof(struct loopstat_shm_slot, tags) + sizeof(sl.tags);
	memset(&sl, 0, sizeof(sl));
	ssize_t got = pread(shm->fd, shm->chunk, len, (off_t)off);
	if (got < 0)
		return -errno;
	if ((size_t)got < len)
		return -EBADMSG;
	memcpy(&sl, shm->chunk, len);
	r->state = sl.state;
	r->tid = sl.tid;
	r->generation = sl.generation;
	r->current_fiber = sl.current_fiber;
	r->current_tag = sl.current_tag;
	r->poll_since_ns = sl.poll_since_ns;
	if (sl.current_tag >= 1 && sl.current_tag <= LOOPSTAT_TAG_MAX)
		r->tag = sl.tags[sl.current_tag - 1];
	return 0;
}

/* Maps the segment at the first hot read (a one-shot list never pays for
 * it); whether hot reads go through the mapping. */
static int hot_mapped(struct probe_shm *shm)
{
	if (__builtin_expect(shm->map.state == SHM_MAP_UNTRIED, 0)) {
		struct loopstat_shm_header geo = { .header_size = shm->header_size, .slot_size = shm->slot_size,
						   .slot_count = shm->slot_count, .pid = shm->pid };
		shm_map_open(&shm->map, shm->fd, &geo); /* on failure: pread for good */
	}
	return shm->map.state == SHM_MAP_ON;
}

int probe_shm_read_hot(struct probe_shm *shm, const struct probe_shm_worker *w, struct probe_shm_hot *hot)
{
	if (w->slot >= shm->slot_count || w->pid != shm->pid)
		return -ESTALE;
	/* inside the validated size: slot_size >= MIN_SLOT_SIZE, past poll_since_ns */
	size_t off = shm->header_size + (size_t)w->slot * shm->slot_size;
	struct shm_hot_raw r;
	int err = hot_mapped(shm) ? shm_map_read_hot(&shm->map, off, shm->abi_minor >= 1, &r)
				  : read_hot_pread(shm, off, &r);
	return err < 0 ? err : hot_result(w, &r, hot);
}

void shm_hot_use_pread(struct probe_shm *shm)
{
	shm_map_close(&shm->map);
}

enum shm_map_state shm_hot_map_state(const struct probe_shm *shm)
{
	return shm->map.state;
}

struct shm_recheck_counts shm_recheck_counts(const struct probe_shm *shm)
{
	return (struct shm_recheck_counts){
		.tid_loads = shm->tid_loads,
		.maps_scans = shm->writer.maps_scans,
		.maps_skipped = shm->writer.maps_skipped,
		.quiet_reads = shm->quiet.reused,
		.proc_opens = shm->writer.proc_opens,
		.status_reads = shm->writer.status_reads,
		.stat_reads = shm->writer.stat_reads,
		.stat_skipped = shm->writer.stat_skipped,
		.held = shm->writer.stat_fd >= 0,
		.maps_held = shm->writer.maps_fd >= 0,
	};
}

void shm_recheck_age(struct probe_shm *shm, uint64_t ns)
{
	uint64_t *t = &shm->writer.scanned_ns;
	if (*t) /* 0 means "no scan to rely on": an aged one stays a date */
		*t = *t > ns ? *t - ns : 1;
}
