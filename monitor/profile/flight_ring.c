/*
 * flight_ring.c — the flight recorder's bounded ring of events and its
 * string and stack tables (flight_ring.h).
 */
#include "profile/flight_ring.h"
#include "util/textsafe.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FULL_TEXT "[ring tables full]"
#define NSTR 5   /* thread, syscall, target, fiber, service */
#define CAP_START 4096   /* records a ring starts with: it doubles as its span needs */

struct fr_ev {
	uint64_t t_ns, run_ns, wait_ns, sp, pc, switches;
	int32_t  pid, tid, nr, fd;
	uint32_t str[NSTR];          /* string ids, 0: none */
	uint32_t stack;              /* stack id, 0: no frames */
	uint32_t stall_ms;
	uint16_t weight;
	uint8_t  cls, inst;          /* cls 0 (no class of the sampler's): a limit reading (rec_limit), its
				      * word in str[1], its reading's bits in run_ns */
};

/* One set of tables: strings (ids into a char pool) and stacks (ids into
 * a pool of [n, string id...]), each with an open-addressing index of
 * id + 1 (0: empty). Sizes are fixed at the start. */
struct fr_tables {
	char     *chars;
	size_t    nchars, capchars;
	uint32_t *soff, *shash;      /* soff[id]: offset in chars; shash: 2 × capstr slots */
	uint32_t  nstr, capstr;      /* id 0 unused, 1 FULL_TEXT */
	uint32_t *words, *koff, *khash;
	size_t    nwords, capwords;
	uint32_t  nstack, capstack;  /* id 0: no frames */
};

struct flight_ring {
	pthread_mutex_t lock;
	uint64_t  span_ns;
	struct fr_ev *ev;            /* cap_max records' room; a ring of cap, the oldest at head */
	size_t    cap, cap_max, head, n;
	uint64_t  seq;               /* events ever added: the newest is seq - 1 */
	uint64_t  evicted_early;
	struct fr_tables t[2];       /* t[cur] in use, the other the spare a rebuild fills */
	int       cur;
	size_t    bound;
};

static uint64_t hash_bytes(const void *p, size_t len)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
	return h;
}

/* One zeroed block per set, carved into its arrays: a fresh block's pages
 * stay untouched (and out of RSS) until strings and stacks land in them. */
static size_t tables_alloc(struct fr_tables *t, size_t bytes)
{
	/* 3/8 characters, 1/4 stack words; the indexes the rest */
	t->capchars = (bytes * 3 / 8) & ~(size_t)7;   /* the indexes after it stay aligned */
	t->capstr = (uint32_t)(bytes / 64);
	t->capwords = bytes / 16;
	t->capstack = (uint32_t)(bytes / 128);
	size_t words = (size_t)t->capstr + 1 + 2 * (size_t)t->capstr + t->capwords + t->capstack + 1 +
		       2 * (size_t)t->capstack;
	t->chars = calloc(1, t->capchars + words * sizeof(uint32_t));
	if (!t->chars)
		return 0;
	t->soff = (uint32_t *)(void *)(t->chars + t->capchars);
	t->shash = t->soff + t->capstr + 1;
	t->words = t->shash + 2 * (size_t)t->capstr;
	t->koff = t->words + t->capwords;
	t->khash = t->koff + t->capstack + 1;
	return t->capchars + words * sizeof(uint32_t);
}

static void tables_free(struct fr_tables *t)
{
	free(t->chars);
}

static uint32_t str_add(struct fr_tables *t, const char *s);

static size_t str_slot(const struct fr_tables *t, const char *s, size_t len);
static size_t stack_slot(const struct fr_tables *t, const uint32_t *ids, uint32_t n);

/* Empties t by zeroing the index slots its entries hold, newest first:
 * each one's probe then still passes only slots taken before it, so it is
 * found. The cost follows what t holds, not its size. */
static void tables_clear(struct fr_tables *t)
{
	for (uint32_t id = t->nstack; id >= 1; id--) {
		const uint32_t *k = t->words + t->koff[id];
		t->khash[stack_slot(t, k + 1, k[0])] = 0;
	}
	for (uint32_t id = t->nstr; id >= 1; id--) {
		const char *s = t->chars + t->soff[id];
		t->shash[str_slot(t, s, strlen(s) + 1)] = 0;
	}
	t->nchars = t->nwords = 0;
	t->nstr = t->nstack = 0;
	str_add(t, FULL_TEXT);   /* id 1, always there */
}

