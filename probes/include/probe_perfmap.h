/*
 * probe_perfmap.h — names of a process's JIT code from its perf map.
 *
 * JIT runtimes write one line per compiled function to /tmp/perf-PID.map
 * ("START SIZE NAME", hex): node with --perf-basic-prof, Python 3.12+ with
 * -X perf, a JVM with perf-map-agent. The file is found through the
 * target's own root (<proc root>/PID/root/tmp/perf-NSPID.map, NSPID its pid
 * in its own namespace) and is hostile input: each component is opened
 * without following links, the file must be a regular file owned by the
 * target's user or root, and what is read is bounded (bytes, entries, name
 * length) with names cleaned of control bytes. It is read again when it
 * grows (new lines only), at most once a second.
 *
 * A struct probe_perfmap caches a few processes' maps and belongs to one
 * thread.
 */
#ifndef PROBE_PERFMAP_H
#define PROBE_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROBE_PERFMAP_FILE_MAX    (64u << 20) /* bytes of one map read, at most */
#define PROBE_PERFMAP_ENTRIES_MAX 262144      /* entries kept per process */
#define PROBE_PERFMAP_NAME_MAX    400         /* bytes of one name kept */

struct probe_perfmap;

/* NULL with errno set. */
struct probe_perfmap *probe_perfmap_new(void);
void probe_perfmap_delete(struct probe_perfmap *m);

/* The entry of pid's perf map covering addr (the newest where entries
 * overlap): 1 with *name (borrowed, valid until the next call on m) and
 * *offset (addr minus the entry's start), 0 when pid has no usable map or
 * none covers addr, -ENOMEM. */
int probe_perfmap_lookup(struct probe_perfmap *m, pid_t pid, uint64_t addr, const char **name, uint64_t *offset);

/* Why pid's map is not used, after a lookup: 0 in use or none there,
 * -ELOOP a link, -EPERM not a regular file of the target's user or root,
 * -EFBIG over the byte or entry bound (what was read is still used). */
int probe_perfmap_status(const struct probe_perfmap *m, pid_t pid);

/* Drops pid's map (the process is gone). */
void probe_perfmap_forget(struct probe_perfmap *m, pid_t pid);

#endif /* PROBE_PERFMAP_H */
