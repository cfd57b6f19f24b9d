/*
 * unwind_walk.c — one unwind: the stack snapshot libdwfl reads through
 * (a few pages in one process_vm_readv instead of one syscall per word),
 * the frame pointer found on it, the walk, and the remembered stacks that
 * spare a thread parked in the same place another walk.
 */
#include "probe_unwind.h"
#include "probe_syscall.h"
#include "unwind_int.h"

#include <elfutils/libdwfl.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static pid_t uw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)arg;
	(void)thread_argp;
	return 0; /* we only ever unwind the one thread asked for */
}

static bool uw_get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

/* Extends the snapshot so that it covers [snap_addr, end): doubling reads,
 * so a deep stack costs a few syscalls, a shallow one a single one.
 * Returns 1 when covered. */
static int uw_snap_cover(struct probe_unwind *u, uint64_t end)
{
	if (end <= u->snap_addr + u->snap_len)
		return 1;
	if (u->snap_end || end - u->snap_addr > UW_SNAP)
		return 0;
	size_t want = u->snap_len ? 2 * u->snap_len : UW_SNAP_FIRST;
	while (want < end - u->snap_addr)
		want *= 2;
	if (want > UW_SNAP)
		want = UW_SNAP;
	size_t ask = want - u->snap_len;
	ssize_t n = u->mem(u->ctx, u->cur->pid, u->snap_addr + u->snap_len, u->snap + u->snap_len, ask);
	if (n < (ssize_t)ask)
		u->snap_end = 1;
	if (n > 0)
		u->snap_len += (size_t)n;
	return end <= u->snap_addr + u->snap_len;
}

static int uw_snap_word(struct probe_unwind *u, uint64_t addr, uint64_t *w)
{
	if (addr < u->snap_addr || !uw_snap_cover(u, addr + 8))
		return 0;
	size_t off = addr - u->snap_addr;
	memcpy(w, u->snap + off, 8);
	if (addr + 8 > u->snap_hi)
		u->snap_hi = addr + 8;
	/* mark both 8-byte words an unaligned read may span */
	for (size_t k = off / 8; k <= (off + 7) / 8 && k < UW_SNAP / 8; k++)
		u->touched[k / 64] |= 1ull << (k % 64);
	return 1;
}

static bool uw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct probe_unwind *u = arg;
	if (addr >= u->snap_addr && addr - u->snap_addr <= UW_SNAP - sizeof(*result) &&
	    uw_snap_word(u, addr, result))
		return true;
	u->outside = 1;
	uint64_t w;
	if (u->mem(u->ctx, u->cur->pid, addr, &w, sizeof(w)) != (ssize_t)sizeof(w))
		return false;
	*result = w;
	return true;
}

static bool uw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct probe_unwind *u = arg;
	Dwarf_Word sp = u->sp, fp = u->fp;
	if (!dwfl_thread_state_registers(thread, UW_DWARF_SP, 1, &sp))
		return false;
	if (u->have_fp && !dwfl_thread_state_registers(thread, UW_DWARF_FP, 1, &fp))
		return false;
	dwfl_thread_state_register_pc(thread, u->pc);
	return true;
}

const Dwfl_Thread_Callbacks uw_thread_callbacks = {
	.next_thread = uw_next_thread,
	.get_thread = uw_get_thread,
	.memory_read = uw_memory_read,
	.set_initial_registers = uw_set_initial_registers,
};

/* addr is code: in an executable mapping, a file's or JIT code's. */
static int uw_in_module(const struct probe_unwind *u, uint64_t addr)
{
	return addr && uw_exec_find(u->cur->exec, u->cur->nexec, addr) != NULL;
}

/* The frame pointer of the innermost frame record above sp: a 16-aligned
 * slot holding a higher 16-aligned stack address (or 0 at the end of the
 * chain) next to a return address into a module, whose own record looks
 * the same. That is where the blocked thread's fp register points when the
 * wrapper's caller keeps frame pointers; stale words rarely pass both. */
static int uw_find_fp(struct probe_unwind *u, uint64_t *fp)
{
	uint64_t end = u->snap_addr + UW_SNAP;
	for (uint64_t a = (u->sp + 15) & ~15ull; a + 16 <= end; a += 16) {
		uint64_t next, ret, next2, ret2;
		if (!uw_snap_word(u, a, &next) || !uw_snap_word(u, a + 8, &ret))
			break;
		if (next <= a || next >= end || (next & 15) || !uw_in_module(u, ret))
			continue;
		if (!uw_snap_word(u, next, &next2) || !uw_snap_word(u, next + 8, &ret2))
			continue;
		if ((next2 != 0 && (next2 <= next || (next2 & 15))) || (next2 && !uw_in_module(u, ret2)))
			continue;
		*fp = a;
		return 1;
	}
	return 0;
}

