/*
 * replay.c — a recording fed into series at its recorded times (replay.h).
 */
#include "collect/replay.h"
#include "util/clock.h"
#include "collect/recording.h"
#include "collect/sampler.h"
#include "util/idmap.h"
#include "util/textsafe.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

struct rp_event {
	uint64_t t_ns, run_ns, wait_ns, sp, pc;
	uint32_t worker;
	int32_t  nr, fd;
	uint8_t  cls;
	uint8_t  fiber;          /* as series_key.fiber: 1 + index in the worker's tags, 0 none */
};

struct rp_worker {
	pid_t    pid, tid;
	char     name[PROBE_COMM_LEN];
	char     service[PROBE_SERVICE_LEN]; /* as recorded, sanitised; "": none recorded (the name stands in) */
	int      instrumented;
	struct snap_target targets[SNAP_TARGETS];
	int      ntargets;
	char     tags[LOOPSTAT_TAG_MAX][LOOPSTAT_TAG_LEN];
	int      ntags;
	uint64_t run_ns, wait_ns;  /* the last schedstat fed */
	struct series series;
};

struct replay {
	struct rp_event *ev;
	size_t   n, cap, cursor;     /* cursor: events fed so far */
	struct rp_worker **w;
	size_t   nw;
	struct idmap by_tid;         /* (pid, tid) → w index */
	double   rate_hz;
	double   start_unix;         /* the recording's wall clock at t_ns 0 */
	int      cut;                /* it ends without its trailer */
	uint64_t first_ns, end_ns;
	uint64_t last_ns;            /* the latest sample's time (they need not come in order) */
	/* the replay clock: recording time base + (mono now - anchor), frozen while paused or pinned */
	uint64_t base_ns, anchor_ns;
	int      paused, pinned, all_threads;
};

/* ev's worker, made at its first event: NULL with *err -ENOMEM, or -E2BIG
 * past REPLAY_MAX_THREADS (each holds a whole series, ~80 KB). */
static struct rp_worker *worker_of(struct replay *r, const struct rec_event *ev, uint32_t *idx, int *err)
{
	size_t i;
	uint64_t key = idmap_pair(ev->pid, ev->tid);
	if (idmap_get(&r->by_tid, key, &i)) {
		*idx = (uint32_t)i;
		return r->w[i];
	}
	if (r->nw == REPLAY_MAX_THREADS) {
		*err = -E2BIG;
		return NULL;
	}
	*err = -ENOMEM;
	if (!(r->nw & (r->nw - 1))) {   /* grown at powers of two */
		struct rp_worker **w = realloc(r->w, (r->nw ? 2 * r->nw : 1) * sizeof(*w));
		if (!w)
			return NULL;
		r->w = w;
	}
	struct rp_worker *k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	if (idmap_put(&r->by_tid, key, r->nw) < 0) {
		free(k);
		return NULL;
	}
	k->pid = ev->pid;
	k->tid = ev->tid;
	const char *sp = strchr(ev->thread, ' ');   /* "PID/TID name" */
	snprintf(k->name, sizeof(k->name), "%s", sp ? sp + 1 : ev->thread);
	series_init(&k->series);
	*idx = (uint32_t)r->nw;
	r->w[r->nw++] = k;
	return k;
}

/* "fd 7 pipe:[12]" → the worker's fd table; "[idle] ..." names no target. */
static void note_target(struct rp_worker *k, const struct rec_event *ev)
{
	if (!ev->target || ev->fd < 0 || strncmp(ev->target, "fd ", 3) != 0 || k->ntargets == SNAP_TARGETS)
		return;
	for (int i = 0; i < k->ntargets; i++)
		if (k->targets[i].fd == ev->fd)
			return;
	const char *text = strchr(ev->target + 3, ' ');
	if (!text)
		return;
	k->targets[k->ntargets].fd = ev->fd;
	snprintf(k->targets[k->ntargets].text, sizeof(k->targets[0].text), "%s", text + 1);
	k->ntargets++;
}

static uint8_t fiber_index(struct rp_worker *k, const char *tag)
{
	if (!tag || !tag[0])
		return 0;
	for (int i = 0; i < k->ntags; i++)
		if (strcmp(k->tags[i], tag) == 0)
			return (uint8_t)(i + 1);
	if (k->ntags == LOOPSTAT_TAG_MAX)
		return 0;
	snprintf(k->tags[k->ntags], sizeof(k->tags[0]), "%s", tag);
	return (uint8_t)++k->ntags;
}

