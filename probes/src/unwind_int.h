/*
 * unwind_int.h — private to the unwinder: the safe opener of a target's
 * objects (unwind_elf.c) and what else the maps say (unwind_maps.c).
 */
#ifndef PROBE_UNWIND_INT_H
#define PROBE_UNWIND_INT_H

#include <elfutils/libdwfl.h>
#include <libelf.h>
#include <stdint.h>
#include <sys/types.h>

/* The object name mapped by pid inside [lo, hi), as a sealed in-memory
 * copy (an fd the caller owns), or -errno: -EFBIG over the caps, -EPERM
 * not the regular file that is mapped, -ENOEXEC not a sound ELF header. */
int uw_elf_open(pid_t pid, const char *name, uint64_t lo, uint64_t hi);

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

#endif /* PROBE_UNWIND_INT_H */
