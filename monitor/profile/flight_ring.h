/*
 * flight_ring.h — the flight recorder's memory (loopstat record --ring):
 * the last N seconds of every event profile's hook makes (samples with
 * their labels and stacks, stalls captured), in a bounded ring, written
 * out on demand as a normal recording (collect/recording.h).
 *
 * An event is a fixed-size record; its strings and its stack are interned
 * in tables kept beside the ring, so a worker parked in the same place
 * costs one record a sample. The bound is fixed at the start: the records'
 * array plus two sets of tables (allocated once, touched as they fill:
 * the ring starts small and doubles when its span needs more, so what is
 * resident follows what it holds).
 * Events leave the ring when they are older than its span, or, when the
 * ring is full first, oldest first (then it holds less than its span:
 * flight_ring_span_ns says what it holds). Tables that fill are rebuilt
 * into the other set from the events still in the ring; a string that
 * still finds no room reads "[ring tables full]".
 *
 * The sampler's thread adds, the command's thread writes out: every call
 * takes the ring's lock.
 */
#ifndef LOOPSTAT_FLIGHT_RING_H
#define LOOPSTAT_FLIGHT_RING_H

#include <stddef.h>
#include <stdint.h>

#include "collect/recording.h"

struct flight_ring;

#define FLIGHT_RING_TABLES_MIN ((size_t)1 << 20)   /* one set of tables at least */

/* A ring of span_ns holding at most bytes (records and tables together).
 * NULL with errno (EINVAL: bytes too small for tables and some records). */
struct flight_ring *flight_ring_new(uint64_t span_ns, size_t bytes);
void flight_ring_delete(struct flight_ring *r);

/* The bound: what the ring's records and tables take at most (<= bytes). */
size_t flight_ring_bound(const struct flight_ring *r);
/* What one event takes in the ring. */
size_t flight_ring_event_bytes(void);

/* Adds ev (weight: the sampler ticks it stands for; rec_write is called
 * that many times for it when it is written out). */
void flight_ring_add(struct flight_ring *r, const struct rec_event *ev, uint32_t weight);

/* Adds a limit reading (written as an "l" record among the events, in
 * the order added). */
void flight_ring_add_limit(struct flight_ring *r, const struct rec_limit *l);

/* The oldest and newest events' times (0: none). */
void flight_ring_times(struct flight_ring *r, uint64_t *oldest_ns, uint64_t *newest_ns);
/* Events dropped because the ring was full before they were span_ns old. */
uint64_t flight_ring_evicted_early(struct flight_ring *r);

/*
 * Writes the events added since *seq (0: every event in the ring) to w,
 * their times less base_ns (a dump's clock starts at its first event),
 * and sets *seq past the last one. Events that left the ring before they
 * were written are counted in *lost. Returns the number written or
 * rec_write's -errno.
 */
long flight_ring_write(struct flight_ring *r, struct rec_writer *w, uint64_t *seq, uint64_t base_ns,
		       uint64_t *lost);

#endif /* LOOPSTAT_FLIGHT_RING_H */