static int add_event(void *arg, const struct rec_event *ev)
{
	struct replay *r = arg;
	uint32_t idx;
	int err = 0;
	if (ev->stall_ms)
		return 0;   /* a stall captured, not a sample: the replay's series are the samples' */
	if (ev->t_ns > (uint64_t)REPLAY_MAX_SPAN_S * 1000000000u)
		return -E2BIG;
	struct rp_worker *k = worker_of(r, ev, &idx, &err);
	if (!k)
		return err;
	/* refused at the line that passes the cap, not after the whole file */
	if (ev->t_ns > r->last_ns)
		r->last_ns = ev->t_ns;
	if (r->nw * (r->last_ns / 1000000000u + 1) > REPLAY_MAX_THREAD_S)
		return -E2BIG;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4096;
		struct rp_event *e = realloc(r->ev, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		r->ev = e;
		r->cap = cap;
	}
	k->instrumented |= ev->instrumented;
	/* the file's bytes, whoever wrote them: cut at a character, no controls */
	if (ev->service)
		textsafe_label(k->service, sizeof(k->service), ev->service);
	note_target(k, ev);
	r->ev[r->n++] = (struct rp_event){
		.t_ns = ev->t_ns, .run_ns = ev->run_ns, .wait_ns = ev->wait_ns, .sp = ev->sp, .pc = ev->pc,
		.worker = idx, .nr = (int32_t)ev->nr, .fd = ev->fd, .cls = (uint8_t)ev->cls,
		.fiber = fiber_index(k, ev->fiber),
	};
	return 0;
}

int replay_open(FILE *f, struct replay **out, long *line)
{
	struct replay *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	idmap_init(&r->by_tid);
	struct rec_meta meta;
	int err = rec_read(f, &meta, add_event, r, line);
	if (err < 0) {
		replay_delete(r);
		return err;
	}
	r->rate_hz = meta.rate_hz;
	r->start_unix = meta.start_unix;
	r->cut = meta.cut;
	if (r->n) {
		r->first_ns = r->ev[0].t_ns;
		r->end_ns = r->ev[r->n - 1].t_ns;
	}
	r->base_ns = r->first_ns;
	r->anchor_ns = mono_ns();
	*out = r;
	return 0;
}

void replay_delete(struct replay *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nw; i++)
		free(r->w[i]);
	free(r->w);
	idmap_done(&r->by_tid);
	free(r->ev);
	free(r);
}

uint64_t replay_end_ns(const struct replay *r) { return r->end_ns; }
size_t replay_samples(const struct replay *r) { return r->n; }
double replay_rate(const struct replay *r) { return r->rate_hz; }
int replay_cut(const struct replay *r) { return r->cut; }

/* The recording time the replay has reached, capped at its end. */
static uint64_t clock_now(const struct replay *r)
{
	uint64_t t = r->base_ns + (r->paused || r->pinned ? 0 : mono_ns() - r->anchor_ns);
	return t < r->end_ns ? t : r->end_ns;
}

static void copy_tag(char dst[LOOPSTAT_TAG_LEN], const char *src)
{
	size_t l = strnlen(src, LOOPSTAT_TAG_LEN - 1);
	memmove(dst, src, l);
	dst[l] = '\0';
}

static void feed_to(struct replay *r, uint64_t t_ns)
{
	for (; r->cursor < r->n && r->ev[r->cursor].t_ns <= t_ns; r->cursor++) {
		const struct rp_event *e = &r->ev[r->cursor];
		struct rp_worker *k = r->w[e->worker];
		if ((e->run_ns || e->wait_ns) && (e->run_ns != k->run_ns || e->wait_ns != k->wait_ns)) {
			series_add_sched(&k->series, e->t_ns, e->run_ns, e->wait_ns);
			k->run_ns = e->run_ns;
			k->wait_ns = e->wait_ns;
		}
		struct probe_verdict v = { .cls = (enum probe_class)e->cls, .nr = e->nr, .fd = e->fd };
		struct series_ctx ctx = { .sp = e->sp, .pc = e->pc, .fiber = e->fiber };
		/* what a shm reading would have named: the running fiber's tag */
		const char *tag = e->fiber ? k->tags[e->fiber - 1] : "";
		copy_tag(k->series.fiber_tag, tag);
		if (e->fiber)
			copy_tag(k->series.fiber_names[e->fiber], tag);
		k->series.fiber_now = e->fiber;
		series_add_sample(&k->series, e->t_ns, &v, &ctx);
	}
}

