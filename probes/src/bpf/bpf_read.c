/*
 * bpf_read.c — the loop programs' figures (batch reads of their maps) and
 * stall events (their ring buffer); probe_bpf.h.
 */
#include "probe_bpf.h"
#include "probe_clock.h"

#include <errno.h>

#ifdef LOOPSTAT_BPF

#include "bpf_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 256

_Static_assert(PROBE_BPF_OFF_LOOP == LSB_OFF_LOOP, "the loop poll's off-CPU key, both sides");

/* now - since, where since may be a stamp the kernel wrote after now was taken */
static uint64_t upto(uint64_t now, uint64_t since)
{
	return since && now > since ? now - since : 0;
}

static void fill(struct probe_bpf_thread *o, __u32 tid, const struct lsb_thread *t, uint64_t now)
{
	memset(o, 0, offsetof(struct probe_bpf_thread, hist));
	o->tid = (pid_t)tid;
	o->tgid = (pid_t)t->tgid;
	o->now_ns = now;
	o->cur_nr = t->cur_nr;
	o->off_nr = t->off_nr;
	o->off_now_ns = upto(now, t->off_start);
	o->loop_fd = -1;
	o->other_wait_ns = t->gone_wait_ns;
	int lead = t->lead >= 0 && t->lead < LSB_SLOTS ? t->lead : -1;
	for (int i = 0; i < LSB_SLOTS; i++) {
		const struct lsb_slot *s = &t->slot[i];
		if (!s->kind)
			continue;
		uint64_t ns = s->wait_ns + (t->cur_slot == i ? upto(now, t->enter_ns) : 0);
		if (i != lead) {
			o->other_wait_ns += ns;
			continue;
		}
		o->loop = s->kind == LSB_KIND_EPOLL ? PROBE_BPF_LOOP_EPOLL
			  : s->kind == LSB_KIND_RING ? PROBE_BPF_LOOP_RING : PROBE_BPF_LOOP_SET;
		o->loop_fd = s->kind == LSB_KIND_SET ? -1 : s->fd;
		o->poll_ns = ns;
		o->poll_waits = s->waits;
		o->poll_returns = s->returns;
		o->poll_events = s->events;
	}
	o->oncpu_ns = t->oncpu_ns + upto(now, t->oncpu_start);
	o->rq_ns = t->rq_ns + upto(now, t->rq_start);
	o->rq_count = t->rq_count;
	o->spans = t->spans;
	o->span_ns = t->span_ns;
	o->span_max_ns = t->span_max;
	o->span_now_ns = upto(now, t->span_start);
	memcpy(o->hist, t->hist, sizeof(o->hist));
}

/* Calls fn on every entry of the threads map, BATCH at a time; fn
 * returns 1 to stop. Returns 0 or -errno. */
static int each_thread(struct probe_bpf *b, int (*fn)(void *, __u32, const struct lsb_thread *, uint64_t), void *arg)
{
	if (!b->vals) {
		b->vals = calloc(BATCH, sizeof(*b->vals));
		b->keys = calloc(BATCH, sizeof(*b->keys));
		if (!b->vals || !b->keys)
			return -ENOMEM;
	}
	__u32 token = 0;
	for (int first = 1;; first = 0) {
		__u32 count = BATCH;
		int err = bpf_map_lookup_batch(b->threads_fd, first ? NULL : &token, &token, b->keys, b->vals, &count, NULL);
		int end = err < 0 && errno == ENOENT;
		if (err < 0 && !end)
			return -errno;
		uint64_t now = probe_mono_ns(); /* after the copy: every stamp in it is earlier */
		for (__u32 i = 0; i < count; i++)
			if (fn(arg, b->keys[i], &b->vals[i], now))
				return 0;
		if (end)
			return 0;
	}
}

struct read_ctx {
	pid_t tgid;
	struct probe_bpf_thread *out;
	size_t cap, n;
	__u32 dead[BATCH];   /* exited threads read in full reads: deleted after */
	int ndead;
};

static int read_one(void *arg, __u32 tid, const struct lsb_thread *t, uint64_t now)
{
	struct read_ctx *c = arg;
	if (c->tgid && (pid_t)t->tgid != c->tgid)
		return 0;
	if (!c->tgid && t->dead && c->ndead < BATCH)
		c->dead[c->ndead++] = tid;
	fill(&c->out[c->n++], tid, t, now);
	return c->n == c->cap;
}

/* The threads map is not an LRU one (loopstat.bpf.c): an exited thread's
 * entry goes once a full read has given its last figures, unless its tid
 * was taken again meanwhile (then the kernel made the entry anew). */
