/*
 * unwind_sym.c — a frame's module and symbol: JIT code from the perf map,
 * a file's code from its symbol table, each (pid, mapping, pc) resolved
 * once, within the unwind's time budget; and the frame's label.
 */
#include "probe_unwind.h"
#include "probe_perfmap.h"
#include "unwind_int.h"

#include <elfutils/libdwfl.h>

#include <stdio.h>
#include <string.h>

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

void uw_symbolize(struct probe_unwind *u, struct probe_unwind_frame *f, uint64_t lookup)
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
	if (u->sym_budget && probe_mono_ns() > u->sym_deadline && x && x->file) {
		/* over this unwind's time: module and offset, the symbol later
		 * (not cached, and the stack is not remembered). Not for JIT code
		 * or an address outside the mappings: the perf map names the one
		 * at no ELF cost, and libdwfl's module of a binary spans the gaps
		 * between its mappings (node's remapped builtins put V8's JIT
		 * frames inside "node"), so it must not be asked for either */
		Dwfl_Module *mod = dwfl_addrmodule(e->dwfl, lookup);
		Dwarf_Addr start;
		const char *path = mod ? dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL) : NULL;
		if (path) {
			const char *base = strrchr(path, '/');
			copy_str(f->module, sizeof(f->module), base ? base + 1 : path);
			f->offset = lookup - start;
		}
		u->sym_skipped = 1;
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
