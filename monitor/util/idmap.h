/*
 * idmap.h — a small open-addressing hash from a 64-bit id to an index, so
 * that finding a worker by (pid, tid) or a segment by pid costs O(1) however
 * many another user makes us track.
 */
#ifndef LOOPSTAT_IDMAP_H
#define LOOPSTAT_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct idmap {
	uint64_t *keys;     /* owned; 0 marks an empty bucket, so ids are stored + 1 */
	size_t   *vals;
	size_t    cap, n;   /* cap is a power of two, kept at least twice n */
};

void idmap_init(struct idmap *m);
void idmap_done(struct idmap *m);
void idmap_clear(struct idmap *m);

/* Returns 0 or -ENOMEM; an existing id gets the new value. */
int idmap_put(struct idmap *m, uint64_t id, size_t val);

/* 1 and *val when id is present, else 0. */
int idmap_get(const struct idmap *m, uint64_t id, size_t *val);

static inline uint64_t idmap_pair(int32_t hi, int32_t lo)
{
	return (uint64_t)(uint32_t)hi << 32 | (uint32_t)lo;
}

#endif /* LOOPSTAT_IDMAP_H */