static void purge_dead(struct probe_bpf *b, const __u32 *tids, int n)
{
	struct lsb_thread *t = n ? malloc(sizeof(*t)) : NULL;
	for (int i = 0; t && i < n; i++)
		if (bpf_map_lookup_elem(b->threads_fd, &tids[i], t) == 0 && t->dead)
			bpf_map_delete_elem(b->threads_fd, &tids[i]);
	free(t);
}

int probe_bpf_read(struct probe_bpf *b, pid_t tgid, struct probe_bpf_thread *out, size_t cap)
{
	struct read_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	*c = (struct read_ctx){ .tgid = tgid, .out = out, .cap = cap };
	int err = cap ? each_thread(b, read_one, c) : 0;
	purge_dead(b, c->dead, c->ndead);
	int n = err < 0 ? err : (int)c->n;
	free(c);
	return n;
}

struct forget_ctx {
	pid_t tgid;
	__u32 tids[BATCH];
	int n;
};

static int forget_one(void *arg, __u32 tid, const struct lsb_thread *t, uint64_t now)
{
	struct forget_ctx *c = arg;
	(void)now;
	if ((pid_t)t->tgid == c->tgid)
		c->tids[c->n++] = tid;
	return c->n == BATCH;
}

int bpf_forget_tgid(struct probe_bpf *b, pid_t tgid)
{
	struct forget_ctx c = { .tgid = tgid };
	do {
		c.n = 0;
		int err = each_thread(b, forget_one, &c);
		if (err < 0)
			return err;
		for (int i = 0; i < c.n; i++)
			bpf_map_delete_elem(b->threads_fd, &c.tids[i]);
	} while (c.n == BATCH);
	return 0;
}

int probe_bpf_offcpu(struct probe_bpf *b, struct probe_bpf_off *out, size_t cap)
{
	struct lsb_offkey keys[BATCH], token;
	struct lsb_offval vals[BATCH];
	size_t n = 0;
	for (int first = 1; n < cap; first = 0) {
		__u32 count = BATCH;
		int err = bpf_map_lookup_batch(b->offcpu_fd, first ? NULL : &token, &token, keys, vals, &count, NULL);
		int end = err < 0 && errno == ENOENT;
		if (err < 0 && !end)
			return -errno;
		for (__u32 i = 0; i < count && n < cap; i++, n++) {
			out[n].tid = (pid_t)keys[i].tid;
			out[n].nr = keys[i].nr;
			out[n].ns = vals[i].ns;
			out[n].count = vals[i].count;
		}
		if (end)
			break;
	}
	return (int)n;
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct probe_bpf *b = ctx;
	const struct lsb_stall *e = data;
	if (size < sizeof(*e))
		return 0;
	struct probe_bpf_stall s = {
		.tid = (pid_t)e->tid, .tgid = (pid_t)e->tgid, .nr = e->nr == LSB_STALL_ENDED ? -1 : e->nr,
		.ended = e->nr == LSB_STALL_ENDED, .arg0 = e->arg0, .span_ns = e->span_ns, .ts_ns = e->ts,
		.nframes = e->stack_len > 0 ? e->stack_len / (int)sizeof(__u64) : 0,
		.regs_pc = e->pc, .sp = e->sp, .fp = e->fp,
		.stack_len = e->copy_len <= sizeof(e->copy) ? e->copy_len : 0, .stack = e->copy,
	};
	if (s.nframes > PROBE_BPF_STACK)
		s.nframes = PROBE_BPF_STACK;
	memcpy(s.pc, e->stack, (size_t)s.nframes * sizeof(s.pc[0]));
	b->stall_fn(&s, b->stall_arg);
	b->stall_n++;
	return 0;
}

int probe_bpf_drain(struct probe_bpf *b, void (*fn)(const struct probe_bpf_stall *, void *), void *arg)
{
	if (!b->rb) {
		b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.stalls), on_event, b, NULL);
		if (!b->rb)
			return -errno;
	}
	b->stall_fn = fn;
	b->stall_arg = arg;
	b->stall_n = 0;
	int err = ring_buffer__consume(b->rb);
	return err < 0 ? err : b->stall_n;
}

void bpf_read_done(struct probe_bpf *b)
{
	ring_buffer__free(b->rb);
	free(b->vals);
	free(b->keys);
}

#else /* built without bpf */

int probe_bpf_read(struct probe_bpf *b, pid_t tgid, struct probe_bpf_thread *out, size_t cap)
{
	(void)b; (void)tgid; (void)out; (void)cap;
	return -ENOSYS;
}

int probe_bpf_offcpu(struct probe_bpf *b, struct probe_bpf_off *out, size_t cap)
{
	(void)b; (void)out; (void)cap;
	return -ENOSYS;
}

int probe_bpf_drain(struct probe_bpf *b, void (*fn)(const struct probe_bpf_stall *, void *), void *arg)
{
	(void)b; (void)fn; (void)arg;
	return -ENOSYS;
}

#endif
