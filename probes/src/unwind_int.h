/*
 * unwind_int.h — private to the unwinder: the safe opener of a target's
 * objects (unwind_elf.c).
 */
#ifndef PROBE_UNWIND_INT_H
#define PROBE_UNWIND_INT_H

#include <stdint.h>
#include <sys/types.h>

/* The object name mapped by pid inside [lo, hi), as a sealed in-memory
 * copy (an fd the caller owns), or -errno: -EFBIG over the caps, -EPERM
 * not the regular file that is mapped, -ENOEXEC not a sound ELF header. */
int uw_elf_open(pid_t pid, const char *name, uint64_t lo, uint64_t hi);

/* Checks the ELF header in fd (size bytes) against the caps: 0 or -errno. */
int uw_elf_check(int fd, uint64_t size);

#endif /* PROBE_UNWIND_INT_H */
