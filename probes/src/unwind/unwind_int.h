/*
 * unwind_int.h — private to the unwinder: its state, shared by the module
 * cache (unwind.c), the walk (unwind_walk.c) and symbol look-ups
 * (unwind_sym.c); the safe opener of a target's objects (unwind_elf.c),
 * the budgeted copies it hands libdwfl (unwind_map.c), and
 * what else the maps say (unwind_maps.c).
 */
#ifndef PROBE_UNWIND_INT_H
#define PROBE_UNWIND_INT_H

#include <elfutils/libdwfl.h>
#include <libelf.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "probe_clock.h"
#include "probe_unwind.h"

#define UW_ELF_MAX_NEED (32ull << 20) /* bytes libdwfl may read of one mapped object */
#define UW_MAP_BUDGET   (64ull << 20) /* and of all mapped objects held at once */

/* The object name mapped by pid inside [lo, hi), opened for libdwfl, or
 * -errno: -EFBIG over the caps or the budget, -EPERM not the regular file
 * that is mapped, -ENOEXEC not a sound ELF header. Returns an fd the
 * caller owns (a file only root can write), or 0 with *elfp set to a
 * private mapping of it charged to (owner, lo): release it with
 * uw_map_release() once libdwfl has let go of *elfp. */
int uw_elf_open(pid_t pid, const char *name, uint64_t lo, uint64_t hi, const void *owner, Elf **elfp);

/* Checks the ELF header in fd (size bytes) against the caps: 0 or -errno. */
int uw_elf_check(int fd, uint64_t size);

/* An executable mapping of the target. */
struct uw_exec {
	uint64_t lo, hi;
	uint64_t off, ino; /* file offset and inode of a file's */
	int      file;   /* 1: a file (or the vdso); 0: anonymous, JIT code */
};

/* Our own vdso as an ELF for a target's [vdso] mapped at [lo, hi), or
 * NULL when it cannot be the same image. */
Elf *uw_vdso_elf(uint64_t lo, uint64_t hi);

/* Reports the [vdso] line of the maps text as a module (libdwfl's maps
 * reader skips it: it knows the vdso only from auxv, not ours to read). */
void uw_report_vdso(Dwfl *dwfl, const char *maps);

/* The executable mappings in the maps text into *out (replacing it,
 * owned), sorted as the maps are. 0 or -ENOMEM (*out unchanged). */
int uw_exec_parse(const char *maps, struct uw_exec **out, int *n);

/* addr in x as the address of the same file byte in the file's first
 * executable mapping: code a process mapped again elsewhere (node's
 * remapped builtins) is named where the file's module has its symbols. */
uint64_t uw_exec_canonical(const struct uw_exec *r, int n, const struct uw_exec *x, uint64_t addr);

/* f->symbol from a symbol table's name: C++ demangled, shortened to fit
 * (probe_unwind_shorten). */
struct probe_unwind_frame;
void uw_set_symbol(struct probe_unwind_frame *f, const char *name);

/* Reads <root>/PID/maps whole into *buf (grown as needed, owned by the
 * caller, *cap its size). Returns its length or -errno (-ESRCH: gone). */
ssize_t uw_maps_read(pid_t pid, char **buf, size_t *cap);

/* FNV-1a of s[0..len): whether the maps changed. */
uint64_t uw_fnv1a(const char *s, size_t len);

/* The mapping holding addr, or NULL. */
const struct uw_exec *uw_exec_find(const struct uw_exec *r, int n, uint64_t addr);

/* Where in the file libdwfl reads: the tables of headers and the sections
 * uw_elf_need counts (an object with more than UW_ELF_SPANS is refused). */
#define UW_ELF_SPANS 64
struct uw_spans {
	int n;
	struct { uint64_t off, len; } v[UW_ELF_SPANS];
};

/* uw_elf_check, then the bytes libdwfl would read or inflate of the
 * object (*need) and where they are (*where, if not NULL); -EFBIG over
 * UW_ELF_MAX_NEED or UW_ELF_SPANS. */
int uw_elf_need(int fd, uint64_t size, uint64_t *need, struct uw_spans *where);

/* Copies the spans where of fd (size bytes, of which libdwfl reads need)
 * into an anonymous mapping of size bytes and opens it with elf_memory: 0,
 * or -ENOSPC when the run's budget is spent. */
int uw_map_object(int fd, uint64_t size, uint64_t need, const struct uw_spans *where, const void *owner, uint64_t lo,
		  Elf **elfp);

/* Unmaps owner's objects: all of them (lo == 0) or the one at lo. */
void uw_map_release(const void *owner, uint64_t lo);

/* Bytes charged to the budget now (for tests). */
uint64_t uw_map_held(void);

/* ---- the unwinder's state ------------------------------------------- */

#define UW_PIDS      8           /* processes whose modules are cached */
#define UW_SNAP      (64 * 1024) /* bytes of stack read from sp per unwind */
#define UW_MAPS_NS   250000000ull /* re-check /proc/PID/maps at most this often */
#define UW_SYMS      2048        /* symbol cache entries (direct-mapped) */
#define UW_SNAP_FIRST 8192       /* first read of the stack; more on demand */
#define UW_MEMO      64          /* remembered stacks (direct-mapped by tid) */
#define UW_RUNS      256         /* runs of read words a memo may hold */
#define UW_IDLE_NS   (30 * 1000000000ull) /* a pid not unwound this long lets go of its objects */

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
	uint64_t used_ns;    /* when it was last unwound (monotonic) */
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
	uint64_t sym_budget;   /* ns of symbol look-ups one unwind may spend; 0: no bound */
	uint64_t sym_deadline; /* symbol look-ups stop at this time (monotonic ns) */
	int      sym_skipped;  /* some frame went without its symbol */
	/* the request being unwound (read by the callbacks) */
	struct uw_pid *cur;
	uint64_t sp, pc, fp;
	uint64_t fp_given;   /* the sampled fp register (a perf sample's), 0: found on the stack */
	int      have_fp;
};

/* Lets go of e's modules, mappings and objects; the slot is free after. */
void uw_pid_clear(struct uw_pid *e);
/* Frees a remembered stack; the slot is empty after. */
void uw_memo_free(struct uw_memo *m);
/* Forgets the pids not unwound for UW_IDLE_NS. */
void uw_forget_idle(struct probe_unwind *u, uint64_t now);
/* pid's entry, the least recently used one cleared for it if new. */
struct uw_pid *uw_pid_get(struct probe_unwind *u, pid_t pid);
/* (Re-)reports e's modules when its maps changed: 0 or -errno. */
int uw_refresh(struct probe_unwind *u, struct uw_pid *e);
/* How libdwfl reads the one thread being unwound (unwind_walk.c). */
extern const Dwfl_Thread_Callbacks uw_thread_callbacks;
/* f's module, symbol and offset for the code address lookup of u->cur,
 * through the symbol cache and within the unwind's time budget. */
void uw_symbolize(struct probe_unwind *u, struct probe_unwind_frame *f, uint64_t lookup);

#endif /* PROBE_UNWIND_INT_H */