struct uw_walk {
	struct probe_unwind *u;
	struct probe_unwind_frame *frames;
	int n, max;
	int full;
};

static int uw_frame_cb(Dwfl_Frame *state, void *arg)
{
	struct uw_walk *w = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation))
		return -1;
	struct probe_unwind_frame *f = &w->frames[w->n++];
	memset(f, 0, sizeof(*f));
	f->pc = pc;
	/* a return address may be just past the end of its function: look the
	 * caller up at the call instruction */
	uw_symbolize(w->u, f, activation ? pc : pc - 1);
	if (w->n == w->max) {
		w->full = 1;
		return DWARF_CB_ABORT;
	}
	return DWARF_CB_OK;
}

/* The remembered stack of (pid, tid) if it still holds: same modules,
 * pc, sp and bound, and the same content in every word the unwind read —
 * re-read in one process_vm_readv over the runs, a few pages at most,
 * rather than the whole stack. */
static int uw_memo_hit(struct probe_unwind *u, struct uw_memo *m, struct uw_pid *e, pid_t tid,
		       struct probe_unwind_frame *frames, int max)
{
	if (m->pid != e->pid || m->tid != tid || m->gen != e->gen || m->sp != u->sp ||
	    m->pc != u->pc || m->fp_given != u->fp_given || m->max != max)
		return 0;
	if (m->len) {
		if (u->mem != probe_unwind_mem_vm) {
			/* a caller's accessor takes one range: re-read the span */
			uint64_t lo = (uint64_t)(uintptr_t)m->runs[0].iov_base;
			uint64_t hi = (uint64_t)(uintptr_t)m->runs[m->nruns - 1].iov_base +
				      m->runs[m->nruns - 1].iov_len;
			if (hi - lo > UW_SNAP || u->mem(u->ctx, e->pid, lo, u->snap, hi - lo) != (ssize_t)(hi - lo))
				return 0;
			size_t o = 0;
			for (int i = 0; i < m->nruns; i++) {
				uint64_t a = (uint64_t)(uintptr_t)m->runs[i].iov_base;
				if (memcmp(u->snap + (a - lo), m->bytes + o, m->runs[i].iov_len) != 0)
					return 0;
				o += m->runs[i].iov_len;
			}
		} else {
			struct iovec local = { u->snap, m->len };
			ssize_t n = process_vm_readv(e->pid, &local, 1, m->runs, (unsigned long)m->nruns, 0);
			if (n != (ssize_t)m->len || memcmp(u->snap, m->bytes, m->len) != 0)
				return 0;
		}
	}
	memcpy(frames, m->frames, (size_t)m->n * sizeof(*frames));
	return m->n;
}

static void uw_memo_store(struct probe_unwind *u, struct uw_memo *m, pid_t tid,
			  const struct probe_unwind_frame *frames, int n, int max)
{
	uw_memo_free(m);
	struct iovec runs[UW_RUNS];
	int nruns = 0;
	size_t len = 0;
	size_t words = (u->snap_len + 7) / 8;
	for (size_t k = 0; k < words;) {
		if (!(u->touched[k / 64] >> (k % 64) & 1)) {
			k++;
			continue;
		}
		size_t start = k;
		while (k < words && (u->touched[k / 64] >> (k % 64) & 1))
			k++;
		size_t end = k * 8 > u->snap_len ? u->snap_len : k * 8;
		if (nruns == UW_RUNS)
			return; /* too scattered to be worth re-checking: no memo */
		runs[nruns].iov_base = (void *)(uintptr_t)(u->snap_addr + start * 8);
		runs[nruns++].iov_len = end - start * 8;
		len += end - start * 8;
	}
	unsigned char *bytes = malloc(len ? len : 1);
	struct probe_unwind_frame *f = malloc((size_t)n * sizeof(*f));
	struct iovec *r = malloc((size_t)(nruns ? nruns : 1) * sizeof(*r));
	if (!bytes || !f || !r) {
		free(bytes);
		free(f);
		free(r);
		return; /* no memo: the next sample unwinds again */
	}
	size_t o = 0;
	for (int i = 0; i < nruns; i++) {
		uint64_t a = (uint64_t)(uintptr_t)runs[i].iov_base;
		memcpy(bytes + o, u->snap + (a - u->snap_addr), runs[i].iov_len);
		o += runs[i].iov_len;
	}
	memcpy(f, frames, (size_t)n * sizeof(*f));
	memcpy(r, runs, (size_t)nruns * sizeof(*r));
	*m = (struct uw_memo){ .pid = u->cur->pid, .tid = tid, .gen = u->cur->gen, .sp = u->sp,
			       .pc = u->pc, .fp_given = u->fp_given, .max = max, .len = len, .bytes = bytes, .runs = r,
			       .nruns = nruns, .n = n, .frames = f };
}

