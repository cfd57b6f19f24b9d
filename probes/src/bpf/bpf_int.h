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
	int nticks;
};

/* Frees what bpf_read.c made. */
void bpf_read_done(struct probe_bpf *b);
/* Deletes the figures of tgid's threads. 0 or -errno. */
int bpf_forget_tgid(struct probe_bpf *b, pid_t tgid);

#endif /* PROBE_BPF_INT_H */
