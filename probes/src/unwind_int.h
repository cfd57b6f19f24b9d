/*
 * unwind_int.h — private to the unwinder: the safe opener of a target's
 * objects (unwind_elf.c), the budgeted, SIGBUS-proof mappings it hands
 * libdwfl (unwind_map.c), and what else the maps say (unwind_maps.c).
 */
#ifndef PROBE_UNWIND_INT_H
#define PROBE_UNWIND_INT_H

#include <elfutils/libdwfl.h>
#include <libelf.h>
#include <stdint.h>
#include <sys/types.h>

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

/* uw_elf_check, then the bytes libdwfl would read or inflate of the
 * object (*need); -EFBIG over UW_ELF_MAX_NEED. */
int uw_elf_need(int fd, uint64_t size, uint64_t *need);

/* Maps fd (size bytes, of which libdwfl reads need) privately and opens
 * it with elf_memory: 0, or -EFBIG when the run's budget is spent. */
int uw_map_object(int fd, uint64_t size, uint64_t need, const void *owner, uint64_t lo, Elf **elfp);

/* Unmaps owner's objects: all of them (lo == 0) or the one at lo. */
void uw_map_release(const void *owner, uint64_t lo);

/* Bytes charged to the budget now (for tests). */
uint64_t uw_map_held(void);

#endif /* PROBE_UNWIND_INT_H */
