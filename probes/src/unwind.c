/*
 * unwind.c — stacks of blocked threads through libdwfl, from sp/pc only.
 *
 * One Dwfl per pid (modules and their CFI/symbol tables are the costly
 * part, so they are kept), attached once with our own thread callbacks:
 * the "thread state" is just the sampled sp/pc plus a frame pointer found
 * on the stack, and memory comes from one snapshot of the stack read at
 * the start of each unwind (a few pages in one process_vm_readv, instead
 * of one syscall per word).
 */
#include "probe_unwind.h"
#include "probe_perfmap.h"
#include "probe_proc.h"
#include "unwind_int.h"

#include <elfutils/libdwfl.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define UW_PIDS      8           /* processes whose modules are cached */
#define UW_SNAP      (64 * 1024) /* bytes of stack read from sp per unwind */
#define UW_MAPS_NS   250000000ull /* re-check /proc/PID/maps at most this often */
#define UW_SYMS      2048        /* symbol cache entries (direct-mapped) */
#define UW_SNAP_FIRST 8192       /* first read of the stack; more on demand */
#define UW_MEMO      64          /* remembered stacks (direct-mapped by tid) */
#define UW_RUNS      256         /* runs of read words a memo may hold */

#if defined(__x86_64__)
#define UW_DWARF_FP 6  /* %rbp */
#define UW_DWARF_SP 7  /* %rsp */
#elif defined(__aarch64__)
#define UW_DWARF_FP 29 /* x29 */
#define UW_DWARF_SP 31 /* sp */
#else
#error "probe_unwind: only x86-64 and aarch64 are supported"
#endif

struct uw_pid {
	pid_t    pid;        /* 0: free slot */
	Dwfl    *dwfl;       /* owned */
	uint64_t maps_hash;  /* FNV-1a of the maps text last reported */
	uint64_t checked_ns; /* when maps were last compared; 0 forces a check */
	uint64_t used;       /* LRU tick */
	uint64_t gen;        /* changes whenever the modules are re-reported */
	struct uw_exec *exec; /* its executable mappings, owned */
	int      nexec;
};

/* The unwind is a function of pc, sp, the modules and the stack bytes it
 * read: when a thread is sampled again at the same pc/sp and those bytes
 * are unchanged (one read and a memcmp), the frames are the same. A thread
 * parked in a syscall is sampled that way again and again. */
struct uw_memo {
	pid_t    pid, tid;   /* 0: empty */
	uint64_t gen, sp, pc, fp_given;
	int      max;        /* the max asked for: a different bound re-unwinds */
	size_t   len;        /* bytes of the runs below, together */
	unsigned char *bytes; /* their content then, concatenated, owned */
	struct iovec *runs;  /* the stack words the unwind read, as runs in the target, owned */
	int      nruns;
	int      n;
	struct probe_unwind_frame *frames; /* n frames, owned */
};

/* dwfl_module_addrinfo scans the whole symbol table on every call (a
 * millisecond per stack through libc), and blocked stacks repeat the same
 * return addresses: so each (pid, mapping, pc) is resolved once. Keyed by
 * the mapping (start, inode), not the maps' generation: a JIT runtime's
 * maps change many times a second, its binary's mapping does not. */
struct uw_sym {
	pid_t    pid;        /* 0: empty */
	uint64_t map_lo, map_ino;
	uint64_t lookup;
	struct probe_unwind_frame f; /* module, symbol, offset */
};

struct probe_unwind {
	probe_unwind_mem_fn mem;
	void    *ctx;
	struct probe_perfmap *pm; /* JIT names, owned */
	struct uw_pid pids[UW_PIDS];
	uint64_t tick;
	uint64_t gens;       /* last generation handed out */
	struct uw_sym *syms; /* UW_SYMS entries, owned */
	struct uw_memo memo[UW_MEMO];
	char    *maps;       /* buffer for the maps text, owned */
	size_t   maps_cap;
	unsigned char snap[UW_SNAP]; /* stack snapshot from snap_addr */
	size_t   snap_len;
	uint64_t snap_addr;
	int      snap_end;   /* the last read came back short: no more to read */
	uint64_t snap_hi;    /* highest snapshot address the unwind used (exclusive) */
	uint64_t touched[UW_SNAP / 8 / 64]; /* bitmap: snapshot words the unwind read */
	int      outside;    /* the unwind read memory outside the snapshot */
	/* the request being unwound (read by the callbacks) */
	struct uw_pid *cur;
	uint64_t sp, pc, fp;
	uint64_t fp_given;   /* the sampled fp register (a perf sample's), 0: found on the stack */
	int      have_fp;
};

