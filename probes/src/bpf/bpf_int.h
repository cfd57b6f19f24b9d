/*
 * bpf_int.h — the bpf source's handle, shared by bpf.c (load, watch) and
 * bpf_read.c (figures, stalls). Only built with LOOPSTAT_BPF.
 */
#ifndef PROBE_BPF_INT_H
#define PROBE_BPF_INT_H

#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "loopstat_bpf.h"
#include "loopstat.skel.h"
#include "probe_bpf.h"

#define BPF_SYS_LINKS 24   /* syscall tracepoints with a program (bpf_attach.c: 17) */

struct probe_bpf {
	struct loopstat_bpf *skel;     /* owned */
	int threads_fd, offcpu_fd;
	struct ring_buffer *rb;        /* owned; made at the first drain */
	struct lsb_thread *vals;       /* batch buffers, owned */
	__u32 *keys;
	void (*stall_fn)(const struct probe_bpf_stall *, void *);
	void *stall_arg;
	int stall_n;
	int stats_fd;                  /* BPF_ENABLE_STATS while held; -1 before */
	struct bpf_link **ticks;       /* the tick program on each CPU's clock, owned; NULL: not attached */
	struct bpf_link *sys_links[BPF_SYS_LINKS]; /* the syscall tracepoints' programs, owned */
	int sys_perf[BPF_SYS_LINKS];   /* their perf events' fds (the links own them) */
	int nsys;
	struct bpf_link *raw_enter;    /* ls_sys_enter where those could not attach, owned */
	struct bpf_link *exit_link;    /* ls_sys_exit: with raw_enter, or while stalls are asked for; owned */
	int nticks;
};

/* bpf_attach.c: the programs that see syscalls. Before the load, none
 * auto-attached; after it, on the poll-family and close tracepoints, else
 * the raw programs at every syscall. 0 or -errno. */
void bpf_syscalls_no_autoattach(struct probe_bpf *b);
int bpf_syscalls_attach(struct probe_bpf *b);
/* ls_sys_exit, for stalls in a blocking syscall, on (1) or off. 0 or -errno. */
int bpf_syscalls_stall_exit(struct probe_bpf *b, int on);
void bpf_syscalls_detach(struct probe_bpf *b);

/* Frees what bpf_read.c made. */
void bpf_read_done(struct probe_bpf *b);
/* Deletes the figures of tgid's threads. 0 or -errno. */
int bpf_forget_tgid(struct probe_bpf *b, pid_t tgid);

#endif /* PROBE_BPF_INT_H */
