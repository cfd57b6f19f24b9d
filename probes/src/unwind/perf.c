/*
 * perf.c — one cpu-clock sample of a running thread's user registers and
 * stack (probe_perf.h): open, map the ring, wait for the first sample,
 * copy it out, close.
 */
#include "probe_perf.h"
#include "probe_proc.h"
#include "probe_unwind.h"

#include <asm/perf_regs.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define REG_PC PERF_REG_X86_IP
#define REG_SP PERF_REG_X86_SP
#define REG_FP PERF_REG_X86_BP
#elif defined(__aarch64__)
#define REG_PC PERF_REG_ARM64_PC
#define REG_SP PERF_REG_ARM64_SP
#define REG_FP PERF_REG_ARM64_X29
#else
#define REG_PC 0
#define REG_SP 0
#define REG_FP 0
#define PERF_NO_REGS 1
#endif

#define RING_PAGES 4   /* data pages: one sample with its stack copy fits */

/* The registers asked for, in the kernel's order: ascending bit number. */
static const int reg_bits[3] = { REG_FP < REG_SP ? REG_FP : REG_SP, REG_FP < REG_SP ? REG_SP : REG_FP, REG_PC };

struct probe_perf_stream {
	int    fd;
	void  *ring;
	size_t page, pages;      /* data pages */
};

/* Copies len bytes at offset off of the ring's data area (wrapping). */
static void ring_copy(const unsigned char *data, size_t size, uint64_t off, void *dst, size_t len)
{
	size_t at = (size_t)(off % size), first = len < size - at ? len : size - at;
	memcpy(dst, data + at, first);
	memcpy((unsigned char *)dst + first, data, len - first);
}

/* One sample record at `at` (after its header) of h.size bytes into out:
 * 0, or -EAGAIN for one without user registers (a kernel thread). */
static int parse_sample(const unsigned char *data, size_t size, uint64_t at, const struct perf_event_header *h,
			struct probe_perf_sample *out)
{
	/* ip, time; abi, regs[3]; stack size, stack[size], dyn_size */
	uint64_t f[6], ssize, dyn = 0;
	if (h->size < sizeof(*h) + sizeof(f) + 8)
		return -EAGAIN;
	ring_copy(data, size, at, f, sizeof(f));
	if (f[2] == PERF_SAMPLE_REGS_ABI_NONE)
		return -EAGAIN;
	ring_copy(data, size, at + sizeof(f), &ssize, 8);
	if (ssize > PROBE_PERF_STACK || sizeof(*h) + sizeof(f) + 8 + ssize + 8 > h->size)
		return -EAGAIN;   /* checked before out is touched: a caller may keep its last one */
	for (int i = 0; i < 3; i++) {
		if (reg_bits[i] == REG_PC)
			out->pc = f[3 + i];
		else if (reg_bits[i] == REG_SP)
			out->sp = f[3 + i];
		else
			out->fp = f[3 + i];
	}
	out->time_ns = f[1];
	ring_copy(data, size, at + sizeof(f) + 8, out->stack, (size_t)ssize);
	if (ssize)
		ring_copy(data, size, at + sizeof(f) + 8 + ssize, &dyn, 8);
	out->stack_len = dyn < ssize ? dyn : ssize;
	return 0;
}

int probe_perf_latest(struct probe_perf_stream *ps, struct probe_perf_sample *out)
{
	struct perf_event_mmap_page *meta = ps->ring;
	const unsigned char *data = (const unsigned char *)ps->ring + ps->page;
	size_t size = ps->pages * ps->page;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE), off = meta->data_tail, last = head;
	int err = -EAGAIN;
	/* the newest sample: walk to it, parse it alone */
	while (off + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		ring_copy(data, size, off, &h, sizeof(h));
		if (h.size < sizeof(h) || off + h.size > head)
			break;
		if (h.type == PERF_RECORD_SAMPLE)
			last = off;
		off += h.size;
	}
	if (last != head) {
		struct perf_event_header h;
		ring_copy(data, size, last, &h, sizeof(h));
		err = parse_sample(data, size, last + sizeof(h), &h, out);
	}
	__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
	return err;
}

int probe_perf_fd(const struct probe_perf_stream *ps)
{
	return ps->fd;
}

struct probe_perf_stream *probe_perf_open(pid_t tid, uint64_t period_ns, unsigned ring_pages)
{
#ifdef PERF_NO_REGS
	(void)tid, (void)period_ns, (void)ring_pages;
	errno = ENOSYS;
	return NULL;
#else
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = period_ns ? period_ns : 1000000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = (1ull << REG_PC) | (1ull << REG_SP) | (1ull << REG_FP);
	a.sample_stack_user = PROBE_PERF_STACK;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	struct probe_perf_stream *ps = calloc(1, sizeof(*ps));
	if (!ps)
		return NULL;
	/* a power of two of data pages, as the kernel wants */
	ps->pages = 1;
	while (ps->pages < ring_pages)
		ps->pages *= 2;
	ps->page = (size_t)sysconf(_SC_PAGESIZE);
	ps->fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (ps->fd < 0) {
		int e = errno;
		free(ps);
		errno = e;
		return NULL;
	}
	ps->ring = mmap(NULL, (ps->pages + 1) * ps->page, PROT_READ | PROT_WRITE, MAP_SHARED, ps->fd, 0);
	if (ps->ring == MAP_FAILED) {
		int e = errno;
		close(ps->fd);
		free(ps);
		errno = e;
		return NULL;
	}
	return ps;
#endif
}

void probe_perf_close(struct probe_perf_stream *ps)
{
	if (!ps)
		return;
	munmap(ps->ring, (ps->pages + 1) * ps->page);
	close(ps->fd);
	free(ps);
}

int probe_perf_sample_thread(pid_t pid, pid_t tid, unsigned period_us, int timeout_ms, struct probe_perf_sample *out)
{
	(void)pid;
	struct probe_perf_stream *ps = probe_perf_open(tid, (uint64_t)(period_us ? period_us : 1000) * 1000, RING_PAGES);
	if (!ps)
		return -errno;
	int err = -EAGAIN;
	struct pollfd pf = { .fd = ps->fd, .events = POLLIN };
	if (poll(&pf, 1, timeout_ms) == 1)
		err = probe_perf_latest(ps, out);
	probe_perf_close(ps);
	return err;
}

void probe_perf_explain(char *buf, size_t len)
{
	char path[256], level[16] = "?";
	FILE *f = NULL;
	if (probe_proc_path(path, sizeof(path), "sys/kernel/perf_event_paranoid") >= 0)
		f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%15s", level) != 1)
			snprintf(level, sizeof(level), "?");
		fclose(f);
	}
	snprintf(buf, len,
		 "perf_event_open refused (kernel.perf_event_paranoid = %s): on-CPU stacks need root or CAP_PERFMON, "
		 "or the target's owner with perf_event_paranoid <= 1 (sysctl kernel.perf_event_paranoid=1)", level);
}

ssize_t probe_perf_mem(void *ctx, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	const struct probe_perf_sample *s = *(const struct probe_perf_sample *const *)ctx;
	if (s && addr >= s->sp && addr < s->sp + s->stack_len) {
		size_t n = s->sp + s->stack_len - addr < len ? (size_t)(s->sp + s->stack_len - addr) : len;
		memcpy(buf, s->stack + (addr - s->sp), n);
		return (ssize_t)n;
	}
	return probe_unwind_mem_vm(NULL, pid, addr, buf, len);
}
