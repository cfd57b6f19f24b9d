/*
 * loopstat_shm.h — the shared-memory ABI between libfiberloop (the writer)
 * and loopstat's probes (the reader). This is the ONLY header the two share.
 *
 * One segment per process: $LOOPSTAT_SHM_DIR/loopstat.<pid>.<suffix> (default
 * /dev/shm; suffix: 16 random hex digits, so that no other user can claim
 * the name first; older writers used loopstat.<pid>). Layout: one struct loopstat_shm_header at offset 0, then
 * header.slot_count slots of header.slot_size bytes each, starting at
 * offset header.header_size. A reader uses the sizes from the header, never
 * sizeof(), as strides: a newer minor may append fields to either struct.
 *
 * Rules (after Varnish VSM and the JVM's hsperfdata):
 *  - The writer fills the header, then stores `ready` = 1 after a release
 *    fence. A reader ignores a segment whose `ready` is not 1.
 *  - A reader rejects an unknown abi_major and accepts any abi_minor.
 *  - Each slot has a single writer: the loop thread that acquired it. Its
 *    u64 fields are aligned and each is written by single-copy atomic
 *    stores (relaxed atomic stores; on x86-64 the switch count is one add
 *    to memory and current_fiber/current_tag one aligned 16-byte store,
 *    never split below its 8-byte halves), so a reader never sees a torn
 *    value; no locks, no syscalls on the hot path. Slot acquisition and release (slow path)
 *    move header.generation like a seqlock: readers retry a copy of the
 *    slot table taken while it was odd or that it changed under.
 *  - Counters are monotonic and never reset while the slot is held; a slot
 *    that is re-acquired by another thread gets a new `generation`, so a
 *    reader computing deltas must key them by (tid, generation).
 *
 * docs/shm-abi.md documents every field; it is kept in step with the
 * LOOPSTAT_SLOT_VALUES table below, which is the single definition of the
 * counters and gauges (struct layout, JSON keys, graphite names, help text).
 */
#ifndef LOOPSTAT_SHM_H
#define LOOPSTAT_SHM_H

#include <stdint.h>

#define LOOPSTAT_SHM_MAGIC       0x54415453504f4f4cULL /* "LOOPSTAT" read as LE u64 */
#define LOOPSTAT_SHM_ABI_MAJOR   1
#define LOOPSTAT_SHM_ABI_MINOR   2
/* Stored in the writer's byte order; a reader of the other order sees it swapped. */
#define LOOPSTAT_SHM_BYTE_ORDER  0x01020304u
#define LOOPSTAT_SHM_PREFIX      "loopstat."
#define LOOPSTAT_SHM_DEFAULT_DIR "/dev/shm"
#define LOOPSTAT_SHM_DIR_ENV     "LOOPSTAT_SHM_DIR"
#define LOOPSTAT_SHM_MODE_ENV    "LOOPSTAT_SHM_MODE"   /* octal digits, e.g. 0640; no group/other write */
#define LOOPSTAT_SHM_DEFAULT_SLOTS 64

#define LOOPSTAT_TAG_LEN  32   /* bytes, including the terminating NUL */
#define LOOPSTAT_TAG_MAX  16   /* entries in a slot's fiber tag table */

enum loopstat_value_kind {
	LOOPSTAT_COUNTER = 1,  /* monotonic, never reset: readers use deltas */
	LOOPSTAT_GAUGE   = 2,  /* current value */
};

/*
 * X(name, kind, unit, description) — every u64 value a slot publishes, in
 * ABI order. Append only: the order is the ABI. Each minor's additions are
 * a table of their own because they are laid out after the slot's tag
 * table (which must not move for older readers); LOOPSTAT_SLOT_VALUES is
 * all of them, in order.
 */
#define LOOPSTAT_SLOT_VALUES_0(X) \
	X(switches,        LOOPSTAT_COUNTER, "switches",    "fiber switches done by the scheduler") \
	X(ops,             LOOPSTAT_COUNTER, "ops",         "I/O operations started") \
	X(completions,     LOOPSTAT_COUNTER, "completions", "I/O completions processed") \
	X(polls,           LOOPSTAT_COUNTER, "polls",       "backend polls, blocking or not") \
	X(polls_blocking,  LOOPSTAT_COUNTER, "polls",       "backend polls that were allowed to block") \
	X(poll_time_ns,    LOOPSTAT_COUNTER, "ns",          "wall time spent in blocking polls") \
	X(fibers_spawned,  LOOPSTAT_COUNTER, "fibers",      "fibers created") \
	X(fibers_done,     LOOPSTAT_COUNTER, "fibers",      "fibers that finished") \
	X(runqueue_len,    LOOPSTAT_GAUGE,   "fibers",      "runnable fibers waiting in the runqueue") \
	X(runqueue_cap,    LOOPSTAT_GAUGE,   "fibers",      "runqueue capacity") \
	X(runqueue_hwm,    LOOPSTAT_GAUGE,   "fibers",      "runqueue high-water mark since the slot was acquired") \
	X(pending_ops,     LOOPSTAT_GAUGE,   "ops",         "I/O operations submitted and not yet completed") \
	X(fibers_live,     LOOPSTAT_GAUGE,   "fibers",      "fibers alive (created and not finished)") \
	X(current_fiber,   LOOPSTAT_GAUGE,   "id",          "id of the running fiber, 0 when the loop itself runs") \
	X(current_tag,     LOOPSTAT_GAUGE,   "index",       "1 + tag table index of the running fiber's tag, 0 for none")

