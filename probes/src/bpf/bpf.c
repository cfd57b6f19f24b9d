/*
 * bpf.c — loading the loop programs and choosing what they watch
 * (probe_bpf.h). Reading their figures is bpf_read.c's.
 */
#include "probe_bpf.h"
#include "probe_clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef LOOPSTAT_BPF

#include "bpf_int.h"
#include "probe_proc.h"
#include "probe_syscall.h"

#include <dirent.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* libbpf's messages: kept (the last warning names why a load failed),
 * never printed over a view. */
static __thread char last_msg[256];

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	char buf[sizeof(last_msg)];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	if (buf[0])
		snprintf(last_msg, sizeof(last_msg), "%s", buf);
	return 0;
}

#define CAP_PERFMON_BIT 38
#define CAP_BPF_BIT     39
#define CAP_SYS_ADMIN_BIT 21

static uint64_t cap_eff(void)
{
	char path[64], buf[4096];
	if (probe_proc_path(path, sizeof(path), "self/status") < 0 || probe_read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	const char *p = strstr(buf, "\nCapEff:");
	return p ? strtoull(p + 9, NULL, 16) : 0;
}

/* Why the programs cannot load here without trying, or NULL. */
static const char *precheck(void)
{
	uint64_t caps = cap_eff();
	int bpf = (caps >> CAP_BPF_BIT & 1) || (caps >> CAP_SYS_ADMIN_BIT & 1);
	int perf = (caps >> CAP_PERFMON_BIT & 1) || (caps >> CAP_SYS_ADMIN_BIT & 1);
	if (!bpf || !perf)
		return "not root and no CAP_BPF + CAP_PERFMON";
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		return "no kernel BTF (/sys/kernel/btf/vmlinux)";
	return NULL;
}

int probe_bpf_open(struct probe_bpf **out, char *why, size_t len)
{
	*out = NULL;
	const char *pre = precheck();
	if (pre) {
		snprintf(why, len, "%s", pre);
		return -EPERM;
	}
	libbpf_set_print(quiet_print);
	last_msg[0] = 0;
	struct probe_bpf *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	int err;
	b->skel = loopstat_bpf__open();
	if (!b->skel) {
		err = -errno;
		snprintf(why, len, "bpf open: %s", strerror(-err));
		goto fail;
	}
	bpf_syscalls_no_autoattach(b);
	err = loopstat_bpf__load(b->skel);
	if (err) {
		snprintf(why, len, "load refused: %s%s%s", strerror(-err), last_msg[0] ? ": " : "", last_msg);
		goto fail;
	}
	err = loopstat_bpf__attach(b->skel);
	if (!err)
		err = bpf_syscalls_attach(b);
	if (err) {
		bpf_syscalls_detach(b);
		snprintf(why, len, "attach refused: %s%s%s", strerror(-err), last_msg[0] ? ": " : "", last_msg);
		goto fail;
	}
	b->threads_fd = bpf_map__fd(b->skel->maps.threads);
	b->offcpu_fd = bpf_map__fd(b->skel->maps.offcpu);
	b->stats_fd = -1;
	*out = b;
	return 0;
fail:
	loopstat_bpf__destroy(b->skel);
	free(b);
	return err < 0 ? err : -EINVAL;
}

static void ticks_detach(struct probe_bpf *b);

void probe_bpf_close(struct probe_bpf *b)
{
	if (!b)
		return;
	bpf_read_done(b);
	ticks_detach(b);
	bpf_syscalls_detach(b);
	if (b->stats_fd >= 0)
		close(b->stats_fd);
	loopstat_bpf__destroy(b->skel);
	free(b);
}

static pthread_once_t avail_once = PTHREAD_ONCE_INIT;
static char avail_why[256];
static int avail;

static void avail_try(void)
{
	struct probe_bpf *b;
	avail = probe_bpf_open(&b, avail_why, sizeof(avail_why)) == 0;
	probe_bpf_close(b);
}

int probe_bpf_available(char *why, size_t len)
{
	pthread_once(&avail_once, avail_try);
	if (why && len)
		snprintf(why, len, "%s", avail ? "" : avail_why);
	return avail;
}

/* Every thread gets its entry at once, so that a read right after the
 * watch finds it; one parked in a syscall since before we attached (the
 * kernel saw no entry) has its wait seeded as begun now. Written only
 * where the kernel has no entry yet (BPF_NOEXIST), before the tgid is
 * watched. */
static void seed_thread(struct probe_bpf *b, pid_t tgid, pid_t tid)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	if (probe_syscall_open(&p, tgid, tid) < 0)
		return;
	int err = probe_syscall_sample(&p, &s);
	probe_syscall_close(&p);
	if (err < 0 || s.state == PROBE_SC_GONE || s.state == PROBE_SC_NO_ACCESS)
		return;
	struct lsb_thread *t = calloc(2, sizeof(*t));   /* the new entry, and room to read the old */
	if (!t)
		return;
	uint64_t now = probe_mono_ns();
	lsb_thread_init(t, (__u32)tgid);
	__s32 fd = 0;
	__u32 kind = 0;
	if (s.state == PROBE_SC_IN_SYSCALL) {
		t->off_nr = (__s32)s.nr;
		t->off_start = now;
		kind = lsb_poll_key(s.nr, s.args[0], s.args[1], s.args[2], s.args[3], &fd);
	}
	if (kind) {
		t->cur_nr = (__s32)s.nr;
		t->enter_ns = now;
		t->slot[0].fd = fd;
		t->slot[0].kind = kind;
		t->slot[0].waits = 1;
		t->seq = 1;
		t->lead = 0;
		t->cur_slot = 0;
		t->off_nr = LSB_OFF_LOOP;
	}
	__u32 key = (__u32)tid;
	/* an exited thread's entry, or one of another thread group (the tid
	 * reused): replaced (the kernel side ignores it too) */
	struct lsb_thread *old = t + 1;
	int stale = bpf_map_lookup_elem(b->threads_fd, &key, old) == 0 && (old->dead || old->tgid != (__u32)tgid);
	bpf_map_update_elem(b->threads_fd, &key, t, stale ? BPF_ANY : BPF_NOEXIST);
	free(t);
}

