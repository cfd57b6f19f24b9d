/* Unwinder: stacks of real children blocked in read(2) and nanosleep(2), resolved to function names, without stopping them. */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_syscall.h"
#include "probe_unwind.h"
#include "support/probe_child.h"
#include "support/support.h"

/* The known functions the stacks must show. noinline + noclone keeps each
 * a real frame with its own symbol; the loops keep the calls from being
 * tail calls. */
__attribute__((noinline, noclone)) static void wait_for_pipe(int fd)
{
	char c;
	for (;;)
		if (read(fd, &c, 1) < 0)
			_exit(3);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) static void wait_for_pipe_once(int fd)
{
	char c;
	if (read(fd, &c, 1) < 0)
		_exit(3);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) static void park_in_pipe(void *arg, int ready_fd)
{
	tchild_ready(ready_fd);
	wait_for_pipe((int)(intptr_t)arg);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) static void nap_in_libc(void)
{
	struct timespec ts = { 3600, 0 };
	for (;;)
		nanosleep(&ts, NULL);
	__asm__ volatile("" ::: "memory");
}

static void park_nap(void *arg, int ready_fd)
{
	(void)arg;
	tchild_ready(ready_fd);
	nap_in_libc();
}

static void *thread_body(void *arg)
{
	wait_for_pipe((int)(intptr_t)arg);
	return NULL;
}

/* A second thread blocked in wait_for_pipe while the main thread pauses:
 * the sampled task is not the thread group leader. */
static void park_thread(void *arg, int ready_fd)
{
	pthread_t t;
	if (pthread_create(&t, NULL, thread_body, arg) != 0)
		_exit(4);
	tchild_ready(ready_fd);
	for (;;)
		pause();
}

/* Waits until task tid of pid is in syscall nr; fills s. */
static void wait_in(struct probe_syscall *p, pid_t pid, pid_t tid, long nr, struct probe_sc_sample *s)
{
	cr_assert_eq(probe_syscall_open(p, pid, tid), 0);
	long long deadline = 5000;
	for (;;) {
		cr_assert_eq(tchild_wait_state(p, PROBE_SC_IN_SYSCALL, 5000, s), 0, "child never blocked");
		if (s->nr == nr)
			return;
		usleep(1000);
		cr_assert(--deadline > 0, "child in syscall %ld, not %ld", s->nr, nr);
	}
}

static int find_frame(const struct probe_unwind_frame *f, int n, const char *sym)
{
	for (int i = 0; i < n; i++)
		if (!f[i].unknown && strstr(f[i].symbol, sym))
			return i;
	return -1;
}

static void dump(const struct probe_unwind_frame *f, int n)
{
	for (int i = 0; i < n; i++) {
		char label[256];
		probe_unwind_label(&f[i], label, sizeof(label));
		fprintf(stderr, "  #%d 0x%llx %s\n", i, (unsigned long long)f[i].pc, label);
	}
}

/* The child must never be stopped: its state stays "S", never "t"/"T". */
static void assert_not_stopped(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	const char *st = ts_stat_fields(path, buf, sizeof(buf));
	cr_assert(st, "%s unreadable", path);
	cr_assert(st[0] != 't' && st[0] != 'T', "child was stopped: %c", st[0]);
}

