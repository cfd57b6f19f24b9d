/*
 * profile_live.c — a sampler event to a resolved profile event: labels,
 * the unwound stack and its re-check (rules in profile_live.h).
 */
#include "profile/profile_live.h"
#include "probe_perf.h"
#include "probe_stat.h"
#include "probe_unwind.h"
#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIVE_MAX_PROBES 256   /* threads whose syscall file we re-read after an unwind */
#define PERF_FRESH_NS 1000000000ull /* a perf sample older than this lends no stack */
/* On-CPU stacks come from perf samples at most this often per second of
 * a thread's CPU time: each is unwound once and lent to the ticks until
 * the next, which keeps profile's own cost low enough for the sampler to
 * stay real-time (sampler_cost.c) and so unbiased on a busy machine. */
#define PERF_STACK_HZ 250

struct live_probe {
	pid_t pid, tid;
	struct probe_syscall sc;         /* opened on the first unwind (fd -1 until then) */
	char  comm[PROBE_COMM_LEN];      /* the thread's own name: redis' bio_*, libuv's workers */
	int   sc_tried;
	struct probe_perf_stream *perf;  /* its cpu-clock samples, opened at its first on-CPU sample */
	struct probe_perf_sample *last;  /* owned: its newest perf sample, time_ns 0: none yet */
	int   perf_tried;
};

struct profile_live {
	struct profile_live_opts o;
	struct probe_unwind *u;
	struct probe_unwind *u_perf;     /* perf samples: their stack copy, then process_vm_readv */
	const struct probe_perf_sample *cur; /* the sample u_perf unwinds */
	struct live_probe probes[LIVE_MAX_PROBES];
	int   nprobes;
	struct profile_live_stats st;
	struct probe_unwind_frame frames[PROFILE_LIVE_DEPTH];
	char  labels[PROFILE_LIVE_DEPTH][PROBE_UNWIND_LABEL_LEN];
	const char *lp[PROFILE_LIVE_DEPTH];
	/* the last perf sample unwound, kept for the ticks that reuse it */
	pid_t cpu_tid;
	uint64_t cpu_time_ns;
	int   cpu_n;
	char  cpu_labels[PROFILE_LIVE_DEPTH][PROBE_UNWIND_LABEL_LEN];
};

struct profile_live *profile_live_new(const struct profile_live_opts *o)
{
	struct profile_live *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->o = *o;
	if (l->o.depth <= 0 || l->o.depth > PROFILE_LIVE_DEPTH)
		l->o.depth = PROFILE_LIVE_DEPTH;
	l->u = probe_unwind_new(NULL, NULL);
	l->u_perf = probe_unwind_new(probe_perf_mem, &l->cur);
	if (!l->u || !l->u_perf) {
		probe_unwind_delete(l->u);
		probe_unwind_delete(l->u_perf);
		free(l);
		return NULL;
	}
	return l;
}

void profile_live_delete(struct profile_live *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->nprobes; i++) {
		probe_syscall_close(&l->probes[i].sc);
		probe_perf_close(l->probes[i].perf);
		free(l->probes[i].last);
	}
	probe_unwind_delete(l->u);
	probe_unwind_delete(l->u_perf);
	free(l);
}

void profile_live_stats(const struct profile_live *l, struct profile_live_stats *out)
{
	*out = l->st;
	out->threads = l->nprobes;
}

/* The task's entry, made at its first sample with its name read once;
 * NULL when the table is full. */
static struct live_probe *task_of(struct profile_live *l, pid_t pid, pid_t tid)
{
	for (int i = 0; i < l->nprobes; i++)
		if (l->probes[i].pid == pid && l->probes[i].tid == tid)
			return &l->probes[i];
	if (l->nprobes == LIVE_MAX_PROBES)
		return NULL;
	struct live_probe *p = &l->probes[l->nprobes++];
	*p = (struct live_probe){ .pid = pid, .tid = tid, .sc = { .fd = -1 } };
	struct probe_stat st;
	if (probe_stat_read(pid, tid, &st) == 0)
		snprintf(p->comm, sizeof(p->comm), "%s", st.comm);
	return p;
}

/* Our own open syscall file of the task, for the re-check; NULL when the
 * table is full (the stack is then kept unverified) or it cannot be opened. */
static struct probe_syscall *probe_of(struct profile_live *l, pid_t pid, pid_t tid)
{
	struct live_probe *p = task_of(l, pid, tid);
	if (!p)
		return NULL;
	if (p->sc.fd < 0 && !p->sc_tried) {
		p->sc_tried = 1;
		probe_syscall_open(&p->sc, pid, tid);
	}
	return p->sc.fd >= 0 ? &p->sc : NULL;
}

/* The n frames unwound into l->frames as labels in l->lp; returns n. */
static int label_frames(struct profile_live *l, int n)
{
	for (int i = 0; i < n; i++) {
		probe_unwind_label(&l->frames[i], l->labels[i], sizeof(l->labels[i]));
		l->lp[i] = l->labels[i];
	}
	return n;
}