/* The programs read the bitmap through the same mmap'd .bss. */
static void watch_bit(struct probe_bpf *b, pid_t tgid, int on)
{
	__u32 *w = &b->skel->bss->watched_bits[(unsigned)tgid >> 5], bit = 1U << ((unsigned)tgid & 31);
	__atomic_fetch_or(w, on ? bit : 0, __ATOMIC_RELAXED);
	__atomic_fetch_and(w, on ? ~0U : ~bit, __ATOMIC_RELAXED);
}

int probe_bpf_watch(struct probe_bpf *b, pid_t tgid)
{
	char path[64];
	if (tgid <= 0 || tgid >= LSB_TGID_WORDS * 32)
		return -EINVAL;
	if (probe_proc_path(path, sizeof(path), "%d/task", (int)tgid) < 0)
		return -ENAMETOOLONG;
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		pid_t tid = (pid_t)atoi(de->d_name);
		if (tid > 0)
			seed_thread(b, tgid, tid);
	}
	closedir(d);
	watch_bit(b, tgid, 1);
	return 0;
}

int probe_bpf_unwatch(struct probe_bpf *b, pid_t tgid)
{
	if (tgid <= 0 || tgid >= LSB_TGID_WORDS * 32)
		return -EINVAL;
	watch_bit(b, tgid, 0);
	return bpf_forget_tgid(b, tgid);
}

int probe_bpf_watch_all(struct probe_bpf *b, int on)
{
	b->skel->bss->watch_all = on ? 1 : 0;
	return 0;
}