Test(profile_unwind, read_on_pipe_names_the_function, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park_in_pipe, TCHILD_FD(fds[0]));
	cr_assert_gt(pid, 0);
	struct probe_syscall p;
	struct probe_sc_sample s;
	wait_in(&p, pid, pid, SYS_read, &s);

	struct probe_unwind *u = probe_unwind_new(NULL, NULL);
	cr_assert(u);
	struct probe_unwind_frame f[32];
	int n = probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 32);
	cr_assert_geq(n, 2, "unwind: %d", n);
	dump(f, n);
	cr_assert_eq(f[0].pc, s.pc);
	int w = find_frame(f, n, "wait_for_pipe");
	int k = find_frame(f, n, "park_in_pipe");
	cr_assert_geq(w, 1, "wait_for_pipe not on the stack");
	cr_assert_gt(k, w, "park_in_pipe not above wait_for_pipe");
	cr_assert_str_eq(f[w].module, "test_profile_unwind");
	char label[256];
	probe_unwind_label(&f[w], label, sizeof(label));
	cr_assert(strncmp(label, "test_profile_unwind`wait_for_pipe", 33) == 0, "label %s", label);
	cr_assert_eq(probe_unwind_unchanged(&p, &s), 1, "the blocked child's syscall line moved");
	assert_not_stopped(pid);

	/* a second unwind from the cache gives the same stack */
	struct probe_unwind_frame g[32];
	cr_assert_eq(probe_unwind_stack(u, pid, pid, s.sp, s.pc, g, 32), n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(g[i].pc, f[i].pc);
	/* depth-bounded: two frames asked, two given, no unknown marker */
	cr_assert_eq(probe_unwind_stack(u, pid, pid, s.sp, s.pc, g, 2), 2);
	cr_assert_eq(g[1].unknown, 0);

	probe_unwind_delete(u);
	probe_syscall_close(&p);
	tchild_reap(pid);
	close(fds[0]);
	close(fds[1]);
}

Test(profile_unwind, libc_call_shows_libc_and_caller, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t pid = tchild_fork(park_nap, NULL);
	cr_assert_gt(pid, 0);
	struct probe_syscall p;
	struct probe_sc_sample s;
	/* glibc's nanosleep is clock_nanosleep underneath */
	cr_assert_eq(probe_syscall_open(&p, pid, pid), 0);
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_IN_SYSCALL, 5000, &s), 0);
	cr_assert(s.nr == SYS_clock_nanosleep || s.nr == SYS_nanosleep, "nr %ld", s.nr);

	struct probe_unwind *u = probe_unwind_new(NULL, NULL);
	struct probe_unwind_frame f[32];
	int n = probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 32);
	dump(f, n);
	cr_assert_geq(n, 2);
	cr_assert(strncmp(f[0].module, "libc.so", 7) == 0, "frame 0 in %s", f[0].module);
	cr_assert(f[0].symbol[0], "libc frame without a symbol");
	int c = find_frame(f, n, "nap_in_libc");
	cr_assert_geq(c, 1, "the caller is not on the stack");
	for (int i = 0; i < c; i++) /* everything below the caller is libc (or ASan's interceptor) */
		cr_assert(strncmp(f[i].module, "libc.so", 7) == 0 || strstr(f[i].module, "asan"),
			  "frame %d in %s", i, f[i].module);
	assert_not_stopped(pid);
	probe_unwind_delete(u);
	probe_syscall_close(&p);
	tchild_reap(pid);
}

Test(profile_unwind, a_thread_that_is_not_the_leader, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park_thread, TCHILD_FD(fds[0]));
	cr_assert_gt(pid, 0);
	/* the thread's tid: the task of pid that is not pid */
	pid_t tid = 0;
	for (int tries = 0; tries < 500 && !tid; tries++) {
		char path[64];
		for (pid_t t = pid + 1; t < pid + 64 && !tid; t++) {
			snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)t);
			if (access(path, F_OK) == 0)
				tid = t;
		}
		if (!tid)
			usleep(10000);
	}
	cr_assert_gt(tid, 0, "no second thread");
	struct probe_syscall p;
	struct probe_sc_sample s;
	wait_in(&p, pid, tid, SYS_read, &s);
	struct probe_unwind *u = probe_unwind_new(NULL, NULL);
	struct probe_unwind_frame f[32];
	int n = probe_unwind_stack(u, pid, tid, s.sp, s.pc, f, 32);
	dump(f, n);
	cr_assert_geq(find_frame(f, n, "wait_for_pipe"), 1);
	cr_assert_geq(find_frame(f, n, "thread_body"), 2);
	probe_unwind_delete(u);
	probe_syscall_close(&p);
	tchild_reap(pid);
	close(fds[0]);
	close(fds[1]);
}