ssize_t probe_unwind_mem_vm(void *ctx, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n < 0 ? -errno : n;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The pid whose modules libdwfl may load now: find_elf has no argument
 * of ours, and a struct probe_unwind belongs to one thread. */
static __thread pid_t uw_loading_pid;

/* Only files on disk: "[vdso]" would need /proc/PID/mem (not our access
 * rule) and no thread blocks in it. No separate debuginfo is looked up:
 * that may mean a network fetch (debuginfod) in the middle of a sample.
 * The name is the target's to choose: unwind_elf.c opens the mapped file
 * itself and hands libdwfl a sealed copy, or nothing. */
static int uw_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	(void)userdata;
	(void)base;
	*elfp = NULL;
	Dwarf_Addr lo, hi;
	if (!dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL))
		return -1;
	if (strcmp(name, "[vdso]") == 0) {
		*elfp = uw_vdso_elf(lo, hi);
		return -1;
	}
	if (name[0] != '/' || uw_loading_pid <= 0)
		return -1;
	int fd = uw_elf_open(uw_loading_pid, name, lo, hi);
	if (fd < 0)
		return -1;
	*file_name = strdup(name);
	return fd;
}

static int uw_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			   const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			   char **debuginfo_file_name)
{
	(void)mod; (void)userdata; (void)modname; (void)base; (void)file_name;
	(void)debuglink_file; (void)debuglink_crc; (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks uw_callbacks = {
	.find_elf = uw_find_elf,
	.find_debuginfo = uw_no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

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

static const Dwfl_Thread_Callbacks uw_thread_callbacks = {
	.next_thread = uw_next_thread,
	.get_thread = uw_get_thread,
	.memory_read = uw_memory_read,
	.set_initial_registers = uw_set_initial_registers,
};

struct probe_unwind *probe_unwind_new(probe_unwind_mem_fn mem, void *ctx)
{
	struct probe_unwind *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->syms = calloc(UW_SYMS, sizeof(*u->syms));
	u->pm = probe_perfmap_new();
	if (!u->syms || !u->pm) {
		free(u->syms);
		probe_perfmap_delete(u->pm);
		free(u);
		return NULL;
	}
	u->mem = mem ? mem : probe_unwind_mem_vm;
	u->ctx = ctx;
	return u;
}

static void uw_pid_clear(struct uw_pid *e)
{
	if (e->dwfl)
		dwfl_end(e->dwfl);
	free(e->exec);
	memset(e, 0, sizeof(*e));
}

static void uw_memo_free(struct uw_memo *m)
{
	free(m->bytes);
	free(m->frames);
	free(m->runs);
	memset(m, 0, sizeof(*m));
}

void probe_unwind_delete(struct probe_unwind *u)
{
	if (!u)
		return;
	for (int i = 0; i < UW_PIDS; i++)
		uw_pid_clear(&u->pids[i]);
	for (int i = 0; i < UW_MEMO; i++)
		uw_memo_free(&u->memo[i]);
	free(u->maps);
	free(u->syms);
	probe_perfmap_delete(u->pm);
	free(u);
}

void probe_unwind_forget(struct probe_unwind *u, pid_t pid)
{
	for (int i = 0; i < UW_PIDS; i++)
		if (u->pids[i].pid == pid)
			uw_pid_clear(&u->pids[i]);
	probe_perfmap_forget(u->pm, pid);
}

/* (Re-)reports e's modules when its maps changed since the last report. */
static int uw_refresh(struct probe_unwind *u, struct uw_pid *e)
{
	uint64_t now = now_ns();
	uw_loading_pid = e->pid;
	if (e->dwfl && e->checked_ns && now - e->checked_ns < UW_MAPS_NS)
		return 0;
	ssize_t len = uw_maps_read(e->pid, &u->maps, &u->maps_cap);
	if (len < 0)
		return (int)len;
	e->checked_ns = now;
	uint64_t h = uw_fnv1a(u->maps, (size_t)len);
	if (e->dwfl && h == e->maps_hash)
		return 0;

	int fresh = !e->dwfl;
	if (fresh && !(e->dwfl = dwfl_begin(&uw_callbacks)))
		return -ENOMEM;
	FILE *f = fmemopen(u->maps, (size_t)len, "r");
	if (!f)
		return -errno;
	/* begin/end keeps the modules that are reported again unchanged, with
	 * their loaded ELF and CFI; only new mappings cost a load. */
	dwfl_report_begin(e->dwfl);
	int r = dwfl_linux_proc_maps_report(e->dwfl, f);
	fclose(f);
	if (r == 0)
		uw_report_vdso(e->dwfl, u->maps);
	dwfl_report_end(e->dwfl, NULL, NULL);
	if (r != 0)
		return r > 0 ? -r : -EINVAL;
	if ((r = uw_exec_parse(u->maps, &e->exec, &e->nexec)) < 0)
		return r;
	e->maps_hash = h;
	e->gen = ++u->gens;
	if (fresh && !dwfl_attach_state(e->dwfl, NULL, e->pid, &uw_thread_callbacks, u)) {
		uw_pid_clear(e);
		return -ENOEXEC; /* no module of the process could be read */
	}
	return 0;
}

static struct uw_pid *uw_pid_get(struct probe_unwind *u, pid_t pid)
{
	struct uw_pid *victim = &u->pids[0];
	for (int i = 0; i < UW_PIDS; i++) {
		struct uw_pid *e = &u->pids[i];
		if (e->pid == pid) {
			e->used = ++u->tick;
			return e;
		}
		if (e->used < victim->used)
			victim = e;
	}
	uw_pid_clear(victim);
	victim->pid = pid;
	victim->used = ++u->tick;
	return victim;
}

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

static void copy_str(char *dst, size_t len, const char *src)
{
	size_t n = strlen(src);
	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void uw_resolve(struct probe_unwind *u, struct probe_unwind_frame *f, uint64_t lookup)
{
	const struct uw_exec *x = uw_exec_find(u->cur->exec, u->cur->nexec, lookup);
	Dwfl_Module *mod = x && x->file ? dwfl_addrmodule(u->cur->dwfl, lookup) : NULL;
	if (x && !x->file) { /* JIT code: named by the perf map, if any */
		const char *jit;
		copy_str(f->module, sizeof(f->module), PROBE_UNWIND_JIT);
		if (probe_perfmap_lookup(u->pm, u->cur->pid, lookup, &jit, &f->offset) == 1)
			copy_str(f->symbol, sizeof(f->symbol), jit);
		else
			f->offset = lookup;
		return;
	}
	if (!mod) {
		u->cur->checked_ns = 0; /* maybe a new mapping: re-read maps next time */
		return;
	}
	lookup = uw_exec_canonical(u->cur->exec, u->cur->nexec, x, lookup);
	Dwarf_Addr start;
	const char *path = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	if (path) {
		const char *base = strrchr(path, '/');
		copy_str(f->module, sizeof(f->module), base ? base + 1 : path);
		Dwarf_Addr bias;
		if (path[0] == '/' && !dwfl_module_getelf(mod, &bias)) {
			f->unreadable = 1; /* refused or over the caps: no symbols */
			f->offset = lookup - start;
			return;
		}
	}
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, lookup, &off, &sym, NULL, NULL, NULL);
	if (name) {
		uw_set_symbol(f, name);
		f->offset = off;
	} else {
		f->offset = lookup - start;
	}
}

static void uw_symbolize(struct probe_unwind *u, struct probe_unwind_frame *f, uint64_t lookup)
{
	struct uw_pid *e = u->cur;
	uint64_t h = (lookup ^ (lookup >> 12) ^ ((uint64_t)e->pid * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
	struct uw_sym *c = &u->syms[(h >> 40) % UW_SYMS];
	const struct uw_exec *x = uw_exec_find(e->exec, e->nexec, lookup);
	uint64_t map_lo = x ? x->lo : 0, map_ino = x ? x->ino : 0;
	if (x && x->file && c->pid == e->pid && c->map_lo == map_lo && c->map_ino == map_ino && c->lookup == lookup) {
		memcpy(f->module, c->f.module, sizeof(f->module));
		memcpy(f->symbol, c->f.symbol, sizeof(f->symbol));
		f->offset = c->f.offset;
		f->unreadable = c->f.unreadable;
		return;
	}
	uw_resolve(u, f, lookup);
	if (!f->module[0] || strcmp(f->module, PROBE_UNWIND_JIT) == 0)
		return; /* outside every module: not cached, maps are re-read;
			 * JIT code: its map may name the address anew */
	c->pid = e->pid;
	c->map_lo = map_lo;
	c->map_ino = map_ino;
	c->lookup = lookup;
	c->f = *f;
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
	struct uw_pid *e = uw_pid_get(u, pid);
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
	if (!u->outside && !any_unmapped && u->snap_len)
		uw_memo_store(u, m, tid, frames, w.n, max);
	u->cur = NULL;
	return w.n;
}

int probe_unwind_label(const struct probe_unwind_frame *f, char *buf, size_t len)
{
	int n;
	if (f->unknown || !f->module[0])
		n = snprintf(buf, len, "[unknown]");
	else if (f->unreadable)
		n = snprintf(buf, len, "[unreadable object]");
	else if (f->symbol[0] && strlen(f->module) + 1 + strlen(f->symbol) >= len && strlen(f->module) + 8 < len) {
		/* too long for the caller's field: shortened by whole parts */
		char sym[PROBE_UNWIND_SYMBOL_LEN];
		probe_unwind_shorten(f->symbol, sym, len - strlen(f->module) - 1);
		n = snprintf(buf, len, "%s`%s", f->module, sym);
	} else if (f->symbol[0])
		n = snprintf(buf, len, "%s`%s", f->module, f->symbol);
	else
		n = snprintf(buf, len, "%s`0x%llx", f->module, (unsigned long long)f->offset);
	if (n < 0)
		return 0;
	return len && (size_t)n >= len ? (int)len - 1 : n;
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
