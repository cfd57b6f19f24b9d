/*
 * profile_acc.c — profile events into the tree, with "running" split
 * between on CPU and waiting for a CPU.
 *
 * A running sample cannot tell by itself whether the thread was on a CPU
 * or queued for one. schedstat can, for an interval: Δsum_exec_runtime is
 * time on a CPU, Δrun_delay time queued. The sampler reads schedstat a few
 * times a second, so a running sample is held until its thread's totals
 * next change and is then settled with that interval's ratio; an
 * accumulator spreads the waiting share evenly over the held samples, so
 * the split is deterministic (a report of a recording gives the same tree
 * as the live run).
 */
#include "profile/profile_acc.h"
#include "profile/profile_stalls.h"
#include "util/idmap.h"
#include "util/textsafe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


struct held {
	char *fiber;                 /* owned; NULL: none */
	int   has_fiber;
	char **frames;               /* owned: the on-CPU stack (a perf sample's), NULL: none */
	int   nframes;
};

static void held_free(struct held *h)
{
	free(h->fiber);
	for (int i = 0; i < h->nframes; i++)
		free(h->frames[i]);
	free(h->frames);
}

struct stall {
	char    *fiber;              /* owned; "" untagged */
	uint64_t longest_ns, runs;
};

struct acc_thread {
	pid_t    pid, tid;
	/* the stall lint: the current stretch of one switch-counter value outside the poll */
	int      in_run;
	uint64_t sw, run_first_ns, run_last_ns;
	char    *run_fiber;          /* owned */
	struct stall *stalls;
	size_t   nstalls;
	char    *label;              /* owned */
	char    *service;            /* owned: the last one its events named, NULL none */
	uint64_t run_ns, wait_ns;    /* the reading the held samples came after */
	int      have_reading;
	double   wait_frac;          /* of the last settled interval */
	double   carry;              /* the accumulator of the waiting share */
	struct held *held;
	size_t   nheld, capheld;
	/* a stall captured, open until the thread's next sample in its poll */
	int      stall_open, stall_g, stall_have_reading;
	uint64_t stall_start_ns, stall_run0, stall_wait0, stall_read0_ns;
	uint64_t reading_seen_ns;    /* the event its last reading first came with */
};

struct profile_acc {
	struct profile_tree *tree;   /* made at the first event (PROFILE_ACC_AUTO_FIBER needs it) */
	unsigned flags;
	struct acc_thread *th;
	size_t   nth, capth;
	struct idmap by_tid;         /* (pid, tid) → th index: a recording may name 262,144 threads */
	uint64_t samples, first_ns, last_ns;
	struct profile_stalls *stalls; /* the stalls captured, by stack; made at the first */
};

struct profile_acc *profile_acc_new(unsigned flags)
{
	struct profile_acc *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->flags = flags;
	idmap_init(&a->by_tid);
	return a;
}

void profile_acc_delete(struct profile_acc *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nth; i++) {
		for (size_t k = 0; k < a->th[i].nheld; k++)
			held_free(&a->th[i].held[k]);
		free(a->th[i].held);
		free(a->th[i].label);
		free(a->th[i].service);
		free(a->th[i].run_fiber);
		for (size_t k = 0; k < a->th[i].nstalls; k++)
			free(a->th[i].stalls[k].fiber);
		free(a->th[i].stalls);
	}
	free(a->th);
	profile_stalls_delete(a->stalls);
	idmap_done(&a->by_tid);
	profile_tree_delete(a->tree);
	free(a);
}

/* ev's thread, added at its first event; NULL with *err -ENOMEM, or
 * -E2BIG past PROFILE_ACC_MAX_THREADS. */
static struct acc_thread *thread_of(struct profile_acc *a, const struct rec_event *ev, int *err)
{
	size_t i;
	uint64_t key = idmap_pair(ev->pid, ev->tid);
	if (idmap_get(&a->by_tid, key, &i))
		return &a->th[i];
	if (a->nth == PROFILE_ACC_MAX_THREADS) {
		*err = -E2BIG;
		return NULL;
	}
	*err = -ENOMEM;
	if (a->nth == a->capth) {
		size_t cap = a->capth ? a->capth * 2 : 8;
		struct acc_thread *th = realloc(a->th, cap * sizeof(*th));
		if (!th)
			return NULL;
		a->th = th;
		a->capth = cap;
	}
	struct acc_thread *t = &a->th[a->nth];
	memset(t, 0, sizeof(*t));
	t->pid = ev->pid;
	t->tid = ev->tid;
	const char *sp = strchr(ev->thread, ' ');
	if (a->flags & PROFILE_ACC_BY_NAME && sp && sp[1])   /* "PID/TID name": pids change between runs */
		t->label = ev->pid == ev->tid ? strdup(sp + 1) : (asprintf(&t->label, "%s (other threads)", sp + 1) < 0 ? NULL : t->label);
	else
		t->label = strdup(ev->thread);
	if (!t->label)
		return NULL;
	if (idmap_put(&a->by_tid, key, a->nth) < 0) {
		free(t->label);
		return NULL;
	}
	*err = 0;
	a->nth++;
	return t;
}

