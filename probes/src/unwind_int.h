/*
 * unwind_int.h — private to the unwinder: the safe opener of a target's
 * objects (unwind_elf.c) and the budgeted, SIGBUS-proof mappings it hands
 * libdwfl (unwind_map.c).
 */
#ifndef PROBE_UNWIND_INT_H
#define PROBE_UNWIND_INT_H

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