/* The index slot holding s (len: its size with the NUL), or the empty
 * slot it would take. */
static size_t str_slot(const struct fr_tables *t, const char *s, size_t len)
{
	size_t mask = 2 * (size_t)t->capstr, j = hash_bytes(s, len - 1) % mask;
	for (; t->shash[j]; j = (j + 1) % mask)
		if (strcmp(t->chars + t->soff[t->shash[j] - 1], s) == 0)
			break;
	return j;
}

/* s's id, interned; 0 when the table is full. */
static uint32_t str_add(struct fr_tables *t, const char *s)
{
	size_t len = strlen(s) + 1, j = str_slot(t, s, len);
	if (t->shash[j])
		return t->shash[j] - 1;
	if (t->nstr + 1 >= t->capstr || t->nchars + len > t->capchars)
		return 0;
	uint32_t id = ++t->nstr;
	t->soff[id] = (uint32_t)t->nchars;
	memcpy(t->chars + t->nchars, s, len);
	t->nchars += len;
	t->shash[j] = id + 1;
	return id;
}

static const char *str_of(const struct fr_tables *t, uint32_t id)
{
	return id ? t->chars + t->soff[id] : NULL;
}

/* The index slot holding the stack of n string ids, or the empty slot it
 * would take. */
static size_t stack_slot(const struct fr_tables *t, const uint32_t *ids, uint32_t n)
{
	size_t mask = 2 * (size_t)t->capstack, j = hash_bytes(ids, n * sizeof(*ids)) % mask;
	for (; t->khash[j]; j = (j + 1) % mask) {
		const uint32_t *k = t->words + t->koff[t->khash[j] - 1];
		if (k[0] == n && memcmp(k + 1, ids, n * sizeof(*ids)) == 0)
			break;
	}
	return j;
}

/* The stack of n string ids, interned; 0 when the table is full. */
static uint32_t stack_add(struct fr_tables *t, const uint32_t *ids, uint32_t n)
{
	size_t j = stack_slot(t, ids, n);
	if (t->khash[j])
		return t->khash[j] - 1;
	if (t->nstack + 1 >= t->capstack || t->nwords + n + 1 > t->capwords)
		return 0;
	uint32_t id = ++t->nstack;
	t->koff[id] = (uint32_t)t->nwords;
	t->words[t->nwords] = n;
	memcpy(t->words + t->nwords + 1, ids, n * sizeof(*ids));
	t->nwords += n + 1;
	t->khash[j] = id + 1;
	return id;
}

/* Interns ev's strings and stack into t: 0, or -ENOSPC when t is full. */
static int intern(struct fr_tables *t, const char *const strs[NSTR], const char *const *frames, int nframes,
		  struct fr_ev *out)
{
	for (int i = 0; i < NSTR; i++)
		if (strs[i] && !(out->str[i] = str_add(t, strs[i])))
			return -ENOSPC;
	uint32_t ids[REC_MAX_FRAMES];
	int n = nframes < REC_MAX_FRAMES ? nframes : REC_MAX_FRAMES;
	for (int i = 0; i < n; i++)
		if (!(ids[i] = str_add(t, frames[i] ? frames[i] : "?")))
			return -ENOSPC;
	out->stack = n ? stack_add(t, ids, (uint32_t)n) : 0;
	return n && !out->stack ? -ENOSPC : 0;
}

/* An event's strings and frames as the tables t hold them. */
static int strings_of(const struct fr_tables *t, const struct fr_ev *e, const char *strs[NSTR], const char **frames)
{
	for (int i = 0; i < NSTR; i++)
		strs[i] = str_of(t, e->str[i]);
	if (!e->stack)
		return 0;
	const uint32_t *k = t->words + t->koff[e->stack];
	for (uint32_t i = 0; i < k[0]; i++)
		frames[i] = str_of(t, k[1 + i]);
	return (int)k[0];
}

/* The tables rebuilt into the spare set from the events in the ring. An
 * event whose strings no longer fit keeps its thread as FULL_TEXT. */
static void rebuild(struct flight_ring *r)
{
	struct fr_tables *old = &r->t[r->cur], *nt = &r->t[!r->cur];
	tables_clear(nt);
	const char *frames[REC_MAX_FRAMES];
	for (size_t i = 0; i < r->n; i++) {
		struct fr_ev *e = &r->ev[(r->head + i) % r->cap];
		const char *strs[NSTR];
		int nf = strings_of(old, e, strs, frames);
		struct fr_ev x = *e;
		if (intern(nt, strs, frames, nf, &x) < 0) {
			memset(x.str, 0, sizeof(x.str));
			x.str[0] = 1;
			x.stack = 0;
		}
		*e = x;
	}
	r->cur = !r->cur;
}

