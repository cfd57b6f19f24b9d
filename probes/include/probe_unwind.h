/*
 * probe_unwind.h — the user-space stack of a thread blocked in a syscall,
 * without stopping it.
 *
 * /proc/PID/task/TID/syscall gives the stack pointer and the pc (the
 * instruction after the syscall, inside libc's wrapper). From those two
 * registers alone the stack is unwound with elfutils' libdwfl: CFI
 * (.eh_frame / .debug_frame) from the pc with sp as the CFA base, and the
 * frame-pointer chain where CFI needs a register we cannot know. The
 * target's memory is read only through the caller-supplied accessor
 * (default: process_vm_readv): no ptrace, no stop.
 *
 * The other registers of a blocked thread are not visible from outside, so
 * %rbp (x29 on aarch64) is recovered from the stack: the innermost frame
 * record above sp (a saved fp pointing further up the stack next to a
 * return address into mapped code) — what a frame-pointer frame leaves.
 *
 * A thread blocked in a syscall does not touch its stack, so the snapshot
 * is consistent as long as the thread is still in the same syscall after
 * the unwind: re-read the syscall file with probe_unwind_unchanged() and
 * drop the stack when it says the sample moved.
 *
 * Modules come from /proc/PID/maps (cached per pid; re-reported when the
 * maps change) and symbols from the .symtab or .dynsym of each file on
 * disk (no separate debuginfo is searched, and nothing is downloaded).
 * The [vdso] is read from our own copy (the same image). Code outside
 * every module is named from the process's perf map (probe_perfmap.h):
 * module "[jit]", the map's name as symbol.
 *
 * A struct probe_unwind belongs to one thread (the sampler's).
 */
#ifndef PROBE_UNWIND_H
#define PROBE_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe_syscall.h"

#define PROBE_UNWIND_MAX_DEPTH 128 /* frames a caller may ask for */
#define PROBE_UNWIND_MODULE_LEN 64
#define PROBE_UNWIND_SYMBOL_LEN 512
/* room for any label probe_unwind_label writes */
#define PROBE_UNWIND_LABEL_LEN (PROBE_UNWIND_MODULE_LEN + PROBE_UNWIND_SYMBOL_LEN + 24)
#define PROBE_UNWIND_JIT "[jit]"   /* the module of a frame named by the perf map */

/* Reads len bytes of pid's memory at addr into buf. Returns the number of
 * bytes read (a short count at the end of a mapping), or -errno. */
typedef ssize_t (*probe_unwind_mem_fn)(void *ctx, pid_t pid, uint64_t addr, void *buf, size_t len);

/* The default accessor: process_vm_readv (ctx unused). -ESRCH when the
 * process is gone, -EPERM/-EACCES when refused, -EFAULT when unmapped. */
ssize_t probe_unwind_mem_vm(void *ctx, pid_t pid, uint64_t addr, void *buf, size_t len);

struct probe_unwind_frame {
	uint64_t pc;       /* frame 0: the sampled pc; others: the return address */
	uint64_t offset;   /* pc (return address - 1 for callers) minus symbol start */
	int      unknown;  /* 1: unwinding failed here ("[unknown]"); other fields 0 */
	int      unreadable; /* 1: the module's file was refused or over the caps
			      * ("[unreadable object]"): no symbol */
	char     module[PROBE_UNWIND_MODULE_LEN]; /* basename of the mapped file, "" if none */
	char     symbol[PROBE_UNWIND_SYMBOL_LEN]; /* "" when the module has no symbol there;
						   * shortened, never cut mid-word */
};

struct probe_unwind;

/* Creates an unwinder reading memory through mem(ctx, ...) (NULL: the
 * process_vm_readv default). Returns NULL with errno set. */
struct probe_unwind *probe_unwind_new(probe_unwind_mem_fn mem, void *ctx);
void probe_unwind_delete(struct probe_unwind *u);

/* Unwinds the stack of task tid of pid from its sampled sp/pc into
 * frames[0..max), innermost first (frames[0] is pc). When unwinding stops
 * before the outermost frame for any reason but max, the last frame is an
 * unknown one. Returns the number of frames (>= 1), or -ESRCH (process
 * gone), -EPERM/-EACCES (refused), -EINVAL (bad arguments), -ENOEXEC (no
 * module of the process could be opened), -ENOMEM. Never stops or signals
 * the target.
 *
 * Cost: the first time an address is seen, libdwfl scans its module's
 * symbol table (about a millisecond through libc); addresses are cached
 * per (pid, modules). Each thread's last stack is remembered and reused
 * while pc, sp and every stack word the unwind read are unchanged, so
 * re-sampling a parked thread costs one small process_vm_readv. */
int probe_unwind_stack(struct probe_unwind *u, pid_t pid, pid_t tid, uint64_t sp, uint64_t pc,
		       struct probe_unwind_frame *frames, int max);

/* The same with the thread's frame-pointer register as sampled (a perf
 * sample's; 0: unknown, found on the stack as above). With it the unwind
 * goes on through code without CFI, such as JIT code, by the fp chain. */
int probe_unwind_stack_fp(struct probe_unwind *u, pid_t pid, pid_t tid, uint64_t sp, uint64_t pc, uint64_t fp,
			  struct probe_unwind_frame *frames, int max);

/* Drops pid's cached modules (call when the process is gone). */
void probe_unwind_forget(struct probe_unwind *u, pid_t pid);

/* "module`symbol", "module`0xOFFSET" when the module has no symbol there,
 * "[unknown]" for an unknown frame or a pc outside every module. A symbol
 * too long for len is shortened (probe_unwind_shorten), not cut. Returns
 * the length written. */
int probe_unwind_label(const struct probe_unwind_frame *f, char *buf, size_t len);

/* name into out (len bytes), whole when it fits; else shortened by
 * eliding, in turn, template arguments ("<...>"), parameters ("(...)")
 * and outer qualifiers ("...::Class::method(...)"), never cut mid-word
 * (a single word longer than len is cut and ends in "..."). */
void probe_unwind_shorten(const char *name, char *out, size_t len);

/* After unwinding from before: samples p again and says whether the thread
 * is still in the same syscall with the same sp/pc/arguments. Returns 1
 * unchanged (the stack is valid), 0 changed (drop it), or -errno. */
int probe_unwind_unchanged(struct probe_syscall *p, const struct probe_sc_sample *before);

#endif /* PROBE_UNWIND_H */