/* Unwinds ev's stack into l->lp; returns the frame count. */
static int unwind(struct profile_live *l, const struct sampler_event *ev)
{
	const struct probe_sc_sample *s = ev->sample;
	int n = probe_unwind_stack(l->u, ev->pid, ev->tid, s->sp, s->pc, l->frames, l->o.depth);
	if (n < 0) {
		l->st.unwind_failed++;
		l->lp[0] = "[unknown]";
		return 1;
	}
	struct probe_syscall *p = probe_of(l, ev->pid, ev->tid);
	if (p && probe_unwind_unchanged(p, s) == 0) {
		l->st.moved++;
		l->lp[0] = "[stack changed]";
		return 1;
	}
	l->st.unwound++;
	return label_frames(l, n);
}

/* p's perf stream, opened at its first sample of any kind: by its first
 * on-CPU tick it has run and been sampled. */
static void perf_open_once(struct profile_live *l, struct live_probe *p)
{
	double hz = l->o.rate_hz > 0 ? l->o.rate_hz : 1000;
	if (!p->perf_tried) {
		p->perf_tried = 1;
		if ((p->last = calloc(1, sizeof(*p->last))))
			p->perf = probe_perf_open(p->tid, (uint64_t)(1e9 / (hz < PERF_STACK_HZ ? hz : PERF_STACK_HZ)), 16);
		if (!p->perf && (errno == EACCES || errno == EPERM) && !l->st.perf_why[0])
			probe_perf_explain(l->st.perf_why, sizeof(l->st.perf_why));
		else if (!p->perf && !l->st.perf_why[0])
			snprintf(l->st.perf_why, sizeof(l->st.perf_why), "perf_event_open: %s", strerror(errno));
	}
}

/* An on-CPU sample's stack, unwound into l->lp: the thread's newest perf
 * sample. One comes per period of the thread's CPU time, so the newest is
 * where it ran within its last period on a CPU, however little it runs;
 * only one older than PERF_FRESH_NS of wall time (a thread that barely
 * runs) is not taken. 0 frames when there is none. */
static int cpu_stack(struct profile_live *l, const struct sampler_event *ev)
{
	struct live_probe *p = task_of(l, ev->pid, ev->tid);
	if (!p || !p->perf) {
		l->st.cpu_bare++;
		return 0;
	}
	probe_perf_latest(p->perf, p->last);   /* or the last one stays */
	if (!p->last->time_ns || mono_ns() - p->last->time_ns > PERF_FRESH_NS) {
		l->st.cpu_bare++;
		return 0;
	}
	if (l->cpu_tid == ev->tid && l->cpu_time_ns == p->last->time_ns && l->cpu_n > 0) {
		l->st.cpu_stacks++;
		for (int i = 0; i < l->cpu_n; i++)
			l->lp[i] = l->cpu_labels[i];
		return l->cpu_n;
	}
	l->cur = p->last;
	int n = probe_unwind_stack_fp(l->u_perf, ev->pid, ev->tid, p->last->sp, p->last->pc, p->last->fp, l->frames,
				      l->o.depth);
	l->cur = NULL;
	if (n <= 0) {
		l->st.cpu_bare++;
		return 0;
	}
	l->st.cpu_stacks++;
	for (int i = 0; i < n; i++) {
		probe_unwind_label(&l->frames[i], l->cpu_labels[i], sizeof(l->cpu_labels[i]));
		l->lp[i] = l->cpu_labels[i];
	}
	l->cpu_tid = ev->tid;
	l->cpu_time_ns = p->last->time_ns;
	l->cpu_n = n;
	return n;
}