/*
 * Settles t's held samples at its current wait_frac: that share of them
 * is waiting for a CPU, the rest on one. Which ones wait: first those
 * without a perf stack (a cpu-clock sample comes only while the thread
 * runs, so a runnable sample without a fresh one most likely waited),
 * then the last ones. The counts are the same either way.
 */
static int settle(struct profile_acc *a, struct acc_thread *t)
{
	size_t waits = 0, bare = 0;
	for (size_t k = 0; k < t->nheld; k++) {
		t->carry += t->wait_frac;
		if (t->carry >= 0.5) {   /* rounds: 1 sample at 50% waiting goes to waiting */
			waits++;
			t->carry -= 1.0;
		}
		bare += t->held[k].nframes == 0;
	}
	size_t stacked_waits = waits > bare ? waits - bare : 0, bare_waits = waits - stacked_waits, seen = 0;
	for (size_t k = 0; k < t->nheld; k++) {
		struct held *h = &t->held[k];
		enum profile_state st = PROFILE_ON_CPU;
		if (h->nframes == 0 && bare_waits > 0) {
			st = PROFILE_CPU_WAIT;
			bare_waits--;
		} else if (h->nframes > 0 && ++seen > (t->nheld - bare) - stacked_waits) {
			st = PROFILE_CPU_WAIT;
		}
		/* the stack is where it ran: on cpu only */
		struct profile_sample s = { .thread = t->label, .service = t->service, .state = st,
					    .fiber = h->has_fiber ? (h->fiber ? h->fiber : "") : NULL,
					    .frames = st == PROFILE_ON_CPU ? (const char *const *)h->frames : NULL,
					    .nframes = st == PROFILE_ON_CPU ? h->nframes : 0 };
		int err = profile_tree_add(a->tree, &s, 1);
		if (err < 0)
			return err;
	}
	for (size_t k = 0; k < t->nheld; k++)
		held_free(&t->held[k]);
	t->nheld = 0;
	return 0;
}

/* A new schedstat reading: the held samples belong to the interval it closes. */
static int new_reading(struct profile_acc *a, struct acc_thread *t, uint64_t run_ns, uint64_t wait_ns)
{
	if (t->have_reading && run_ns >= t->run_ns && wait_ns >= t->wait_ns) {
		uint64_t dr = run_ns - t->run_ns, dw = wait_ns - t->wait_ns;
		t->wait_frac = dr + dw ? (double)dw / (double)(dr + dw) : 0;
		int err = settle(a, t);
		if (err < 0)
			return err;
	}
	/* before the first reading there is no interval: the samples wait for the next one */
	t->have_reading = 1;
	t->run_ns = run_ns;
	t->wait_ns = wait_ns;
	return 0;
}