uint32_t probe_bpf_in_poll(const struct probe_bpf *b, pid_t tid)
{
	if (tid <= 0)
		return 0;
	uint64_t v = __atomic_load_n(&b->skel->bss->in_poll[(unsigned)tid & (LSB_IN_POLL - 1)], __ATOMIC_RELAXED);
	return v >> 32 == (uint64_t)(uint32_t)tid ? (uint32_t)v : 0;
}

#define TICK_HZ 100

/* The tick program on every CPU's clock (ls_tick): a stall on a CPU is
 * seen within a tick of passing the threshold. 0 or -errno. */
static int ticks_attach(struct probe_bpf *b)
{
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return ncpu < 0 ? ncpu : -ENODEV;
	b->ticks = calloc((size_t)ncpu, sizeof(*b->ticks));
	if (!b->ticks)
		return -ENOMEM;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
					     .size = sizeof(a), .sample_freq = TICK_HZ, .freq = 1 };
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			continue;   /* an offline CPU: nothing runs there */
		b->ticks[b->nticks] = bpf_program__attach_perf_event(b->skel->progs.ls_tick, fd);
		if (!b->ticks[b->nticks]) {
			close(fd);
			continue;
		}
		b->nticks++;
	}
	return b->nticks ? 0 : -ENODEV;
}

static void ticks_detach(struct probe_bpf *b)
{
	for (int i = 0; i < b->nticks; i++)
		bpf_link__destroy(b->ticks[i]);   /* closes the perf event's fd too */
	free(b->ticks);
	b->ticks = NULL;
	b->nticks = 0;
}

int probe_bpf_set_stall_ms(struct probe_bpf *b, double ms)
{
	if (ms < 0 || ms * 1000 > 4e9)
		return -EINVAL;
	b->skel->bss->stall_us = (__u32)(ms * 1000);
	/* without these stalls are still seen, later: at a preemption or their end */
	bpf_syscalls_stall_exit(b, ms > 0);
	if (ms > 0 && !b->ticks)
		ticks_attach(b);
	else if (ms == 0)
		ticks_detach(b);
	return 0;
}

int probe_bpf_kernel_ns(struct probe_bpf *b, uint64_t *ns, uint64_t *runs)
{
	*ns = *runs = 0;
	if (b->stats_fd < 0) {
		b->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		if (b->stats_fd < 0)
			return -errno;
	}
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, b->skel->obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) < 0)
			return -errno;
		*ns += info.run_time_ns;
		*runs += info.run_cnt;
	}
	return 0;
}

#else /* built without bpf */

int probe_bpf_kernel_ns(struct probe_bpf *b, uint64_t *ns, uint64_t *runs)
{
	(void)b;
	*ns = *runs = 0;
	return -ENOSYS;
}

#ifndef LOOPSTAT_BPF_MISSING
#define LOOPSTAT_BPF_MISSING "the bpf build"
#endif

int probe_bpf_available(char *why, size_t len)
{
	if (why && len)
		snprintf(why, len, "built without bpf (missing at build time: %s)", LOOPSTAT_BPF_MISSING);
	return 0;
}

int probe_bpf_open(struct probe_bpf **out, char *why, size_t len)
{
	*out = NULL;
	probe_bpf_available(why, len);
	return -ENOSYS;
}

void probe_bpf_close(struct probe_bpf *b) { (void)b; }
int probe_bpf_watch(struct probe_bpf *b, pid_t tgid) { (void)b; (void)tgid; return -ENOSYS; }
int probe_bpf_unwatch(struct probe_bpf *b, pid_t tgid) { (void)b; (void)tgid; return -ENOSYS; }
int probe_bpf_watch_all(struct probe_bpf *b, int on) { (void)b; (void)on; return -ENOSYS; }
int probe_bpf_set_stall_ms(struct probe_bpf *b, double ms) { (void)b; (void)ms; return -ENOSYS; }
uint32_t probe_bpf_in_poll(const struct probe_bpf *b, pid_t tid) { (void)b; (void)tid; return 0; }

#endif
