/*
 * shm_int.h — what the segment reader (shm.c) and the directory scan with
 * its cache of rejected files (shm_scan.c) share.
 */
#ifndef PROBE_SHM_INT_H
#define PROBE_SHM_INT_H

#include <sys/types.h>

/* Longest random suffix accepted in "loopstat.<pid>.<suffix>". */
#define SHM_SUFFIX_MAX 32

/*
 * pid from a segment file name (a path's last component): "loopstat.<pid>"
 * (the legacy name of older writers: *suffixed = 0) or "loopstat.<pid>.<suffix>",
 * suffix 1..SHM_SUFFIX_MAX letters and digits (*suffixed = 1). -1 if neither.
 */
pid_t shm_name_pid(const char *name, int *suffixed);

/*
 * Remembers that the file (dev, ino) named `name` (a path; its last
 * component is used) is not a live segment, so that scans skip it without a
 * system call: for good under a suffixed name (a writer publishes those
 * complete and never re-uses them), for LEGACY_TTL_NS under a legacy one.
 * Does nothing when the cache is full.
 */
void shm_cache_reject(dev_t dev, ino_t ino, const char *name);

#endif /* PROBE_SHM_INT_H */