static int hold(struct acc_thread *t, const struct rec_event *ev)
{
	if (t->nheld == t->capheld) {
		size_t cap = t->capheld ? t->capheld * 2 : 64;
		struct held *h = realloc(t->held, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		t->held = h;
		t->capheld = cap;
	}
	struct held *h = &t->held[t->nheld];
	*h = (struct held){ .has_fiber = ev->fiber != NULL };
	if (ev->fiber && ev->fiber[0] && !(h->fiber = strdup(ev->fiber)))
		return -ENOMEM;
	if (ev->nframes > 0) {
		if (!(h->frames = calloc((size_t)ev->nframes, sizeof(*h->frames)))) {
			held_free(h);
			return -ENOMEM;
		}
		for (; h->nframes < ev->nframes; h->nframes++)
			if (!(h->frames[h->nframes] = strdup(ev->frames[h->nframes]))) {
				held_free(h);
				return -ENOMEM;
			}
	}
	t->nheld++;
	return 0;
}

static int close_run(struct acc_thread *t)
{
	if (!t->in_run)
		return 0;
	t->in_run = 0;
	size_t k = 0;
	while (k < t->nstalls && strcmp(t->stalls[k].fiber, t->run_fiber) != 0)
		k++;
	if (k == t->nstalls) {
		struct stall *s = realloc(t->stalls, (t->nstalls + 1) * sizeof(*s));
		if (!s)
			return -ENOMEM;
		t->stalls = s;
		s[k] = (struct stall){ .fiber = t->run_fiber };
		t->run_fiber = NULL;
		t->nstalls++;
	}
	uint64_t len = t->run_last_ns - t->run_first_ns;
	if (len > t->stalls[k].longest_ns)
		t->stalls[k].longest_ns = len;
	t->stalls[k].runs++;
	return 0;
}

/* The switch counter stands still from one fiber switch to the next: a
 * stretch of samples outside the poll with one value is one fiber's run. */
static int track_run(struct acc_thread *t, const struct rec_event *ev)
{
	if (ev->cls == PROBE_POLL)
		return close_run(t);
	if (t->in_run && ev->switches == t->sw) {
		t->run_last_ns = ev->t_ns;
		return 0;
	}
	int err = close_run(t);
	free(t->run_fiber);
	if (err < 0 || !(t->run_fiber = strdup(ev->fiber ? ev->fiber : "")))
		return -ENOMEM;
	t->in_run = 1;
	t->sw = ev->switches;
	t->run_first_ns = t->run_last_ns = ev->t_ns;
	return 0;
}

/* A stall captured: into its stack's group, open on its thread until
 * the thread is next seen in its poll (end_stall). */
static int add_stall(struct profile_acc *a, const struct rec_event *ev)
{
	int err = 0;
	struct acc_thread *t = thread_of(a, ev, &err);
	if (!t)
		return err;
	if (!a->stalls && !(a->stalls = profile_stalls_new()))
		return -ENOMEM;
	int g = profile_stalls_add(a->stalls, ev);
	if (g == -ENOMEM)
		return g;
	uint64_t so_far = (uint64_t)ev->stall_ms * 1000000;
	t->stall_open = g >= 0;
	t->stall_g = g;
	t->stall_start_ns = ev->t_ns > so_far ? ev->t_ns - so_far : 0;
	t->stall_have_reading = t->have_reading;
	t->stall_run0 = t->run_ns;
	t->stall_wait0 = t->wait_ns;
	t->stall_read0_ns = t->reading_seen_ns;
	return 0;
}

/* The thread's open stall ends at this sample in its poll: its whole
 * length, and the CPU wait between the schedstat reading before it and
 * this sample's when this one is newer, over the time between the two
 * (readings come every 250 ms: the share is of the time around the
 * stall, which is what can be measured of it). */
static void end_stall(struct profile_acc *a, struct acc_thread *t, const struct rec_event *ev)
{
	if (!t->stall_open || ev->cls != PROBE_POLL || ev->t_ns < t->stall_start_ns)
		return;
	t->stall_open = 0;
	int64_t wait = -1;
	uint64_t around = 0;
	if (t->stall_have_reading && (ev->run_ns != t->stall_run0 || ev->wait_ns != t->stall_wait0) &&
	    ev->run_ns >= t->stall_run0 && ev->wait_ns >= t->stall_wait0 && ev->t_ns > t->stall_read0_ns) {
		wait = (int64_t)(ev->wait_ns - t->stall_wait0);
		around = ev->t_ns - t->stall_read0_ns;
	}
	profile_stalls_end(a->stalls, t->stall_g, ev->t_ns - t->stall_start_ns, wait, around);
}

/* A target without what differs from run to run of the same program: a
 * pipe's or socket's inode ("pipe:[7230779]" is "pipe"). NULL stays NULL. */
static const char *stable_target(char *buf, size_t len, const char *target)
{
	if (!target)
		return NULL;
	size_t o = 0;
	for (const char *p = target; *p && o + 1 < len; p++) {
		size_t d = 0;
		if (p[0] == ':' && p[1] == '[')
			while (p[2 + d] >= '0' && p[2 + d] <= '9')
				d++;
		if (d && p[2 + d] == ']') {
			p += 2 + d;
			continue;
		}
		buf[o++] = *p;
	}
	buf[o] = '\0';
	return buf;
}

int profile_acc_add(struct profile_acc *a, const struct rec_event *ev)
{
	if (!ev->thread || ev->cls < PROBE_POLL || ev->cls > PROBE_OTHER)
		return -EINVAL;
	if (ev->stall_ms)
		return add_stall(a, ev);
	unsigned tf = a->flags & ~(PROFILE_ACC_AUTO_FIBER | PROFILE_ACC_BY_NAME);
	if (a->flags & PROFILE_ACC_AUTO_FIBER && ev->instrumented)
		tf |= PROFILE_TREE_BY_FIBER;
	if (!a->tree && !(a->tree = profile_tree_new(tf)))
		return -ENOMEM;
	int err = 0;
	struct acc_thread *t = thread_of(a, ev, &err);
	if (!t)
		return err;
	end_stall(a, t, ev);
	if ((ev->run_ns || ev->wait_ns) && (!t->have_reading || ev->run_ns != t->run_ns || ev->wait_ns != t->wait_ns)) {
		t->reading_seen_ns = ev->t_ns;
		err = new_reading(a, t, ev->run_ns, ev->wait_ns);
	}
	if (err == 0 && ev->instrumented)
		err = track_run(t, ev);
	if (err == 0 && ev->service && (!t->service || strcmp(t->service, ev->service) != 0)) {
		free(t->service);
		err = (t->service = strdup(ev->service)) ? 0 : -ENOMEM;
	}
	if (err < 0)
		return err;
	char target[PROFILE_LABEL_MAX];
	if (ev->cls == PROBE_RUNNING) {
		err = hold(t, ev);
	} else {
		struct profile_sample s = {
			.thread = t->label, .service = t->service,
			.state = ev->cls == PROBE_POLL ? PROFILE_IDLE : PROFILE_BLOCKED,
			.syscall = ev->syscall,
			.target = a->flags & PROFILE_ACC_BY_NAME ? stable_target(target, sizeof(target), ev->target) : ev->target,
			.frames = ev->frames, .nframes = ev->nframes,
			.fiber = ev->fiber,
		};
		err = profile_tree_add(a->tree, &s, 1);
	}
	if (err < 0)
		return err;
	if (!a->samples++)
		a->first_ns = ev->t_ns;
	a->last_ns = ev->t_ns;
	return 0;
}

struct profile_tree *profile_acc_finish(struct profile_acc *a)
{
	if (!a->tree && !(a->tree = profile_tree_new(a->flags & ~(PROFILE_ACC_AUTO_FIBER | PROFILE_ACC_BY_NAME))))
		return NULL;
	for (size_t i = 0; i < a->nth; i++)
		if (settle(a, &a->th[i]) < 0 || close_run(&a->th[i]) < 0)
			return NULL;
	return a->tree;
}

uint64_t profile_acc_samples(const struct profile_acc *a, uint64_t *first_ns, uint64_t *last_ns)
{
	if (first_ns)
		*first_ns = a->first_ns;
	if (last_ns)
		*last_ns = a->last_ns;
	return a->samples;
}

static int by_longest(const void *x, const void *y)
{
	const struct profile_stall *a = x, *b = y;
	return a->longest_ns < b->longest_ns ? 1 : a->longest_ns > b->longest_ns ? -1 : strcmp(a->fiber, b->fiber);
}

int profile_acc_stalls(const struct profile_acc *a, struct profile_stall *out, int max)
{
	int n = 0;
	for (size_t i = 0; i < a->nth; i++)
		for (size_t k = 0; k < a->th[i].nstalls; k++, n++)
			if (n < max)
				out[n] = (struct profile_stall){ a->th[i].label, a->th[i].stalls[k].fiber,
								 a->th[i].stalls[k].longest_ns, a->th[i].stalls[k].runs };
	qsort(out, (size_t)(n < max ? n : max), sizeof(*out), by_longest);
	return n;
}

int profile_acc_write_stalls(const struct profile_acc *a, FILE *f)
{
	struct profile_stall st[64];
	int n = profile_acc_stalls(a, st, 64);
	if (a->stalls && profile_stalls_write(a->stalls, f) < 0)
		return -EIO;
	if (n == 0)
		return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
	fprintf(f, "\nlongest run without a switch (the stall lint), by fiber:\n");
	for (int i = 0; i < n && i < 64; i++) {
		char fiber[PROFILE_LABEL_MAX], thread[PROFILE_LABEL_MAX];
		textsafe_label(fiber, sizeof(fiber), st[i].fiber[0] ? st[i].fiber : "[untagged]");
		textsafe_label(thread, sizeof(thread), st[i].thread);   /* holds the comm */
		fprintf(f, "  %9.1f ms  %-20s %s (%llu runs)\n", (double)st[i].longest_ns / 1e6, fiber, thread,
			(unsigned long long)st[i].runs);
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

static int read_one(void *arg, const struct rec_event *ev)
{
	return profile_acc_add(arg, ev);
}

int profile_acc_read(struct profile_acc *a, FILE *f, struct rec_meta *meta, long *line)
{
	return rec_read(f, meta, read_one, a, line);
}