void profile_live_on_sample(void *arg, const struct sampler_event *ev)
{
	struct profile_live *l = arg;
	if ((l->o.pid && ev->pid != l->o.pid) || (l->o.tid && ev->tid != l->o.tid))
		return;
	const struct probe_verdict *v = ev->verdict;
	struct live_probe *tp = task_of(l, ev->pid, ev->tid);
	if (tp && v->cls != PROBE_NO_ACCESS)
		perf_open_once(l, tp);
	if (tp && tp->perf && v->cls != PROBE_RUNNING)
		probe_perf_latest(tp->perf, tp->last); /* drained at every sample: a full ring drops the newest */
	if (v->cls == PROBE_NO_ACCESS) {
		l->st.no_access++;
		return;
	}
	if (v->cls != PROBE_POLL && v->cls != PROBE_RUNNING && v->cls != PROBE_BLOCKED && v->cls != PROBE_OTHER)
		return;
	char thread[PROBE_COMM_LEN + 32], sysbuf[32], target[PROBE_TARGET_LEN + 48];
	const struct live_probe *task = task_of(l, ev->pid, ev->tid);
	const char *name = task && task->comm[0] ? task->comm : ev->name ? ev->name : "?";
	snprintf(thread, sizeof(thread), "%d/%d %s", (int)ev->pid, (int)ev->tid, name);
	const char *sys = NULL, *tgt = NULL;
	if (v->cls == PROBE_POLL || v->cls == PROBE_BLOCKED) {
		sys = probe_syscall_name(v->nr);
		if (!sys) {
			snprintf(sysbuf, sizeof(sysbuf), "syscall_%ld", v->nr);
			sys = sysbuf;
		}
	}
	struct rec_event pe = {
		.t_ns = ev->t_ns, .pid = ev->pid, .tid = ev->tid, .instrumented = ev->instrumented, .cls = v->cls,
		.nr = v->nr, .fd = v->fd, .run_ns = ev->run_ns, .wait_ns = ev->wait_ns, .sp = ev->sample->sp,
		.pc = ev->sample->pc, .switches = ev->switches, .thread = thread, .service = ev->service,
		/* in the loop's poll no fiber runs ("[no fiber]"); otherwise an untagged
		 * fiber and the scheduler between fibers both read "" ("[untagged]") */
		.fiber = ev->instrumented && v->cls != PROBE_POLL ? (ev->fiber_tag ? ev->fiber_tag : "") : NULL,
	};
	if (v->cls == PROBE_POLL) {
		/* idle stays one visible frame; its stack (the loop) says nothing new */
		if (v->fd >= 0)
			snprintf(target, sizeof(target), "[idle] %s fd %d", sys, v->fd);
		else
			snprintf(target, sizeof(target), "[idle] %s", sys);
		tgt = target;
	} else if (v->cls == PROBE_RUNNING) {
		pe.nframes = cpu_stack(l, ev);
		pe.frames = pe.nframes ? l->lp : NULL;
	} else if (v->cls == PROBE_BLOCKED || v->cls == PROBE_OTHER) {
		if (v->cls == PROBE_OTHER)
			sys = "[not in a syscall]";
		if (v->fd >= 0) {
			if (ev->target)
				snprintf(target, sizeof(target), "fd %d %s", v->fd, ev->target);
			else
				snprintf(target, sizeof(target), "fd %d", v->fd);
			tgt = target;
		}
		if (ev->sample->sp && ev->sample->pc) {
			pe.nframes = unwind(l, ev);
			pe.frames = l->lp;
		}
	}
	pe.syscall = v->cls == PROBE_POLL ? NULL : sys;
	pe.target = tgt;
	l->st.samples++;
	int err = 0;
	if (l->o.ring)
		flight_ring_add(l->o.ring, &pe, ev->weight);
	/* a sample after ticks the sampler skipped stands for them too: the
	 * ticks slowed by unwinding are the busy ones, and counting each
	 * sample once would read a busy worker as idler than list does */
	for (uint32_t k = 0; k < (ev->weight ? ev->weight : 1) && err == 0; k++) {
		l->st.counted++;
		if (l->o.rec)
			err = rec_write(l->o.rec, &pe);
		if (err == 0 && l->o.acc)
			err = profile_acc_add(l->o.acc, &pe);
	}
	if (err < 0 && !l->st.err)
		l->st.err = err;
}

void profile_live_on_stall(void *arg, const struct sampler_stall_event *ev)
{
	struct profile_live *l = arg;
	const struct series_stall *st = ev->stall;
	if ((l->o.pid && ev->pid != l->o.pid) || (l->o.tid && ev->tid != l->o.tid))
		return;
	char thread[PROBE_COMM_LEN + 32], target[PROBE_TARGET_LEN + 48];
	const struct live_probe *task = task_of(l, ev->pid, ev->tid);
	snprintf(thread, sizeof(thread), "%d/%d %s", (int)ev->pid, (int)ev->tid,
		 task && task->comm[0] ? task->comm : ev->name ? ev->name : "?");
	const char *frames[SERIES_STALL_FRAMES];
	for (int i = 0; i < st->nframes && i < SERIES_STALL_FRAMES; i++)
		frames[i] = st->frames[i];
	if (st->fd >= 0)
		snprintf(target, sizeof(target), st->target[0] ? "fd %d %s" : "fd %d", st->fd, st->target);
	struct rec_event pe = {
		.t_ns = st->t_ns, .pid = ev->pid, .tid = ev->tid, .instrumented = ev->instrumented,
		.cls = st->cls == SERIES_RUNNING ? PROBE_RUNNING : st->cls == SERIES_BLOCKED ? PROBE_BLOCKED : PROBE_OTHER,
		.nr = st->nr, .fd = st->fd, .thread = thread, .syscall = st->nr >= 0 ? probe_syscall_name(st->nr) : NULL,
		.target = st->fd >= 0 ? target : NULL, .fiber = ev->instrumented ? st->fiber : NULL,
		.frames = frames, .nframes = st->nframes < SERIES_STALL_FRAMES ? st->nframes : SERIES_STALL_FRAMES,
		.stall_ms = st->dur_ms ? st->dur_ms : 1,
	};
	int err = 0;
	if (l->o.ring)
		flight_ring_add(l->o.ring, &pe, 1);
	if (l->o.rec)
		err = rec_write(l->o.rec, &pe);
	if (err == 0 && l->o.acc)
		err = profile_acc_add(l->o.acc, &pe);
	if (err < 0 && !l->st.err)
		l->st.err = err;
}
