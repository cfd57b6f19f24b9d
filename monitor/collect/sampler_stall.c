/*
 * sampler_stall.c — stall capture: a worker out of its poll longer than
 * the stall threshold is captured at that moment, once per busy span and
 * at most SAMPLER_STALL_BURST times a minute: its state, its syscall and
 * fd with the fd's target, its running fiber, and its user stack. Blocked
 * in a syscall, the stack is unwound from the syscall file's sp and pc
 * (probe_unwind.h, as profile does); on a CPU, from one perf_event
 * cpu-clock sample of that thread (probe_perf.h). Neither stops it.
 * Under the bpf source the kernel sees the moment itself and sends the
 * registers and a copy of the stack's top (probe_bpf.h), unwound here as
 * a perf sample's: sampler_stall_bpf.
 */
#include "collect/sampler_stall.h"
#include "collect/sampler_int.h"
#include "probe_bpf.h"
#include "probe_perf.h"
#include "probe_unwind.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MINUTE_NS (60 * NS)
#define PERF_PERIOD_US 200    /* a sample after 0.2 ms of the thread's CPU time: on a loaded
                               * machine a stalled thread may get little of a CPU in PERF_WAIT_MS */
#define PERF_WAIT_MS   20     /* and no longer than this for it: it may have left the CPU */
/* Captures a second over all workers at most: each may hold the tick up
 * to PERF_WAIT_MS, and a host sweep can find hundreds of busy loops. A
 * stall turned away here is tried again at the next tick while it lasts. */
#define CAPTURES_PER_S 4
/* Symbol look-ups one capture may spend on the sampling thread: the rest
 * of a stack is module+offset until a later capture names it. */
#define SYMBOLS_NS (5 * 1000000ull)

struct sampler_stall {
	struct probe_unwind *uw;             /* syscall stacks: process_vm_readv */
	struct probe_unwind *uw_perf;        /* perf samples: their stack copy, then process_vm_readv */
	const struct probe_perf_sample *cur; /* the sample uw_perf unwinds */
	struct probe_perf_sample perf;
	struct probe_unwind_frame frames[SERIES_STALL_FRAMES];
	uint64_t second;                     /* the second of the last capture (series clock) */
	unsigned in_second;                  /* and how many it had */
};

int sampler_stall_init(struct sampler *s)
{
	if (!s->stall_ns)
		return 0;
	struct sampler_stall *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->uw = probe_unwind_new(NULL, NULL);
	st->uw_perf = probe_unwind_new(probe_perf_mem, &st->cur);
	if (!st->uw || !st->uw_perf) {
		probe_unwind_delete(st->uw);
		probe_unwind_delete(st->uw_perf);
		free(st);
		return -ENOMEM;
	}
	uint64_t budget = SYMBOLS_NS;
	const char *e = getenv("LOOPSTAT_STALL_SYMBOLS_MS");
	double ms = e && *e ? strtod(e, NULL) : NAN;
	if (ms > 0 && ms < 60000)
		budget = ms * 1e6 >= 1 ? (uint64_t)(ms * 1e6) : 1;
	probe_unwind_set_budget(st->uw, budget);
	probe_unwind_set_budget(st->uw_perf, budget);
	s->stall = st;
	return 0;
}

void sampler_stall_free(struct sampler *s)
{
	if (!s->stall)
		return;
	probe_unwind_delete(s->stall->uw);
	probe_unwind_delete(s->stall->uw_perf);
	free(s->stall);
	s->stall = NULL;
}

/* Room for one more capture of w in the last minute. */
static int within_rate(struct sworker *w, uint64_t now)
{
	uint64_t oldest = w->stall_times[w->nstall_times % SAMPLER_STALL_BURST];
	if (w->nstall_times >= SAMPLER_STALL_BURST && now - oldest < MINUTE_NS)
		return 0;
	w->stall_times[w->nstall_times++ % SAMPLER_STALL_BURST] = now;
	return 1;
}

