/*
 * probe_access.h — why a target's /proc files are refused, and the fix, in
 * one line an operator can act on.
 *
 * /proc/PID/task/TID/syscall (like process_vm_readv) needs ptrace-read
 * access: the same user and a dumpable process, or CAP_SYS_PTRACE, and
 * Yama's kernel.yama.ptrace_scope on top. This looks at which of those
 * stands in the way: the process's owner against ours, our capability,
 * the Yama scope, a non-dumpable target.
 */
#ifndef PROBE_ACCESS_H
#define PROBE_ACCESS_H

#include <stddef.h>
#include <sys/types.h>

#define PROBE_ACCESS_TEXT_LEN 320

/* Writes the reason pid is refused and how to fix it into buf (always
 * NUL-terminated). Reads <root>/PID and <root>/sys/kernel/yama; never fails:
 * what it cannot tell it leaves to probe_no_access_text()'s general advice. */
void probe_access_explain(pid_t pid, char *buf, size_t len);

#endif /* PROBE_ACCESS_H */
