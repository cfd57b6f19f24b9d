/*
 * fiberloop_stats.h — the stats writer: publishes a process's loop counters
 * into its shared-memory segment (layout: loopstat_shm.h).
 *
 * The runtime calls this itself (one slot per thread that runs a loop); it
 * is public so that any event loop, not only libfiberloop's, can publish
 * the same counters and be monitored by loopstat.
 */
#ifndef FIBERLOOP_STATS_H
#define FIBERLOOP_STATS_H

#include <stdint.h>
#include <sys/types.h>
#include "loopstat_shm.h"

#ifndef FL_API
#define FL_API __attribute__((visibility("default")))
#endif

struct fl_stats_options {
	const char *dir;        /* segment directory; NULL: $LOOPSTAT_SHM_DIR or /dev/shm */
	mode_t      mode;       /* file mode; 0: $LOOPSTAT_SHM_MODE (octal) or 0600; refused
				 * (-EPERM) with group/other write bits */
	unsigned    slot_count; /* 0: LOOPSTAT_SHM_DEFAULT_SLOTS */
};

/*
 * Creates this process's segment "<dir>/loopstat.<pid>.<16 random hex
 * digits>": built under a hidden name opened O_EXCL, then renamed without
 * replacing anything, so no other user can claim the name first and no
 * reader sees it half-made. Idempotent: a second call returns 0.
 * Called implicitly (with defaults) by the first fl_stats_slot_acquire().
 * The segment is unlinked at normal exit or by fl_stats_close().
 * Returns 0 or -errno: -EINVAL for a LOOPSTAT_SHM_MODE that is not octal
 * digits for a mode 0..0777 readable by its owner, -EPERM for a mode with
 * group/other write bits. On any failure the process's loops keep running
 * with private slots (unpublished), and the first failure is reported once
 * on stderr ("libfiberloop: stats segment not published, ...").
 */
FL_API int fl_stats_open(const struct fl_stats_options *opts);

/* Unlinks the segment. Slots handed out stay writable but are no longer
 * published (their memory becomes private). */
FL_API void fl_stats_close(void);

/* Path of the open segment, or NULL. Borrowed; valid until fl_stats_close(). */
FL_API const char *fl_stats_path(void);

/*
 * Takes a slot for the calling thread: state ACTIVE, tid, backend, wait_fd,
 * thread tag (may be NULL), fresh generation, all values zero. Prefers a
 * never-used slot, then the oldest exited one. Thread-safe.
 * Returns the slot, or NULL with errno set (ENOSPC when all are active).
 */
FL_API struct loopstat_shm_slot *fl_stats_slot_acquire(const char *tag, enum loopstat_backend backend,
						       int wait_fd);

/* Marks the slot EXITED, keeping its last values for the monitor. */
FL_API void fl_stats_slot_release(struct loopstat_shm_slot *slot);

/*
 * Returns 1 + the index of `tag` in the slot's tag table, adding it if new,
 * or 0 when the table is full or tag is NULL/empty. Only the slot's owner
 * thread may call it. Not for the hot path: call it when a fiber is tagged.
 */
FL_API unsigned fl_stats_tag_index(struct loopstat_shm_slot *slot, const char *tag);

/*
 * Hot-path updates. Each slot has one writer, so a relaxed load + store is
 * enough; the atomics only keep a concurrent reader from seeing torn values.
 */
static inline void fl_stat_add(uint64_t *field, uint64_t n)
{
	__atomic_store_n(field, __atomic_load_n(field, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static inline void fl_stat_set(uint64_t *field, uint64_t v)
{
	__atomic_store_n(field, v, __ATOMIC_RELAXED);
}

#endif /* FIBERLOOP_STATS_H */
