/*
 * probe_shm.h — reading loopstat shared-memory segments (loopstat_shm.h).
 *
 * A segment is opened through an opaque handle that validates it once
 * (magic, byte order, ABI major, every size and offset against the file
 * size, the writer's pid, owner and start time) and then reads consistent
 * snapshots of its slots with pread(2), and the per-tick hot fields of one
 * slot (probe_shm_read_hot) from a read-only shared mapping, without a
 * system call.
 *
 * SIGBUS: the file's owner can truncate it while it is mapped, and a load
 * from a page then past EOF raises SIGBUS. So at the first mapping libprobes
 * installs a process-wide SIGBUS handler (sigaction, SA_SIGINFO|SA_NODEFER,
 * once). A fault inside one of its guarded loads, in a segment mapping,
 * makes that read fail with -EBADMSG and the segment fall back to pread for
 * good; every other SIGBUS goes to the handler that was installed before
 * (e.g. a sanitizer's), or takes the default action (the process dies of
 * SIGBUS) as if libprobes were not there. An application that installs its
 * own SIGBUS handler after that must chain to the one it replaces, or a
 * truncated segment kills it; segments first hot-read after such a
 * replacement are not mapped (pread).
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
	uint32_t slot;                   /* its index in the segment, for probe_shm_read_hot */
	char     tag[LOOPSTAT_TAG_LEN];  /* thread tag, NUL-terminated */
	char     fiber_tag[LOOPSTAT_TAG_LEN]; /* tag of the running fiber, "" if none */
	uint64_t values[PROBE_SHM_NVALUES];
};

struct probe_shm;

/* The segment directory: $LOOPSTAT_SHM_DIR, else /dev/shm. Borrowed. */
const char *probe_shm_dir(void);

/*
 * Opens and validates a segment. Returns 0 and a handle, or:
 *  -ENOENT/-EACCES  the file cannot be opened (-ELOOP: a symlink);
 *  -EBADMSG         not a loopstat segment, or sizes/offsets inconsistent
 *                   with the file (truncated, garbage), or the pid in the
 *                   name is not the header's;
 *  -EPROTONOSUPPORT unknown ABI major or foreign byte order;
 *  -EAGAIN          the writer has not finished the header (ready != 1);
 *  -ESRCH           the writer process is gone;
 *  -ESTALE          the pid was reused (start time differs);
 *  -EPERM           the file's owner is not the owner of the process it
 *                   names (/proc/PID, real and effective uid): another user
 *                   must not fake a worker;
 *  -ENOLINK         (suffixed names) the process does not map the file: a
 *                   leftover of the image before an execve().
 * A suffixed file refused for any of these (not -ENOENT) is remembered and
 * skipped by later scans of this process without a system call.
 */
int probe_shm_open(const char *path, struct probe_shm **out);
void probe_shm_close(struct probe_shm *shm);

uint16_t probe_shm_abi_minor(const struct probe_shm *shm);

/*
 * Re-checks that the writer is the same live process, still owned by the
 * segment's owner and still mapping it. 0, or -ESRCH (gone, even if its
 * pid names another process by now), -ESTALE (pid reused), -EPERM (owner
 * changed, e.g. after a setuid execve: no longer trusted), -ENOLINK (no
 * longer maps the segment: it execve()d; stale).
 * Costs a pread of /proc/PID/{stat,status}, which the handle holds open
 * from probe_shm_open() on (two descriptors; opened at each check instead
 * when they could not be), and a read of /proc/PID/maps (up to
 * 4 MiB) only when the memory image shown in /proc/PID/stat (code, data,
 * stack and argument bounds, which an execve sets anew) differs from the
 * one the handle's last maps scan found the segment in, cannot be seen, or
 * was scanned 10 s ago. Remembers that in the handle: not thread-safe.
 */
int probe_shm_check_writer(struct probe_shm *shm);

/*
 * For gc: whether the segment file `path` claiming `pid` is stale and may
 * be removed. -ESRCH (the pid is gone: whatever the file holds), -ESTALE
 * (pid reused), -ENOLINK (the process no longer maps it), or 0 (live,
 * foreign or undecidable: keep it).
 */
int probe_shm_stale(const char *path, pid_t pid);
/* "is gone", "was reused", "no longer maps it" for those errors, else NULL. */
const char *probe_shm_stale_why(int err);

/* Bounds of one probe_shm_read(). */
#define PROBE_SHM_READ_BUDGET (1u << 20)  /* bytes of slots read */
#define PROBE_SHM_MAX_TIDS    65536u      /* threads of one writer considered */

/* What the last probe_shm_read() of a handle cost and refused. */
struct probe_shm_read_info {
	unsigned rejected;    /* ACTIVE slots whose tid is not a (distinct) thread of the pid */
	unsigned slots;       /* used slots looked at */
	unsigned over_budget; /* 1: stopped at PROBE_SHM_READ_BUDGET, or after more refused
			       * ACTIVE slots than the writer has threads (+64): later slots unread */
	size_t   bytes;       /* bytes of slots read */
};

