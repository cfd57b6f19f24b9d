/*
 * probe_shm.h — reading loopstat shared-memory segments (loopstat_shm.h).
 *
 * A segment is opened through an opaque handle that validates it once
 * (magic, byte order, ABI major, every size and offset against the file
 * size, the writer's pid, owner and start time) and then reads consistent
 * snapshots of its slots with pread(2). pread is used rather than a
 * mapping so that a writer truncating its file can cause an error, never
 * a SIGBUS in the monitor.
 */
#ifndef PROBE_SHM_H
#define PROBE_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "loopstat_shm.h"

/* Index of each published value in probe_shm_worker.values, in ABI order. */
enum probe_shm_value {
#define PROBE_X_ENUM(name, kind, unit, desc) PROBE_SHM_##name,
	LOOPSTAT_SLOT_VALUES(PROBE_X_ENUM)
#undef PROBE_X_ENUM
	PROBE_SHM_NVALUES
};

struct probe_shm_value_info {
	const char *name;             /* as in the ABI table: JSON key, graphite leaf */
	enum loopstat_value_kind kind;
	const char *unit;
	const char *desc;
};

/* The ABI's value table, PROBE_SHM_NVALUES entries. */
extern const struct probe_shm_value_info probe_shm_values[PROBE_SHM_NVALUES];

/* One slot, copied out of a segment. */
struct probe_shm_worker {
	pid_t    pid;
	pid_t    tid;
	uint32_t state;                  /* enum loopstat_slot_state */
	uint32_t backend;                /* enum loopstat_backend */
	int      wait_fd;                /* -1 if none */
	uint64_t generation;             /* changes when the slot is reused */
	char     tag[LOOPSTAT_TAG_LEN];  /* thread tag, NUL-terminated */
	char     fiber_tag[LOOPSTAT_TAG_LEN]; /* tag of the running fiber, "" if none */
	uint64_t values[PROBE_SHM_NVALUES];
};

struct probe_shm;

/* The segment directory: $LOOPSTAT_SHM_DIR, else /dev/shm. Borrowed. */
const char *probe_shm_dir(void);

/*
 * Opens and validates a segment. Returns 0 and a handle, or:
 *  -ENOENT/-EACCES  the file cannot be opened;
 *  -EBADMSG         not a loopstat segment, or sizes/offsets inconsistent
 *                   with the file (truncated, garbage);
 *  -EPROTONOSUPPORT unknown ABI major or foreign byte order;
 *  -EAGAIN          the writer has not finished the header (ready != 1);
 *  -ESRCH           the writer process is gone;
 *  -ESTALE          the pid was reused (start time differs);
 *  -EPERM           the file's owner is not the owner of the process it
 *                   names (another user must not fake a worker).
 */
int probe_shm_open(const char *path, struct probe_shm **out);
void probe_shm_close(struct probe_shm *shm);

pid_t probe_shm_pid(const struct probe_shm *shm);
const char *probe_shm_path(const struct probe_shm *shm);
uint16_t probe_shm_abi_minor(const struct probe_shm *shm);

/* Re-checks that the writer is the same live process: 0, -ESRCH or -ESTALE. */
int probe_shm_check_writer(const struct probe_shm *shm);

/*
 * Copies the ACTIVE slots (and EXITED ones too if include_exited) into
 * out[0..max). Returns the number of slots found (which may exceed max:
 * only max are copied) or -errno: -EBADMSG when the file shrank below its
 * validated size, -EAGAIN when the writer kept changing its slot table.
 */
int probe_shm_read(struct probe_shm *shm, struct probe_shm_worker *out, size_t max, int include_exited);

/*
 * Calls fn for every "loopstat.<pid>" file in dir (NULL: probe_shm_dir()),
 * with its path and pid; a non-zero return from fn stops the scan and is
 * returned. Returns 0, that value, or -errno if dir cannot be read.
 */
int probe_shm_scan(const char *dir, int (*fn)(const char *path, pid_t pid, void *arg), void *arg);

/* "io_uring", "libev" or "none". */
const char *probe_shm_backend_name(uint32_t backend);

#endif /* PROBE_SHM_H */
