/*
 * idmap.c — linear probing with a multiplicative hash; no deletion (the
 * tables are rebuilt when workers are dropped, about once a second).
 */
#include "util/idmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void idmap_init(struct idmap *m)
{
	memset(m, 0, sizeof(*m));
}

void idmap_done(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
	idmap_init(m);
}

void idmap_clear(struct idmap *m)
{
	if (m->keys)
		memset(m->keys, 0, m->cap * sizeof(*m->keys));
	m->n = 0;
}

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static void insert(uint64_t *keys, size_t *vals, size_t cap, uint64_t key, size_t val)
{
	size_t i = slot_of(key, cap);
	while (keys[i] && keys[i] != key)
		i = (i + 1) & (cap - 1);
	keys[i] = key;
	vals[i] = val;
}

static int grow(struct idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	uint64_t *keys = calloc(cap, sizeof(*keys));
	size_t *vals = calloc(cap, sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			insert(keys, vals, cap, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

int idmap_put(struct idmap *m, uint64_t id, size_t val)
{
	size_t old;
	if (idmap_get(m, id, &old)) {
		insert(m->keys, m->vals, m->cap, id + 1, val);
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
		return -ENOMEM;
	insert(m->keys, m->vals, m->cap, id + 1, val);
	m->n++;
	return 0;
}

int idmap_get(const struct idmap *m, uint64_t id, size_t *val)
{
	if (!m->cap)
		return 0;
	uint64_t key = id + 1;
	for (size_t i = slot_of(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			*val = m->vals[i];
			return 1;
		}
	return 0;
}
