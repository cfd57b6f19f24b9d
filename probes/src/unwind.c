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
#include "probe_proc.h"

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
};

struct probe_unwind {
	probe_unwind_mem_fn mem;
	void    *ctx;
	struct uw_pid pids[UW_PIDS];
	uint64_t tick;
	char    *maps;       /* buffer for the maps text, owned */
	size_t   maps_cap;
	unsigned char snap[UW_SNAP]; /* stack snapshot from snap_addr */
	size_t   snap_len;
	uint64_t snap_addr;
	/* the request being unwound (read by the callbacks) */
	struct uw_pid *cur;
	uint64_t sp, pc, fp;
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

/* Only files on disk: "[vdso]" would need /proc/PID/mem (not our access
 * rule) and no thread blocks in it. No separate debuginfo is looked up:
 * that may mean a network fetch (debuginfod) in the middle of a sample. */
static int uw_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		       char **file_name, Elf **elfp)
{
	(void)mod;
	(void)userdata;
	(void)base;
	*elfp = NULL;
	if (name[0] != '/')
		return -1;
	int fd = open(name, O_RDONLY | O_CLOEXEC);
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

static bool uw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct probe_unwind *u = arg;
	if (addr >= u->snap_addr && addr - u->snap_addr + sizeof(*result) <= u->snap_len) {
		memcpy(result, u->snap + (addr - u->snap_addr), sizeof(*result));
		return true;
	}
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
	u->mem = mem ? mem : probe_unwind_mem_vm;
	u->ctx = ctx;
	return u;
}

static void uw_pid_clear(struct uw_pid *e)
{
	if (e->dwfl)
		dwfl_end(e->dwfl);
	memset(e, 0, sizeof(*e));
}

void probe_unwind_delete(struct probe_unwind *u)
{
	if (!u)
		return;
	for (int i = 0; i < UW_PIDS; i++)
		uw_pid_clear(&u->pids[i]);
	free(u->maps);
	free(u);
}

void probe_unwind_forget(struct probe_unwind *u, pid_t pid)
{
	for (int i = 0; i < UW_PIDS; i++)
		if (u->pids[i].pid == pid)
			uw_pid_clear(&u->pids[i]);
}

/* Reads <root>/PID/maps whole into u->maps. Returns its length or -errno. */
static ssize_t uw_read_maps(struct probe_unwind *u, pid_t pid)
{
	char path[128];
	int err = probe_proc_path(path, sizeof(path), "%d/maps", (int)pid);
	if (err < 0)
		return err;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	size_t len = 0;
	for (;;) {
		if (u->maps_cap - len < 4096) {
			size_t cap = u->maps_cap ? u->maps_cap * 2 : 16384;
			char *m = realloc(u->maps, cap);
			if (!m) {
				close(fd);
				return -ENOMEM;
			}
			u->maps = m;
			u->maps_cap = cap;
		}
		ssize_t n = read(fd, u->maps + len, u->maps_cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno == ENOENT ? -ESRCH : -errno;
			close(fd);
			return err;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	u->maps[len] = '\0';
	return len == 0 ? -ESRCH : (ssize_t)len; /* a zombie has no maps */
}

static uint64_t fnv1a(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* (Re-)reports e's modules when its maps changed since the last report. */
static int uw_refresh(struct probe_unwind *u, struct uw_pid *e)
{
	uint64_t now = now_ns();
	if (e->dwfl && e->checked_ns && now - e->checked_ns < UW_MAPS_NS)
		return 0;
	ssize_t len = uw_read_maps(u, e->pid);
	if (len < 0)
		return (int)len;
	e->checked_ns = now;
	uint64_t h = fnv1a(u->maps, (size_t)len);
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
	dwfl_report_end(e->dwfl, NULL, NULL);
	if (r != 0)
		return r > 0 ? -r : -EINVAL;
	e->maps_hash = h;
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

static int uw_snap_word(const struct probe_unwind *u, uint64_t addr, uint64_t *w)
{
	if (addr < u->snap_addr || addr - u->snap_addr + 8 > u->snap_len)
		return 0;
	memcpy(w, u->snap + (addr - u->snap_addr), 8);
	return 1;
}

static int uw_in_module(const struct probe_unwind *u, uint64_t addr)
{
	return addr && dwfl_addrmodule(u->cur->dwfl, addr) != NULL;
}

/* The frame pointer of the innermost frame record above sp: a 16-aligned
 * slot holding a higher 16-aligned stack address (or 0 at the end of the
 * chain) next to a return address into a module, whose own record looks
 * the same. That is where the blocked thread's fp register points when the
 * wrapper's caller keeps frame pointers; stale words rarely pass both. */
static int uw_find_fp(struct probe_unwind *u, uint64_t *fp)
{
	uint64_t end = u->snap_addr + u->snap_len;
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

static void uw_symbolize(struct probe_unwind *u, struct probe_unwind_frame *f, uint64_t lookup)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->cur->dwfl, lookup);
	if (!mod) {
		u->cur->checked_ns = 0; /* maybe a new mapping: re-read maps next time */
		return;
	}
	Dwarf_Addr start;
	const char *path = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	if (path) {
		const char *base = strrchr(path, '/');
		copy_str(f->module, sizeof(f->module), base ? base + 1 : path);
	}
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, lookup, &off, &sym, NULL, NULL, NULL);
	if (name) {
		copy_str(f->symbol, sizeof(f->symbol), name);
		f->offset = off;
	} else {
		f->offset = lookup - start;
	}
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

int probe_unwind_stack(struct probe_unwind *u, pid_t pid, pid_t tid, uint64_t sp, uint64_t pc,
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
	u->snap_addr = sp;
	ssize_t n = sp ? u->mem(u->ctx, pid, sp, u->snap, sizeof(u->snap)) : -EFAULT;
	if (n == -ESRCH || n == -EPERM || n == -EACCES) {
		uw_pid_clear(e);
		return (int)n;
	}
	u->snap_len = n > 0 ? (size_t)n : 0;
	u->have_fp = uw_find_fp(u, &u->fp);

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
	u->cur = NULL;
	return w.n;
}

int probe_unwind_label(const struct probe_unwind_frame *f, char *buf, size_t len)
{
	int n;
	if (f->unknown || !f->module[0])
		n = snprintf(buf, len, "[unknown]");
	else if (f->symbol[0])
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
