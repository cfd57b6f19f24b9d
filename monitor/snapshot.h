/*
 * snapshot.h — one reading of every instrumented worker: the slots of all
 * readable segments whose process matches the targets.
 */
#ifndef LOOPSTAT_SNAPSHOT_H
#define LOOPSTAT_SNAPSHOT_H

#include "probe_shm.h"
#include "probe_stat.h"
#include "targets.h"

struct snap_worker {
	char name[PROBE_COMM_LEN];       /* process comm */
	struct probe_shm_worker shm;     /* pid, tid, tags, values */
};

struct snapshot {
	struct snap_worker *workers;     /* owned, sorted by (pid, tid) */
	size_t n, cap;
	unsigned skipped;                /* segments rejected (stale, foreign, garbage) */
};

/* Reads every segment in dir (NULL: default). Returns 0 or -errno
 * (-ENOENT when the directory does not exist is not an error: empty). */
int snapshot_take(struct snapshot *s, const char *dir, const struct targets *t);
void snapshot_done(struct snapshot *s);

#endif /* LOOPSTAT_SNAPSHOT_H */