static void copy_frames(struct series_stall *rec, const struct probe_unwind_frame *f, int n)
{
	rec->nframes = n < SERIES_STALL_FRAMES ? n : SERIES_STALL_FRAMES;
	for (int i = 0; i < rec->nframes; i++)
		probe_unwind_label(&f[i], rec->frames[i], sizeof(rec->frames[i]));
}

static void why_errno(struct series_stall *rec, const char *what, int err)
{
	snprintf(rec->why, sizeof(rec->why), "%s: %s", what, strerror(-err));
}

/* Blocked in a syscall: the stack from its sp and pc, kept only when the
 * thread is still in that syscall afterwards. */
static void stack_in_syscall(struct sampler_stall *st, struct sworker *w, struct series_stall *rec)
{
	const struct probe_sc_sample *smp = &w->last_smp;
	if (!smp->pc) {
		snprintf(rec->why, sizeof(rec->why), "no pc in the syscall file");
		return;
	}
	int n = probe_unwind_stack(st->uw, w->pid, w->tid, smp->sp, smp->pc, st->frames, SERIES_STALL_FRAMES);
	if (n < 0) {
		why_errno(rec, "unwind", n);
		return;
	}
	if (probe_unwind_unchanged(&w->sc, smp) == 0) {
		snprintf(rec->why, sizeof(rec->why), "it left the syscall during the unwind");
		return;
	}
	copy_frames(rec, st->frames, n);
	rec->stack_from = SERIES_STACK_SYSCALL;
}

/* Blocked in syscall nr on fd (-1: none): with what the fd is, when known. */
static void in_syscall(const struct sworker *w, struct series_stall *rec, long nr, int fd)
{
	rec->nr = (int32_t)nr;
	rec->fd = fd;
	for (int i = 0; i < w->ntargets && fd >= 0; i++)
		if (w->targets[i].fd == fd)
			snprintf(rec->target, sizeof(rec->target), "%s", w->targets[i].text);
}

/* The perf sample st->perf unwound into rec (its stack copy, then the
 * target's memory). */
static void unwind_perf(struct sampler_stall *st, struct sworker *w, struct series_stall *rec, int from)
{
	st->cur = &st->perf;
	int n = probe_unwind_stack_fp(st->uw_perf, w->pid, w->tid, st->perf.sp, st->perf.pc, st->perf.fp, st->frames,
				      SERIES_STALL_FRAMES);
	st->cur = NULL;
	if (n < 0) {
		why_errno(rec, "unwind", n);
		return;
	}
	copy_frames(rec, st->frames, n);
	rec->stack_from = (uint8_t)from;
}

/* On a CPU: one perf sample of the thread, unwound from its stack copy. */
static void stack_on_cpu(struct sampler *s, struct sworker *w, struct series_stall *rec)
{
	struct sampler_stall *st = s->stall;
	int err = probe_perf_sample_thread(w->pid, w->tid, PERF_PERIOD_US, PERF_WAIT_MS, &st->perf);
	if (err == -EACCES || err == -EPERM) {
		probe_perf_explain(rec->why, sizeof(rec->why));
		return;
	}
	if (err == -EAGAIN) {
		snprintf(rec->why, sizeof(rec->why), "it left the CPU before a perf sample");
		return;
	}
	if (err < 0) {
		why_errno(rec, "perf_event_open", err);
		return;
	}
	unwind_perf(st, w, rec, SERIES_STACK_PERF);
}

static void keep(struct sampler *s, struct sworker *w, struct series_stall *rec)
{
	if (w->instrumented)
		snprintf(rec->fiber, sizeof(rec->fiber), "%s", w->series.fiber_tag);
	series_add_stall(&w->series, rec);
	if (s->on_stall) {
		struct sampler_stall_event ev = { w->pid, w->tid, w->name, w->instrumented, rec };
		s->on_stall(s->on_sample_arg, &ev);
	}
}

