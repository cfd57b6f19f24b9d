/*
 * snapshot.c — collecting instrumented workers from shm segments.
 */
#include "snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS_PER_READ 256

struct scan_ctx {
	struct snapshot *s;
	const struct targets *t;
	struct probe_shm_worker buf[SLOTS_PER_READ];
};

static int push(struct snapshot *s, const char *name, const struct probe_shm_worker *w)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct snap_worker *nw = realloc(s->workers, cap * sizeof(*nw));
		if (!nw)
			return -ENOMEM;
		s->workers = nw;
		s->cap = cap;
	}
	struct snap_worker *dst = &s->workers[s->n++];
	snprintf(dst->name, sizeof(dst->name), "%s", name);
	dst->shm = *w;
	return 0;
}

static int on_segment(const char *path, pid_t pid, void *arg)
{
	struct scan_ctx *c = arg;
	struct probe_stat st;
	const char *name = probe_stat_read(pid, 0, &st) == 0 ? st.comm : "?";
	if (!targets_match(c->t, pid, name))
		return 0;

	struct probe_shm *shm;
	if (probe_shm_open(path, &shm) < 0) {
		c->s->skipped++;
		return 0;
	}
	int n = probe_shm_read(shm, c->buf, SLOTS_PER_READ, 0);
	probe_shm_close(shm);
	if (n < 0) {
		c->s->skipped++;
		return 0;
	}
	for (int i = 0; i < n && i < SLOTS_PER_READ; i++)
		if (push(c->s, name, &c->buf[i]) < 0)
			return -ENOMEM;
	return 0;
}

static int by_pid_tid(const void *a, const void *b)
{
	const struct probe_shm_worker *x = &((const struct snap_worker *)a)->shm;
	const struct probe_shm_worker *y = &((const struct snap_worker *)b)->shm;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int snapshot_take(struct snapshot *s, const char *dir, const struct targets *t)
{
	memset(s, 0, sizeof(*s));
	struct scan_ctx *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->s = s;
	c->t = t;
	int err = probe_shm_scan(dir, on_segment, c);
	free(c);
	if (err == -ENOENT)
		err = 0;
	if (s->n)
		qsort(s->workers, s->n, sizeof(*s->workers), by_pid_tid);
	return err;
}

void snapshot_done(struct snapshot *s)
{
	free(s->workers);
	memset(s, 0, sizeof(*s));
}