/*
 * Copies the ACTIVE slots (and EXITED ones too if include_exited) into
 * out[0..max). An ACTIVE slot is kept only if its tid is a thread of the
 * writer (/proc/PID/task/TID), once per thread; the others are counted in
 * probe_shm_last_read().rejected. The thread list is kept in the handle and
 * listed again when it is a second old, or when a slot names a tid not in
 * it (a new thread is accepted at once) unless it was listed less than a
 * second ago: an exited thread's slot may pass for up to a second, a new
 * thread's slot may wait up to a second. Reads the header's generation and the
 * used slots only (up to the first never-used one, at most
 * PROBE_SHM_READ_BUDGET bytes, and no further than 64 refused ACTIVE slots
 * beyond the writer's thread count). Returns the number of slots found (which
 * may exceed max: only max are copied) or -errno: -EBADMSG when the file
 * shrank below its validated size, -EAGAIN when the writer kept changing
 * its slot table, -ESRCH when the writer is gone.
 */
int probe_shm_read(struct probe_shm *shm, struct probe_shm_worker *out, size_t max, int include_exited);
void probe_shm_last_read(const struct probe_shm *shm, struct probe_shm_read_info *info);

/* The fields of a slot that change at every fiber switch and poll. */
struct probe_shm_hot {
	uint64_t poll_since_ns;          /* 0: not in a blocking poll (always 0 from a minor-0 writer) */
	uint64_t current_fiber;
	uint32_t tag_index;              /* current_tag: 1 + tag table index, 0 if none or out of range */
	char     fiber_tag[LOOPSTAT_TAG_LEN]; /* its tag, "" if none */
};

/*
 * Re-reads the hot fields of the slot that probe_shm_read() returned as w
 * (by w->slot), for a sampler that wants them at every tick rather than
 * at the table's rate: a few loads from the segment's read-only mapping
 * (made at the first call: one fstat and one mmap), no system call, no
 * /proc. A segment that cannot be mapped (or was truncated under it) is
 * read with one pread of the slot's head instead. The slot must still be
 * ACTIVE with w's tid and generation, else -ESTALE (re-read the table).
 * -EBADMSG when the file shrank under the read (a short read, or a SIGBUS
 * caught; never a crash), or -errno. A cut inside the page that holds the
 * fields reads as zeros past it (the kernel clears a cut page's tail) until
 * the next probe_shm_read() sees the file shrunk and drops the mapping.
 * Values are single aligned stores on the writer's side; current_fiber and
 * current_tag may come from two neighbouring switches (the tag is range
 * checked): good enough for attribution of one sample.
 */
int probe_shm_read_hot(struct probe_shm *shm, const struct probe_shm_worker *w, struct probe_shm_hot *hot);

/*
 * Calls fn for every "loopstat.<pid>" and "loopstat.<pid>.<suffix>" file in
 * dir (NULL: probe_shm_dir()), with its path and pid; a negative return
 * from fn stops the scan and is returned, PROBE_SHM_SCAN_LIVE says fn knows
 * the file's writer is alive (an open handle whose writer it checks), so
 * the scan spends no /proc look-up on it. Returns 0, fn's negative value,
 * or -errno if dir cannot be read. Other names cost no system call; a file already
 * refused by probe_shm_open(), or whose pid is gone, is skipped (by its
 * directory entry's inode and name, so without a system call) while it
 * stays listed — a legacy "loopstat.<pid>" for 10 s, then it is re-checked.
 */
#define PROBE_SHM_SCAN_LIVE 1
/* fn did not want the file (not among its targets): no refusal of it */
#define PROBE_SHM_SCAN_UNWANTED 2
int probe_shm_scan(const char *dir, int (*fn)(const char *path, pid_t pid, void *arg), void *arg);

/*
 * probe_shm_scan() for readers of live segments: fn is offered only files
 * that the process they name maps (one read of its /proc/PID/maps per scan
 * serves all the files naming it), and at most a few refused ones per
 * process per run, so a directory flooded with well-formed files that name
 * live processes costs little more than its listing. gc, which removes
 * the files no process maps, scans them all. tick (NULL: none) is called
 * with arg every few tens of microseconds of the scan, and after each call
 * of fn, so that a sampler scanning a huge directory keeps its schedule.
 */
int probe_shm_scan_mapped(const char *dir, int (*fn)(const char *path, pid_t pid, void *arg), void (*tick)(void *arg),
			  void *arg);
struct probe_shm_scan_counts {
	size_t refused;    /* files skipped: their process does not map them, is gone or is closed to us */
	size_t unchecked;  /* files skipped unvalidated: their process's refusals for this run are spent */
};
/* What the last probe_shm_scan_mapped() skipped. */
void probe_shm_scan_counts(struct probe_shm_scan_counts *c);

/*
 * Calls per probe_shm_scan() in this process (0, the default: unlimited).
 * A budgeted scan resumes where the last one stopped, so every file gets
 * its turn. For a sampler re-scanning often; gc wants every file at once.
 */
void probe_shm_scan_budget(size_t max_calls);
/* Files remembered as refused (for tests and figures). */
size_t probe_shm_cache_size(void);

/* The header checks of probe_shm_open() alone (magic, ABI, ready, sizes
 * against file_size): 0 or -EBADMSG/-EPROTONOSUPPORT/-EAGAIN. For fuzzing. */
int probe_shm_check_header(const struct loopstat_shm_header *h, size_t file_size);

/* "io_uring", "libev" or "none". */
const char *probe_shm_backend_name(uint32_t backend);

#endif /* PROBE_SHM_H */