static void capture(struct sampler *s, struct sworker *w, uint64_t now, uint64_t start, uint64_t open_ns)
{
	struct series_stall rec = { .t_ns = now, .span_start_ns = start, .dur_ms = (uint32_t)(open_ns / 1000000),
				    .nr = -1, .fd = -1 };
	const struct probe_verdict *v = &w->last_v;
	rec.cls = v->cls == PROBE_RUNNING ? SERIES_RUNNING : v->cls == PROBE_BLOCKED ? SERIES_BLOCKED : SERIES_OTHER;
	if (v->cls == PROBE_BLOCKED)
		in_syscall(w, &rec, v->nr, v->fd);
	if (v->cls == PROBE_BLOCKED)
		stack_in_syscall(s->stall, w, &rec);
	else if (v->cls == PROBE_RUNNING)
		stack_on_cpu(s, w, &rec);
	else
		snprintf(rec.why, sizeof(rec.why), "neither in a syscall nor on a CPU (stopped or traced)");
	keep(s, w, &rec);
}

void sampler_stall_bpf(struct sampler *s, struct sworker *w, const struct probe_bpf_stall *e)
{
	struct sampler_stall *st = s->stall;
	uint64_t now = e->ts_ns > s->t0 ? e->ts_ns - s->t0 : 0;
	uint64_t start = now > e->span_ns ? now - e->span_ns : 0;
	if (!st || w->gone_ns || start == w->stall_span || !within_rate(w, now))
		return;
	w->stall_span = start;
	struct series_stall rec = { .t_ns = now, .span_start_ns = start, .dur_ms = (uint32_t)(e->span_ns / 1000000),
				    .nr = -1, .fd = -1, .ended = (uint8_t)e->ended };
	rec.cls = e->nr >= 0 ? SERIES_BLOCKED : SERIES_RUNNING;
	if (e->nr >= 0) {
		int fd = probe_syscall_takes_fd(e->nr) ? (int)e->arg0 : -1;
		if (fd >= 0)
			sampler_add_target(s, w, fd, 0);
		in_syscall(w, &rec, e->nr, fd);
	}
	if (e->ended) {
		rec.lo_ms = rec.hi_ms = rec.dur_ms;   /* the kernel's clock: no ticks to be between */
		/* no syscall exit and no preemption after the threshold: the
		 * kernel saw it first at the poll, whose stack is no use */
		snprintf(rec.why, sizeof(rec.why), "on a CPU to its end with no syscall or preemption to catch it in");
	} else if (!e->stack_len) {
		snprintf(rec.why, sizeof(rec.why), "its stack was not resident when the kernel saw the stall");
	} else {
		st->perf.pc = e->regs_pc;
		st->perf.sp = e->sp;
		st->perf.fp = e->fp;
		st->perf.time_ns = e->ts_ns;
		st->perf.stack_len = e->stack_len < sizeof(st->perf.stack) ? e->stack_len : sizeof(st->perf.stack);
		memcpy(st->perf.stack, e->stack, st->perf.stack_len);
		unwind_perf(st, w, &rec, SERIES_STACK_BPF);
	}
	keep(s, w, &rec);
}

void sampler_check_stalls(struct sampler *s, uint64_t now)
{
	if (!s->stall)
		return;
	struct sampler_stall *st = s->stall;
	if (now / NS != st->second) {
		st->second = now / NS;
		st->in_second = 0;
	}
	for (size_t i = 0; i < s->n && st->in_second < CAPTURES_PER_S; i++) {
		struct sworker *w = s->w[i];
		if (w->tick_mode == TICK_SKIP && w->prec.last_cls == SERIES_POLL)
			continue;   /* last seen in its poll, not sampled since: no span open */
		if (w->series.exact_spans)
			continue;   /* the kernel watches its spans: its stalls come from there */
		uint64_t start, open = series_span_open_ns(&w->series, now, &start);
		if (w->gone_ns || w->no_access || open < s->stall_ns || start == w->stall_span)
			continue;
		w->stall_span = start;   /* one capture per span */
		if (within_rate(w, now)) {
			st->in_second++;
			capture(s, w, now, start, open);
		}
	}
}