Test(profile_unwind, gone_process_fails_cleanly, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park_in_pipe, TCHILD_FD(fds[0]));
	struct probe_syscall p;
	struct probe_sc_sample s;
	wait_in(&p, pid, pid, SYS_read, &s);
	struct probe_unwind *u = probe_unwind_new(NULL, NULL);
	struct probe_unwind_frame f[8];
	cr_assert_geq(probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 8), 2);

	tchild_reap(pid);
	/* the cached pid and a fresh unwinder both say gone */
	cr_assert_eq(probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 8), -ESRCH);
	cr_assert_eq(probe_unwind_unchanged(&p, &s), 0, "a gone task's sample did not change");
	struct probe_unwind *v = probe_unwind_new(NULL, NULL);
	cr_assert_eq(probe_unwind_stack(v, pid, pid, s.sp, s.pc, f, 8), -ESRCH);
	probe_unwind_delete(v);
	probe_unwind_forget(u, pid);
	probe_unwind_delete(u);
	probe_syscall_close(&p);
	close(fds[0]);
	close(fds[1]);
}

Test(profile_unwind, moved_sample_is_detected, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park_in_pipe, TCHILD_FD(fds[0]));
	struct probe_syscall p;
	struct probe_sc_sample s;
	wait_in(&p, pid, pid, SYS_read, &s);
	cr_assert_eq(probe_unwind_unchanged(&p, &s), 1);
	struct probe_sc_sample other = s;
	other.sp += 16;
	cr_assert_eq(probe_unwind_unchanged(&p, &other), 0);
	other = s;
	other.nr = SYS_write;
	cr_assert_eq(probe_unwind_unchanged(&p, &other), 0);
	probe_syscall_close(&p);
	tchild_reap(pid);
	close(fds[0]);
	close(fds[1]);
}

/* A caller-supplied accessor is the only way memory is read; one that
 * refuses everything leaves just the pc and an unknown frame. */
static int refused_calls;
static ssize_t refuse(void *ctx, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)ctx; (void)pid; (void)addr; (void)buf; (void)len;
	refused_calls++;
	return -EFAULT;
}

Test(profile_unwind, accessor_is_used_and_failure_is_unknown, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park_in_pipe, TCHILD_FD(fds[0]));
	struct probe_syscall p;
	struct probe_sc_sample s;
	wait_in(&p, pid, pid, SYS_read, &s);
	struct probe_unwind *u = probe_unwind_new(refuse, NULL);
	struct probe_unwind_frame f[8];
	int n = probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 8);
	dump(f, n);
	cr_assert_eq(n, 2);
	cr_assert_gt(refused_calls, 0);
	cr_assert_eq(f[0].pc, s.pc);
	cr_assert_eq(f[1].unknown, 1);
	char label[64];
	probe_unwind_label(&f[1], label, sizeof(label));
	cr_assert_str_eq(label, "[unknown]");
	cr_assert_eq(probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 0), -EINVAL);
	cr_assert_eq(probe_unwind_stack(u, 0, pid, s.sp, s.pc, f, 8), -EINVAL);
	probe_unwind_delete(u);
	probe_syscall_close(&p);
	tchild_reap(pid);
	close(fds[0]);
	close(fds[1]);
}

/* A remembered stack is reused only while the words it was unwound from
 * are unchanged: an accessor that starts returning zeros must change the
 * result (a stale memo would hand back the old frames). */
static int zero_reads;
static ssize_t maybe_zero(void *ctx, pid_t pid, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	ssize_t n = probe_unwind_mem_vm(NULL, pid, addr, buf, len);
	if (n > 0 && zero_reads)
		memset(buf, 0, (size_t)n);
	return n;
}

