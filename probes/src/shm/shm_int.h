/*
 * shm_int.h — what the segment reader (shm.c), the writer checks
 * (shm_writer.c), the mapping (shm_map.c) and the directory scan with its
 * cache of rejected files (shm_scan.c) share.
 */
#ifndef PROBE_SHM_INT_H
#define PROBE_SHM_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "loopstat_shm.h"
#include "probe_clock.h"
#include "probe_shm.h"

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

/* A read-only shared mapping of a segment, for the hot and table reads (shm_map.c). */
enum shm_map_state {
	SHM_MAP_UNTRIED = 0,  /* not mapped yet: the first hot read tries (table reads pread) */
	SHM_MAP_ON,           /* mapped: hot and table reads load from it */
	SHM_MAP_OFF,          /* cannot be mapped, or was truncated under it: pread for good */
};

struct shm_map {
	const char *base;        /* owned mapping (PROT_READ, MAP_SHARED), NULL if none */
	size_t      len;         /* bytes mapped: the segment size validated at open */
	enum shm_map_state state;
};

/* The fields a hot read checks and returns, as either path loads them. */
struct shm_hot_raw {
	uint32_t state;
	int32_t  tid;
	uint64_t generation;
	uint64_t current_fiber;
	uint64_t current_tag;
	uint64_t poll_since_ns;         /* 0 from a minor-0 writer */
	struct loopstat_shm_tag tag;    /* tags[current_tag - 1]; only set when that is in range */
};

/*
 * Maps the segment open on fd (read-only) for the geometry in geo, as
 * validated at open (header_size, slot_size, slot_count, pid), after
 * checking the file still holds it and installing the SIGBUS guard (once
 * per process). 0 and m->state SHM_MAP_ON, or -errno and SHM_MAP_OFF:
 * -EINVAL (sizes not 8-byte multiples), -EBADMSG (file shorter than the
 * geometry, or truncated while the header was checked), -ESTALE (the
 * mapped header no longer says the same), -ENOTSUP (the application
 * replaced the SIGBUS handler), or mmap's error.
 */
int shm_map_open(struct shm_map *m, int fd, const struct loopstat_shm_header *geo);
/* Unmaps; state becomes SHM_MAP_OFF. */
void shm_map_close(struct shm_map *m);
/*
 * Loads the hot fields of the slot at byte offset off (the caller checked
 * that the slot lies in the mapping) with relaxed atomic loads, no system
 * call; poll_since_ns only when minor1. 0, or -EBADMSG when the page was
 * past EOF (SIGBUS caught): the mapping is then dropped (SHM_MAP_OFF).
 */
int shm_map_read_hot(struct shm_map *m, size_t off, int minor1, struct shm_hot_raw *r);

/*
 * Copies len bytes at byte offset off of the mapping into dst (a plain
 * copy, under the guard, no system call): 0, -EINVAL when the range is not
 * inside the mapping, or -EBADMSG when a page was past EOF (SIGBUS
 * caught): the mapping is then dropped (SHM_MAP_OFF).
 */
int shm_map_copy(struct shm_map *m, size_t off, size_t len, void *dst);
/*
 * Loads the header generation, the slot table's seqlock: the opening load
 * of a pass with acquire (closing 0), the closing one after an acquire
 * fence (closing 1), so that the copies between them sit inside the two
 * loads as the writer's release increments expect. 0 or -EBADMSG as
 * shm_map_copy.
 */
int shm_map_generation(struct shm_map *m, int closing, uint64_t *gen);

/*
 * The last table read, kept to answer the next one while nothing it
 * returned can have changed (shm_quiet.c). Up to SHM_QUIET_MAX workers:
 * a bigger table is copied each time.
 */
#define SHM_QUIET_MAX 8
struct shm_quiet {
	int      n;           /* workers kept (0: none) */
	int      stable;      /* the read before returned the same: the kept one can be reused */
	uint64_t gen;         /* the slot table generation both were consistent with */
	uint64_t alive_ns;    /* when its threads were last known alive (listed, or signal 0) */
	uint64_t reused;      /* reads answered from it, for tests */
	struct probe_shm_worker w[SHM_QUIET_MAX];
};
struct shm_quiet_geometry {
	uint32_t header_size, slot_size;
	int      minor1;      /* the writer publishes poll_since_ns */
};
/* After a full read checked against the tid list made at listed_ns: keeps
 * it if `reusable` (consistent, complete, no refused slot, not with exited
 * slots) and every worker is in a blocking poll; it becomes reusable once
 * a second read returns the same. */
void shm_quiet_note(struct shm_quiet *q, uint64_t gen, uint64_t listed_ns, const struct probe_shm_worker *w, int n,
		    int reusable);
void shm_quiet_forget(struct shm_quiet *q);
/* 1 when the kept read is reusable and the mapping shows the same
 * generation and every kept slot in the same poll (a few loads), else 0. */
int shm_quiet_unchanged(struct shm_quiet *q, struct shm_map *m, const struct shm_quiet_geometry *geo);
/* 1 when every kept thread is still a thread of pid (signal 0), else 0
 * and the kept read forgotten. */
int shm_quiet_alive(struct shm_quiet *q, pid_t pid);
/* The kept read into out[0..max); its worker count. */
int shm_quiet_copy(struct shm_quiet *q, struct probe_shm_worker *out, size_t max);

/* Makes a handle's hot and table reads use pread for good (tests and benches compare
 * the two paths with it). */
struct probe_shm;
void shm_hot_use_pread(struct probe_shm *shm);
/* The handle's mapping state, for tests. */
enum shm_map_state shm_hot_map_state(const struct probe_shm *shm);

