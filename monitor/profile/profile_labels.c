/*
 * profile_labels.c — distinct labels through an open-addressing hash of
 * the tree's label pointers (FNV-1a), at most half full.
 */
#include "profile/profile_labels.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

long profile_labels_index(struct profile_labels *l, const char *label)
{
	for (size_t i = hash_str(label) & l->mask;; i = (i + 1) & l->mask) {
		long k = l->slot[i];
		if (k < 0) {
			l->slot[i] = (long)l->n;
			l->label[l->n] = label;
			return (long)l->n++;
		}
		if (strcmp(l->label[k], label) == 0)
			return k;
	}
}

int profile_labels_init(struct profile_labels *l, size_t max)
{
	size_t cap = 16;
	while (cap < 2 * max)
		cap *= 2;
	l->label = calloc(max ? max : 1, sizeof(*l->label));
	l->slot = malloc(cap * sizeof(*l->slot));
	if (!l->label || !l->slot) {
		free(l->label);
		free(l->slot);
		return -ENOMEM;
	}
	memset(l->slot, 0xff, cap * sizeof(*l->slot)); /* all -1 */
	l->mask = cap - 1;
	l->n = 0;
	return 0;
}

void profile_labels_done(struct profile_labels *l)
{
	free(l->label);
	free(l->slot);
}