Test(profile_unwind, remembered_stack_follows_memory, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park_in_pipe, TCHILD_FD(fds[0]));
	struct probe_syscall p;
	struct probe_sc_sample s;
	wait_in(&p, pid, pid, SYS_read, &s);
	struct probe_unwind *u = probe_unwind_new(maybe_zero, NULL);
	struct probe_unwind_frame f[16], g[16];
	int n = probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 16);
	cr_assert_geq(find_frame(f, n, "wait_for_pipe"), 1);
	cr_assert_eq(probe_unwind_stack(u, pid, pid, s.sp, s.pc, g, 16), n);
	cr_assert_eq(memcmp(f, g, (size_t)n * sizeof(f[0])), 0, "the remembered stack differs");
	zero_reads = 1;
	int m = probe_unwind_stack(u, pid, pid, s.sp, s.pc, g, 16);
	dump(g, m);
	cr_assert_lt(find_frame(g, m, "wait_for_pipe"), 0, "a stale stack was returned");
	zero_reads = 0;
	cr_assert_eq(probe_unwind_stack(u, pid, pid, s.sp, s.pc, g, 16), n);
	cr_assert_geq(find_frame(g, n, "wait_for_pipe"), 1);
	probe_unwind_delete(u);
	probe_syscall_close(&p);
	tchild_reap(pid);
	close(fds[0]);
	close(fds[1]);
}

/* Each byte written wakes the child, which maps one more region (its maps
 * change) and blocks again: the unwinder re-reports the modules of an
 * attached process and keeps resolving. */
static void park_remap(void *arg, int ready_fd)
{
	tchild_ready(ready_fd);
	for (;;) {
		wait_for_pipe_once((int)(intptr_t)arg);
		if (mmap(NULL, 4096 * 3, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
			_exit(5);
	}
}

Test(profile_unwind, maps_change_is_followed, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park_remap, TCHILD_FD(fds[0]));
	struct probe_unwind *u = probe_unwind_new(NULL, NULL);
	for (int round = 0; round < 3; round++) {
		struct probe_syscall p;
		struct probe_sc_sample s;
		wait_in(&p, pid, pid, SYS_read, &s);
		struct probe_unwind_frame f[16];
		int n = probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 16);
		cr_assert_geq(find_frame(f, n, "wait_for_pipe_once"), 1, "round %d", round);
		cr_assert_geq(find_frame(f, n, "park_remap"), 2, "round %d", round);
		probe_syscall_close(&p);
		cr_assert_eq(write(fds[1], "x", 1), 1);
		usleep(300 * 1000); /* past the maps re-check interval */
	}
	probe_unwind_delete(u);
	tchild_reap(pid);
	close(fds[0]);
	close(fds[1]);
}

/* Nonsense registers (a stale or torn sample) give the pc and an unknown
 * frame, never a crash or a hang. */
Test(profile_unwind, garbage_registers_are_harmless, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park_in_pipe, TCHILD_FD(fds[0]));
	struct probe_syscall p;
	struct probe_sc_sample s;
	wait_in(&p, pid, pid, SYS_read, &s);
	struct probe_unwind *u = probe_unwind_new(NULL, NULL);
	const uint64_t regs[][2] = {
		{ 0x10, 0x1234 },                 /* nothing mapped at either */
		{ s.sp, 0x1234 },                 /* a real stack, a pc in no module */
		{ 0x10, s.pc },                   /* a real pc, no stack */
		{ s.sp + 8, s.pc + 1 },           /* both off by a little */
		{ UINT64_MAX - 7, s.pc },         /* sp at the end of the address space */
		{ s.sp & ~0xfffull, (uint64_t)(uintptr_t)&regs }, /* pc pointing at data */
	};
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		struct probe_unwind_frame f[PROBE_UNWIND_MAX_DEPTH];
		int n = probe_unwind_stack(u, pid, pid, regs[i][0], regs[i][1], f, PROBE_UNWIND_MAX_DEPTH);
		cr_assert_geq(n, 1, "case %zu: %d", i, n);
		cr_assert_leq(n, PROBE_UNWIND_MAX_DEPTH);
		cr_assert_eq(f[0].pc, regs[i][1], "case %zu", i);
		for (int k = 0; k < n; k++) {
			char label[256];
			cr_assert_gt(probe_unwind_label(&f[k], label, sizeof(label)), 0);
		}
	}
	/* and the real registers still unwind after all that */
	struct probe_unwind_frame f[16];
	int n = probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 16);
	cr_assert_geq(find_frame(f, n, "wait_for_pipe"), 1);
	probe_unwind_delete(u);
	probe_syscall_close(&p);
	tchild_reap(pid);
	close(fds[0]);
	close(fds[1]);
}