/* minor 1 */
#define LOOPSTAT_SLOT_VALUES_1(X) \
	X(poll_since_ns,   LOOPSTAT_GAUGE,   "ns",          "CLOCK_MONOTONIC when the current blocking poll began, 0 when not in one")

/* minor 2: the busy spans' log2 histogram. A busy span is the time from
 * the end of one blocking poll to the start of the next: the delay an event
 * arriving then could suffer. span_h<k> counts spans of 2^(11+k) to
 * 2^(12+k) ns; the first and last are open-ended. */
#define LOOPSTAT_SPAN_BUCKETS 20
#define LOOPSTAT_SPAN_SHIFT   11   /* span_h<k> (0 < k < 19) starts at 2^(LOOPSTAT_SPAN_SHIFT + k) ns */
#define LOOPSTAT_SLOT_VALUES_2(X) \
	X(span_h0,        LOOPSTAT_COUNTER, "spans",       "busy spans shorter than 2^12 ns (4.10 us)") \
	X(span_h1,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^12 to 2^13 ns") \
	X(span_h2,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^13 to 2^14 ns") \
	X(span_h3,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^14 to 2^15 ns") \
	X(span_h4,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^15 to 2^16 ns") \
	X(span_h5,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^16 to 2^17 ns") \
	X(span_h6,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^17 to 2^18 ns") \
	X(span_h7,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^18 to 2^19 ns") \
	X(span_h8,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^19 to 2^20 ns") \
	X(span_h9,        LOOPSTAT_COUNTER, "spans",       "busy spans of 2^20 to 2^21 ns") \
	X(span_h10,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^21 to 2^22 ns") \
	X(span_h11,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^22 to 2^23 ns") \
	X(span_h12,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^23 to 2^24 ns") \
	X(span_h13,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^24 to 2^25 ns") \
	X(span_h14,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^25 to 2^26 ns") \
	X(span_h15,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^26 to 2^27 ns") \
	X(span_h16,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^27 to 2^28 ns") \
	X(span_h17,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^28 to 2^29 ns") \
	X(span_h18,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^29 to 2^30 ns") \
	X(span_h19,       LOOPSTAT_COUNTER, "spans",       "busy spans of 2^30 ns (1.07 s) or more")

#define LOOPSTAT_SLOT_VALUES(X) LOOPSTAT_SLOT_VALUES_0(X) LOOPSTAT_SLOT_VALUES_1(X) LOOPSTAT_SLOT_VALUES_2(X)

enum loopstat_slot_state {
	LOOPSTAT_SLOT_FREE   = 0,  /* never used; contents meaningless */
	LOOPSTAT_SLOT_ACTIVE = 1,  /* held by a live loop thread */
	LOOPSTAT_SLOT_EXITED = 2,  /* its thread released it; last values kept */
};

enum loopstat_backend {
	LOOPSTAT_BACKEND_NONE     = 0,
	LOOPSTAT_BACKEND_IO_URING = 1,  /* wait_fd is the ring fd */
	LOOPSTAT_BACKEND_LIBEV    = 2,  /* wait_fd is the epoll fd */
};

struct loopstat_shm_tag {
	uint32_t len;                    /* 0 = entry unused; stored last (release) */
	uint32_t reserved;
	char     name[LOOPSTAT_TAG_LEN]; /* NUL-terminated */
};

struct loopstat_shm_header {
	uint64_t magic;         /* LOOPSTAT_SHM_MAGIC */
	uint16_t abi_major;     /* readers reject an unknown major */
	uint16_t abi_minor;     /* readers accept a newer minor */
	uint32_t byte_order;    /* LOOPSTAT_SHM_BYTE_ORDER in the writer's order */
	uint32_t header_size;   /* bytes; offset of slot 0 */
	uint32_t slot_size;     /* bytes; stride between slots */
	uint32_t slot_count;    /* slots in the segment */
	int32_t  pid;           /* writer's pid */
	uint64_t start_time;    /* writer's start time, clock ticks after boot (/proc/PID/stat field 22) */
	uint64_t generation;    /* seqlock over the slot table: odd while a slot is reset, +2 per change */
	uint64_t created_ns;    /* CLOCK_REALTIME when the segment was created, ns */
	uint32_t ready;         /* 1 once the header is complete; stored last (release) */
	uint32_t reserved;
	uint64_t pad[8];        /* room for minor additions without moving slots */
} __attribute__((aligned(64)));

struct loopstat_shm_slot {
	uint32_t state;         /* enum loopstat_slot_state; stored with release */
	int32_t  tid;           /* kernel thread id of the loop thread */
	uint32_t backend;       /* enum loopstat_backend */
	int32_t  wait_fd;       /* fd the loop blocks on (ring or epoll fd), -1 if none */
	uint64_t generation;    /* bumped each time the slot is acquired */
	char     tag[LOOPSTAT_TAG_LEN];  /* thread tag, NUL-terminated, may be empty */
#define LOOPSTAT_X_FIELD(name, kind, unit, desc) uint64_t name;
	LOOPSTAT_SLOT_VALUES_0(LOOPSTAT_X_FIELD)
	struct loopstat_shm_tag tags[LOOPSTAT_TAG_MAX]; /* fiber tags, see current_tag */
	/* minor >= 1 (in what was padding of minor 0: slot_size is unchanged) */
	LOOPSTAT_SLOT_VALUES_1(LOOPSTAT_X_FIELD)
	/* minor >= 2 (the slot grows: readers take slot_size from the header) */
	LOOPSTAT_SLOT_VALUES_2(LOOPSTAT_X_FIELD)
#undef LOOPSTAT_X_FIELD
} __attribute__((aligned(64)));

#endif /* LOOPSTAT_SHM_H */
