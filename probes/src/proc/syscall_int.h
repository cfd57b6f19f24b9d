/*
 * syscall_int.h — what the pread probe and the batch share, so that a
 * sample means the same whichever way its bytes were read.
 */
#ifndef PROBE_SYSCALL_INT_H
#define PROBE_SYSCALL_INT_H

#include "probe_syscall.h"

/* Longest line: a decimal nr and eight "0x" + 16-digit words, 9 separators.
 * A read that fills the whole buffer is longer than any line the kernel
 * writes, so it is malformed, not truncated-but-parsed. */
#define PROBE__SC_BUF_LEN 256

/* Turns the outcome of one read of PROBE__SC_BUF_LEN bytes (res = bytes
 * read, or -errno) into a sample, exactly as probe_syscall_sample does. */
int probe__sc_result(const char *buf, long res, struct probe_sc_sample *out);

/* Opens p's file again when the fd budget closed it (a new serial): 0 or
 * the open's -errno. */
int probe__syscall_ensure(struct probe_syscall *p);

#endif /* PROBE_SYSCALL_INT_H */