void replay_advance_to(struct replay *r, uint64_t t_ns)
{
	r->pinned = 1;
	r->base_ns = t_ns;
	feed_to(r, t_ns);
}

static int rp_snapshot(void *impl, double window_s, int with_history, struct snapshot *snap)
{
	struct replay *r = impl;
	uint64_t now = clock_now(r);
	feed_to(r, now);
	if (snap->cap < r->nw) {
		struct snap_worker *w = realloc(snap->w, r->nw * sizeof(*w));
		if (!w)
			return -ENOMEM;
		snap->w = w;
		snap->cap = r->nw;
	}
	snap->n = 0;
	snap->now_ns = now;
	for (size_t i = 0; i < r->nw; i++) {
		const struct rp_worker *k = r->w[i];
		if (!(k->instrumented || k->series.polls_seen > 0 || r->all_threads))
			continue;
		struct snap_worker *d = &snap->w[snap->n++];
		memset(d, 0, offsetof(struct snap_worker, series));
		d->pid = k->pid;
		d->tid = k->tid;
		memcpy(d->name, k->name, sizeof(d->name));
		memcpy(d->service, k->service, sizeof(d->service));
		d->instrumented = k->instrumented;
		d->loop_fd = -1;             /* how the loop was told apart is not recorded */
		d->ntargets = k->ntargets;
		memcpy(d->targets, k->targets, sizeof(d->targets));
		series_copy_window(&d->series, &k->series, (int64_t)(now / 1000000000ull), window_s, with_history);
	}
	snap->rate_hz = r->rate_hz;
	snap->precision_pts = 0;     /* record samples every thread at every tick */
	snap->total_samples = r->cursor;
	snap->tick_lag_max_ns = 0;
	snap->nrefused = snap->ignored = 0;
	snap->max_workers = 0;
	snap->naccessible = (unsigned)snap->n;   /* a recording holds only samples that were read */
	return 0;
}

static double rp_rate(void *impl) { return ((struct replay *)impl)->rate_hz; }

static void rp_set_paused(void *impl, int paused)
{
	struct replay *r = impl;
	if (paused == r->paused)
		return;
	r->base_ns = clock_now(r);   /* freeze here, or go on from here */
	r->anchor_ns = mono_ns();
	r->paused = paused;
}

static void rp_set_all_threads(void *impl, int on) { ((struct replay *)impl)->all_threads = on; }

static int rp_clock(void *impl, double *unix_s)
{
	const struct replay *r = impl;
	uint64_t t = clock_now(r);
	*unix_s = r->start_unix + (double)t / 1e9;
	return t >= r->end_ns;
}

static int rp_advance(void *impl, uint64_t t_ns)
{
	struct replay *r = impl;
	replay_advance_to(r, t_ns);
	return t_ns > r->end_ns;
}

static uint64_t rp_start_ns(void *impl) { return ((struct replay *)impl)->first_ns; }
static int rp_truncated(void *impl) { return ((struct replay *)impl)->cut; }
static void rp_destroy(void *impl) { replay_delete(impl); }

#define REPLAY_OPS .name = "replay", .caps = SOURCE_SAMPLED | SOURCE_RECORDED, .snapshot = rp_snapshot, \
	.rate = rp_rate, .set_paused = rp_set_paused, .set_all_threads = rp_set_all_threads, .clock = rp_clock, \
	.advance = rp_advance, .start_ns = rp_start_ns, .truncated = rp_truncated

static const struct source_ops replay_ops = { REPLAY_OPS };
static const struct source_ops replay_owned_ops = { REPLAY_OPS, .destroy = rp_destroy };

void replay_source(struct replay *r, struct source *src)
{
	src->ops = &replay_ops;
	src->impl = r;
}

int replay_source_open(const char *path, struct source *src, long *line)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	struct replay *r = NULL;
	int err = replay_open(f, &r, line);
	fclose(f);
	if (err == 0) {
		src->ops = &replay_owned_ops;
		src->impl = r;
	}
	return err;
}