struct flight_ring *flight_ring_new(uint64_t span_ns, size_t bytes)
{
	size_t tb = bytes / 8 > FLIGHT_RING_TABLES_MIN ? bytes / 8 : FLIGHT_RING_TABLES_MIN;
	if (bytes < 2 * tb + 1024 * sizeof(struct fr_ev)) {
		errno = EINVAL;
		return NULL;
	}
	struct flight_ring *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	r->span_ns = span_ns;
	r->cap_max = (bytes - 2 * tb) / sizeof(struct fr_ev);
	r->cap = r->cap_max < CAP_START ? r->cap_max : CAP_START;
	/* malloc'd, not calloc'd: pages are touched only as the ring grows */
	r->ev = malloc(r->cap_max * sizeof(struct fr_ev));
	size_t t0 = tables_alloc(&r->t[0], tb), t1 = tables_alloc(&r->t[1], tb);
	if (!r->ev || !t0 || !t1) {
		flight_ring_delete(r);
		errno = ENOMEM;
		return NULL;
	}
	tables_clear(&r->t[0]);
	r->bound = sizeof(*r) + r->cap_max * sizeof(struct fr_ev) + t0 + t1;
	return r;
}

void flight_ring_delete(struct flight_ring *r)
{
	if (!r)
		return;
	tables_free(&r->t[0]);
	tables_free(&r->t[1]);
	free(r->ev);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

size_t flight_ring_bound(const struct flight_ring *r) { return r->bound; }
size_t flight_ring_event_bytes(void) { return sizeof(struct fr_ev); }

static void put(struct flight_ring *r, const struct fr_ev *x, const char *const strs[NSTR], const char *const *frames,
		int nframes);

void flight_ring_add(struct flight_ring *r, const struct rec_event *ev, uint32_t weight)
{
	struct fr_ev x = {
		.t_ns = ev->t_ns, .run_ns = ev->run_ns, .wait_ns = ev->wait_ns, .sp = ev->sp, .pc = ev->pc,
		.switches = ev->switches, .pid = ev->pid, .tid = ev->tid, .nr = (int32_t)ev->nr, .fd = ev->fd,
		.stall_ms = ev->stall_ms, .weight = (uint16_t)(weight < 1 ? 1 : weight > 65535 ? 65535 : weight),
		.cls = (uint8_t)ev->cls, .inst = ev->instrumented != 0,
	};
	/* sanitised once, as the writer would: a label never holds a newline */
	char clean[NSTR][REC_LABEL_MAX];
	const char *raw[NSTR] = { ev->thread, ev->syscall, ev->target, ev->fiber, ev->service }, *strs[NSTR];
	for (int i = 0; i < NSTR; i++)
		strs[i] = raw[i] ? (textsafe_label(clean[i], sizeof(clean[i]), raw[i]), clean[i]) : NULL;
	put(r, &x, strs, ev->frames, ev->nframes);
}

void flight_ring_add_limit(struct flight_ring *r, const struct rec_limit *l)
{
	struct fr_ev x = { .t_ns = l->t_ns, .pid = l->pid, .tid = l->tid, .nr = -1, .fd = -1, .weight = 1, .cls = 0 };
	memcpy(&x.run_ns, &l->reading, sizeof(x.run_ns));
	const char *strs[NSTR] = { NULL, l->limit };
	put(r, &x, strs, NULL, 0);
}

/* A full ring of cap made larger, up to cap_max: the records from head
 * to the end of the old ring move to the end of the new one. A ring that
 * kept writing round the whole array would make all of it resident
 * within minutes, whatever its span holds. */
static void grow(struct flight_ring *r)
{
	size_t cap = r->cap * 2 < r->cap_max ? r->cap * 2 : r->cap_max, tail = r->cap - r->head;
	if (r->head) {   /* at 0 the records are in order already */
		memmove(r->ev + cap - tail, r->ev + r->head, tail * sizeof(struct fr_ev));
		r->head = cap - tail;
	}
	r->cap = cap;
}

/* x into the ring, its strings and frames interned (under the lock). */
static void put(struct flight_ring *r, const struct fr_ev *xp, const char *const strs[NSTR], const char *const *frames,
		int nframes)
{
	struct fr_ev x = *xp;
	pthread_mutex_lock(&r->lock);
	if (intern(&r->t[r->cur], strs, frames, nframes, &x) < 0) {
		rebuild(r);
		if (intern(&r->t[r->cur], strs, frames, nframes, &x) < 0) {
			memset(x.str, 0, sizeof(x.str));
			x.str[0] = 1;
			x.stack = 0;
		}
	}
	/* the old ones out: past the span behind this one, or for room */
	while (r->n && x.t_ns > r->ev[r->head].t_ns + r->span_ns) {
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
	if (r->n == r->cap && r->cap < r->cap_max)
		grow(r);
	if (r->n == r->cap) {
		r->evicted_early++;
		r->head = (r->head + 1) % r->cap;
		r->n--;
	}
	r->ev[(r->head + r->n) % r->cap] = x;
	r->n++;
	r->seq++;
	pthread_mutex_unlock(&r->lock);
}

void flight_ring_times(struct flight_ring *r, uint64_t *oldest_ns, uint64_t *newest_ns)
{
	pthread_mutex_lock(&r->lock);
	*oldest_ns = *newest_ns = 0;
	for (size_t i = 0; i < r->n; i++) {
		/* stalls carry their start: the oldest time need not be at head */
		uint64_t t = r->ev[(r->head + i) % r->cap].t_ns;
		if (!i || t < *oldest_ns)
			*oldest_ns = t;
		if (t > *newest_ns)
			*newest_ns = t;
	}
	pthread_mutex_unlock(&r->lock);
}

uint64_t flight_ring_evicted_early(struct flight_ring *r)
{
	pthread_mutex_lock(&r->lock);
	uint64_t n = r->evicted_early;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* Events written per hold of the lock: the sampler's thread waits for it
 * to add, and a whole ring written at once would hold it for seconds. */
#define WRITE_CHUNK 4096

long flight_ring_write(struct flight_ring *r, struct rec_writer *w, uint64_t *seq, uint64_t base_ns,
		       uint64_t *lost)
{
	const char *frames[REC_MAX_FRAMES];
	long done = 0;
	int err = 0, more = 1;
	while (more && !err) {
		pthread_mutex_lock(&r->lock);
		uint64_t first = r->seq - r->n;   /* the oldest event's sequence number */
		if (*seq && *seq < first)
			*lost += first - *seq;
		uint64_t s = *seq > first ? *seq : first, end = r->seq;
		if (end - s > WRITE_CHUNK)
			end = s + WRITE_CHUNK;
		const struct fr_tables *t = &r->t[r->cur];
		for (; s < end && !err; s++) {
			const struct fr_ev *e = &r->ev[(r->head + (size_t)(s - first)) % r->cap];
			const char *strs[NSTR];
			int nf = strings_of(t, e, strs, frames);
			if (!e->cls) {
				struct rec_limit l = { .t_ns = e->t_ns > base_ns ? e->t_ns - base_ns : 0, .pid = e->pid,
						       .tid = e->tid };
				memcpy(&l.reading, &e->run_ns, sizeof(l.reading));
				snprintf(l.limit, sizeof(l.limit), "%s", strs[1] ? strs[1] : "");
				/* a word the tables lost ([ring tables full]) is no verdict: left out */
				int rc = rec_write_limit(w, &l);
				err = rc == -EINVAL ? 0 : rc;
				done++;
				continue;
			}
			struct rec_event pe = {
				.t_ns = e->t_ns > base_ns ? e->t_ns - base_ns : 0, .pid = e->pid, .tid = e->tid,
				.instrumented = e->inst, .cls = (enum probe_class)e->cls, .nr = e->nr, .fd = e->fd,
				.run_ns = e->run_ns, .wait_ns = e->wait_ns, .sp = e->sp, .pc = e->pc,
				.switches = e->switches, .thread = strs[0] ? strs[0] : FULL_TEXT, .syscall = strs[1],
				.target = strs[2], .fiber = strs[3], .service = strs[4], .frames = frames, .nframes = nf,
				.stall_ms = e->stall_ms,
			};
			/* a stall is one event; a sample stands for its ticks */
			for (uint32_t k = 0; k < (e->stall_ms ? 1u : e->weight) && !err; k++)
				err = rec_write(w, &pe);
			done++;
		}
		*seq = s;
		more = s < r->seq;
		pthread_mutex_unlock(&r->lock);
	}
	return err < 0 ? err : done;
}
