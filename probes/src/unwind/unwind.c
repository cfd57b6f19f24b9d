/*
 * unwind.c — stacks of blocked threads through libdwfl, from sp/pc only:
 * the unwinder's life and its per-process module cache.
 *
 * One Dwfl per pid (modules and their CFI/symbol tables are the costly
 * part, so they are kept), attached once with our own thread callbacks
 * (unwind_walk.c: the "thread state" is just the sampled sp/pc plus a
 * frame pointer found on the stack, and memory comes from one snapshot of
 * the stack read at the start of each unwind). Symbols: unwind_sym.c.
 */
#include "probe_unwind.h"
#include "probe_perfmap.h"
#include "probe_proc.h"
#include "unwind_int.h"

#include <elfutils/libdwfl.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

ssize_t probe_unwind_mem_vm(void *ctx, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n < 0 ? -errno : n;
}

/* The unwinder and pid entry whose modules libdwfl may load now:
 * find_elf has no argument of ours, and a struct probe_unwind belongs to
 * one thread. */
static __thread struct probe_unwind *uw_loading;
static __thread struct uw_pid *uw_loading_pid;

void uw_pid_clear(struct uw_pid *e);

/* The run's budget for other users' objects is spent: the pid entries
 * unwound least recently (never the one loading) let go of theirs. */
static int uw_evict_one(struct probe_unwind *u, const struct uw_pid *keep)
{
	struct uw_pid *victim = NULL;
	for (int i = 0; i < UW_PIDS; i++) {
		struct uw_pid *e = &u->pids[i];
		if (e->pid && e != keep && e->dwfl && (!victim || e->used < victim->used))
			victim = e;
	}
	if (!victim)
		return 0;
	uw_pid_clear(victim);
	return 1;
}

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
	struct uw_pid *e = uw_loading_pid;
	Dwarf_Addr lo, hi;
	if (!dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL))
		return -1;
	if (strcmp(name, "[vdso]") == 0) {
		*elfp = uw_vdso_elf(lo, hi);
		return -1;
	}
	if (name[0] != '/' || !e || e->pid <= 0)
		return -1;
	int fd;
	while ((fd = uw_elf_open(e->pid, name, lo, hi, e, elfp)) == -ENOSPC && uw_evict_one(uw_loading, e))
		;
	if (fd < 0)
		return -1;
	*file_name = strdup(name);
	return *elfp ? -1 : fd;
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

void uw_pid_clear(struct uw_pid *e)
{
	if (e->dwfl)
		dwfl_end(e->dwfl);
	free(e->exec);
	uw_map_release(e, 0); /* after dwfl_end: libelf no longer reads them */
	memset(e, 0, sizeof(*e));
}

void uw_memo_free(struct uw_memo *m)
{
	free(m->bytes);
	free(m->frames);
	free(m->runs);
	memset(m, 0, sizeof(*m));
}

void probe_unwind_set_budget(struct probe_unwind *u, uint64_t ns)
{
	u->sym_budget = ns;
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

/* Pids not unwound for UW_IDLE_NS (gone, or no longer stalling) let go
 * of their modules and mappings: nothing is held for a process no one
 * watches. */
void uw_forget_idle(struct probe_unwind *u, uint64_t now)
{
	for (int i = 0; i < UW_PIDS; i++)
		if (u->pids[i].pid && now - u->pids[i].used_ns > UW_IDLE_NS)
			uw_pid_clear(&u->pids[i]);
}

/* The load addresses of the modules dwfl_report_end drops: their mappings
 * are released once libdwfl has ended their Elf. */
struct uw_removed {
	uint64_t *lo;
	size_t    n, cap;
	int       lost;  /* one did not fit: release them all */
};

static int uw_removed_cb(Dwfl_Module *mod, void *userdata, const char *name, Dwarf_Addr base, void *arg)
{
	(void)mod;
	(void)userdata;
	(void)name;
	struct uw_removed *r = arg;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		uint64_t *lo = realloc(r->lo, cap * sizeof(*lo));
		if (!lo) {
			r->lost = 1;
			return DWARF_CB_OK;
		}
		r->lo = lo;
		r->cap = cap;
	}
	r->lo[r->n++] = base;
	return DWARF_CB_OK;
}

/* (Re-)reports e's modules when its maps changed since the last report. */
int uw_refresh(struct probe_unwind *u, struct uw_pid *e)
{
	uint64_t now = probe_mono_ns();
	uw_loading = u;
	uw_loading_pid = e;
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
	struct uw_removed gone = { 0 };
	dwfl_report_end(e->dwfl, uw_removed_cb, &gone);
	for (size_t i = 0; i < gone.n; i++)
		uw_map_release(e, gone.lo[i]);
	free(gone.lo);
	if (gone.lost) { /* cannot tell which: start over */
		uw_pid_clear(e);
		return -ENOMEM;
	}
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

struct uw_pid *uw_pid_get(struct probe_unwind *u, pid_t pid)
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