/* What the writer checks of one segment remember between calls. */
struct shm_writer_memo {
	uint64_t image[10];    /* PROBE_STAT_IMAGE_FIELDS of /proc/PID/stat, read before the last
				* maps scan that found the segment */
	uint64_t scanned_ns;   /* CLOCK_MONOTONIC of that scan; 0: none to rely on */
	int      stat_fd;      /* owned: /proc/PID/stat held open by shm_writer_hold; -1: opened per check */
	int      status_fd;    /* owned: /proc/PID/status, likewise */
	int      dir_fd;       /* owned: /proc/PID (O_DIRECTORY), likewise: its fstat gives the euid */
	int      maps_fd;      /* owned: the /proc/PID/maps of that scan, bound to the mm it read
				* (see shm_check_writer); -1: none */
	uint64_t maps_scans;   /* /proc/PID/maps scans done, and skipped: for tests */
	uint64_t maps_skipped;
	uint64_t proc_opens;   /* opens of /proc/PID/stat, status and /proc/PID, held or per check: for tests */
	uint64_t status_reads; /* reads of /proc/PID/status (pread or open): for tests */
	uint64_t stat_reads;   /* reads of /proc/PID/stat, and checks that read none (the mm held): for tests */
	uint64_t stat_skipped;
};

/* A memo that holds nothing yet (fd 0 is a valid descriptor: never {0}). */
#define SHM_WRITER_MEMO_INIT { .stat_fd = -1, .status_fd = -1, .dir_fd = -1, .maps_fd = -1 }

/*
 * Opens /proc/PID/stat and /proc/PID/status for the checks to pread, and
 * /proc/PID for them to fstat, instead of opening the files at every check;
 * before the first check, so that every check reads the process that one
 * validated. Only on procfs (a fixture tree pins nothing); on any failure
 * (EMFILE, ENFILE, ...) nothing is held and the checks open the files each
 * time, as they always did.
 */
void shm_writer_hold(struct shm_writer_memo *memo, pid_t pid);
/* Closes what shm_writer_hold opened, and the held maps; the memo then holds nothing. */
void shm_writer_release(struct shm_writer_memo *memo);

/*
 * The writer of the segment (dev, ino) owned by `owner` must be the live
 * process pid with that start time, owned by `owner`, and, if `mapped`,
 * map the file (skipped while its memory image is the one a former scan
 * saw it in: memo; and /proc/PID/stat too while the mm that scan read
 * lives). Reads the held files when memo holds them.
 * 0, or -ESRCH, -ESTALE, -EPERM, -ENOLINK, -EACCES.
 */
int shm_check_writer(pid_t pid, uint64_t start_time, uid_t owner, dev_t dev, ino_t ino, int mapped,
		     struct shm_writer_memo *memo);

/* "start-end perms offset MAJ:MIN inode path", one line of /proc/PID/maps: 0 or -EINVAL. */
int shm_maps_line(const char *line, unsigned *maj, unsigned *min, unsigned long long *ino);
/*
 * Calls fn for each file mapping (inode not 0) of the maps text read from
 * fd, until fn returns non-zero: 1 then, 0 at the end, -ENOLINK past the
 * first MAPS_BUDGET bytes (a process that large is no writer we check), or
 * read's -errno.
 */
int shm_maps_walk(int fd, int (*fn)(unsigned maj, unsigned min, unsigned long long ino, void *arg), void *arg);

/*
 * What the pids that segment files name map, for one scan (shm_owners.c):
 * a writer maps its segment before it publishes it under a suffixed name,
 * so a file its named process does not map is no live segment, and a scan
 * can tell that from one read of that process's maps, however many files
 * name it. Per run, each owner also gets at most SHM_OWNER_REFUSALS refused
 * validations of files it does map.
 */
enum shm_offer {
	SHM_OFFER,          /* validate it */
	SHM_OFFER_UNMAPPED, /* its process does not map it (as of this scan's read of its maps) */
	SHM_OFFER_DEAD,     /* its process is gone, or its maps are closed to us: no writer check can pass */
	SHM_OFFER_CAPPED,   /* its owner's refusals are spent, or no room to track it */
};
#define SHM_OWNER_REFUSALS 8
/* Starts a scan of the directory on dev: maps are read anew once per scan. */
void shm_owners_begin(dev_t dev);
/* Whether to validate the file ino named after pid. */
enum shm_offer shm_owners_offer(pid_t pid, ino_t ino);
/* A validation of a file named after pid refused it. */
void shm_owners_refused(pid_t pid);
/* Forgets everything (tests). */
void shm_owners_reset(void);

/* What a handle's reads and checks cost in /proc, for tests. */
struct shm_recheck_counts {
	uint64_t tid_loads;     /* listings of /proc/PID/task */
	uint64_t maps_scans;    /* reads of /proc/PID/maps, at open and by probe_shm_check_writer */
	uint64_t maps_skipped;  /* checks that skipped it: the image had not changed */
	uint64_t quiet_reads;   /* table reads answered from the last one (shm_quiet.c) */
	uint64_t proc_opens;    /* opens of /proc/PID/stat, status and /proc/PID by the writer checks */
	uint64_t status_reads;  /* reads of /proc/PID/status by the writer checks */
	uint64_t stat_reads;    /* reads of /proc/PID/stat by the writer checks */
	uint64_t stat_skipped;  /* checks that read none: the held maps' mm still lives */
	int      held;          /* whether the checks pread held files (else: open per check) */
	int      maps_held;     /* whether the last scan's maps is held */
};
struct shm_recheck_counts shm_recheck_counts(const struct probe_shm *shm);
/* Dates the handle's last maps scan ns earlier, for tests of the periodic
 * full check (MAPS_MAX_AGE_NS) that do not wait for it. */
void shm_recheck_age(struct probe_shm *shm, uint64_t ns);

#endif /* PROBE_SHM_INT_H */
