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

/* Copies len bytes at offset off of the ring's data area (wrapping). */
static void ring_copy(const unsigned char *data, size_t size, uint64_t off, void *dst, size_t len)
{
	size_t at = (size_t)(off % size), first = len < size - at ? len : size - at;
	memcpy(dst, data + at, first);
	memcpy((unsigned char *)dst + first, data, len - first);
}

/* The first sample record in the ring into out: 0, or -EAGAIN for none. */
static int ring_read(struct perf_event_mmap_page *meta, size_t page, struct probe_perf_sample *out)
{
	const unsigned char *data = (const unsigned char *)meta + page;
	size_t size = RING_PAGES * page;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE), off = meta->data_tail;
	while (off + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		ring_copy(data, size, off, &h, sizeof(h));
		if (h.size < sizeof(h) || off + h.size > head)
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			/* ip; abi, regs[3]; stack size, stack[size], dyn_size */
			uint64_t f[5], dyn = 0;
			uint64_t at = off + sizeof(h);
			if (h.size < sizeof(h) + sizeof(f) + 8)
				return -EAGAIN;
			ring_copy(data, size, at, f, sizeof(f));
			uint64_t regs[3] = { f[2], f[3], f[4] };
			for (int i = 0; i < 3; i++) {
				if (reg_bits[i] == REG_PC)
					out->pc = regs[i];
				else if (reg_bits[i] == REG_SP)
					out->sp = regs[i];
				else
					out->fp = regs[i];
			}
			if (f[1] == PERF_SAMPLE_REGS_ABI_NONE)
				return -EAGAIN;   /* a kernel thread, or interrupted in the kernel */
			uint64_t ssize;
			ring_copy(data, size, at + sizeof(f), &ssize, 8);
			if (ssize > PROBE_PERF_STACK || sizeof(h) + sizeof(f) + 8 + ssize + 8 > h.size)
				return -EAGAIN;
			ring_copy(data, size, at + sizeof(f) + 8, out->stack, (size_t)ssize);
			if (ssize)
				ring_copy(data, size, at + sizeof(f) + 8 + ssize, &dyn, 8);
			out->stack_len = dyn < ssize ? dyn : ssize;
			return 0;
		}
		off += h.size;
	}
	return -EAGAIN;
}

int probe_perf_sample_thread(pid_t pid, pid_t tid, unsigned period_us, int timeout_ms, struct probe_perf_sample *out)
{
#ifdef PERF_NO_REGS
	(void)pid, (void)tid, (void)period_us, (void)timeout_ms, (void)out;
	return -ENOSYS;
#else
	(void)pid;
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = (uint64_t)(period_us ? period_us : 1000) * 1000;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = (1ull << REG_PC) | (1ull << REG_SP) | (1ull << REG_FP);
	a.sample_stack_user = PROBE_PERF_STACK;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.wakeup_events = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *ring = mmap(NULL, (RING_PAGES + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		int err = -errno;
		close(fd);
		return err;
	}
	int err = -EAGAIN;
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	if (poll(&pf, 1, timeout_ms) == 1)
		err = ring_read(ring, page, out);
	munmap(ring, (RING_PAGES + 1) * page);
	close(fd);
	return err;
#endif
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