int probe_unwind_stack(struct probe_unwind *u, pid_t pid, pid_t tid, uint64_t sp, uint64_t pc,
		       struct probe_unwind_frame *frames, int max)
{
	return probe_unwind_stack_fp(u, pid, tid, sp, pc, 0, frames, max);
}

int probe_unwind_stack_fp(struct probe_unwind *u, pid_t pid, pid_t tid, uint64_t sp, uint64_t pc, uint64_t fp,
			  struct probe_unwind_frame *frames, int max)
{
	if (!u || pid <= 0 || tid <= 0 || !frames || max < 1 || max > PROBE_UNWIND_MAX_DEPTH || !pc)
		return -EINVAL;
	uint64_t now = probe_mono_ns();
	uw_forget_idle(u, now);
	struct uw_pid *e = uw_pid_get(u, pid);
	e->used_ns = now;
	u->sym_deadline = now + u->sym_budget;
	u->sym_skipped = 0;
	int err = uw_refresh(u, e);
	if (err < 0) {
		uw_pid_clear(e);
		return err;
	}
	u->cur = e;
	u->sp = sp;
	u->pc = pc;
	u->fp_given = fp;
	struct uw_memo *m = &u->memo[(unsigned)tid % UW_MEMO];
	int n = uw_memo_hit(u, m, e, tid, frames, max);
	if (n > 0) {
		u->cur = NULL;
		return n;
	}

	u->snap_addr = sp;
	u->snap_len = 0;
	u->snap_end = 0;
	u->snap_hi = sp;
	u->outside = 0;
	memset(u->touched, 0, sizeof(u->touched));
	if (sp) {
		ssize_t r0 = u->mem(u->ctx, pid, sp, u->snap, UW_SNAP_FIRST);
		if (r0 == -ESRCH || r0 == -EPERM || r0 == -EACCES) {
			uw_pid_clear(e);
			u->cur = NULL;
			return (int)r0;
		}
		u->snap_len = r0 > 0 ? (size_t)r0 : 0;
		u->snap_end = r0 < UW_SNAP_FIRST;
	}
	/* a sampled fp is the truth; a found one, a good guess. JIT code has
	 * no CFI: libdwfl goes on through it by the fp chain alone */
	u->fp = fp;
	u->have_fp = fp ? 1 : uw_find_fp(u, &u->fp);

	struct uw_walk w = { .u = u, .frames = frames, .max = max };
	int r = u->snap_len ? dwfl_getthread_frames(e->dwfl, tid, uw_frame_cb, &w) : -1;
	if (w.n == 0) { /* not even the pc: still report where the thread is */
		memset(&frames[0], 0, sizeof(frames[0]));
		frames[0].pc = pc;
		uw_symbolize(u, &frames[0], pc);
		w.n = 1;
	}
	if (r != 0 && !w.full && w.n < max) {
		memset(&frames[w.n], 0, sizeof(frames[w.n]));
		frames[w.n++].unknown = 1;
	}
	/* only a stack the snapshot fully explains is remembered; one whose
	 * frames lie outside every module would not be re-checked either */
	int any_unmapped = 0;
	for (int i = 0; i < w.n; i++)
		any_unmapped |= !frames[i].unknown && !frames[i].module[0];
	if (!u->outside && !any_unmapped && !u->sym_skipped && u->snap_len)
		uw_memo_store(u, m, tid, frames, w.n, max);
	u->cur = NULL;
	return w.n;
}

int probe_unwind_unchanged(struct probe_syscall *p, const struct probe_sc_sample *before)
{
	struct probe_sc_sample now;
	int err = probe_syscall_sample(p, &now);
	if (err < 0)
		return err;
	return now.state == before->state && now.nr == before->nr && now.sp == before->sp &&
	       now.pc == before->pc && memcmp(now.args, before->args, sizeof(now.args)) == 0;
}
