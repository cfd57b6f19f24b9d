/* Fibers: spin/await results, tags and ids, suspend/schedule values, reaping, FPU state, stack overflow. */
#include "support/fl_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xmmintrin.h>

static void *ret_arg_plus_one(void *arg)
{
	return (void *)((intptr_t)arg + 1);
}

static void *spin_await_main(void *arg)
{
	(void)arg;
	fl_fiber *f = fl_spin(ret_arg_plus_one, (void *)41, NULL);
	cr_assert_not_null(f);
	void *r = NULL;
	cr_assert_eq(fl_await(f, &r), 0);
	cr_assert_eq((intptr_t)r, 42);
	cr_assert_eq(fl_await(fl_current(), NULL), -EDEADLK);
	return NULL;
}

Test(fiber, spin_await_result, .timeout = 10)
{
	fl_test_run(spin_await_main, NULL);
}

static void *main_result(void *arg)
{
	return arg;
}

Test(fiber, run_returns_main_result, .timeout = 10)
{
	for (const char *const *b = fl_test_backends(); *b; b++) {
		void *r = NULL;
		struct fl_options o = { .backend = *b };
		cr_assert_eq(fl_run(main_result, (void *)7, &o, &r), 0);
		cr_assert_eq((intptr_t)r, 7);
		fl_test_assert_no_leaks();
	}
	struct fl_options bad = { .backend = "nope" };
	cr_assert_eq(fl_run(main_result, NULL, &bad, NULL), -EINVAL);
	cr_assert_eq(fl_spin(main_result, NULL, NULL), NULL, "spin outside a loop");
}

static void *nested_run(void *arg)
{
	(void)arg;
	cr_assert_eq(fl_run(main_result, NULL, NULL, NULL), -EBUSY);
	return NULL;
}

Test(fiber, one_loop_per_thread, .timeout = 10)
{
	fl_test_run(nested_run, NULL);
}

static void *tagged(void *arg)
{
	fl_fiber **out = arg;
	*out = fl_current();
	cr_assert_str_eq(fl_fiber_tag(fl_current()), "worker");
	return NULL;
}

static void *tag_main(void *arg)
{
	(void)arg;
	fl_fiber *seen = NULL;
	fl_fiber *f = fl_spin(tagged, &seen, "worker");
	uint64_t id = fl_fiber_id(f);
	cr_assert(id > fl_fiber_id(fl_current()));
	fl_fiber_ref(f);
	fl_await(f, NULL);
	cr_assert_eq(seen, f);
	cr_assert(fl_fiber_done(f));
	fl_fiber_unref(f);
	return NULL;
}

Test(fiber, tags_and_ids, .timeout = 10)
{
	fl_test_run(tag_main, NULL);
}

static void *suspender(void *arg)
{
	(void)arg;
	return fl_suspend();
}

static void *suspend_main(void *arg)
{
	(void)arg;
	fl_fiber *f = fl_spin(suspender, NULL, NULL);
	fl_fiber_ref(f);
	fl_snooze(); /* let it park */
	cr_assert(!fl_fiber_done(f));
	fl_schedule(f, (void *)99);
	void *r;
	fl_await(f, &r);
	cr_assert_eq((intptr_t)r, 99);
	fl_fiber_unref(f);
	return NULL;
}

Test(fiber, suspend_gets_schedule_value, .timeout = 10)
{
	fl_test_run(suspend_main, NULL);
}

static void *noop(void *arg)
{
	return arg;
}

static void *many_main(void *arg)
{
	(void)arg;
	/* 20 generations of 500: stacks must be reaped and reused */
	for (int g = 0; g < 20; g++) {
		for (int i = 0; i < 500; i++)
			cr_assert_not_null(fl_spin(noop, NULL, NULL));
		fl_snooze();
	}
	struct fl_debug_counters c;
	fl_debug_counters(&c);
	cr_assert(c.stacks <= 600, "stacks not reaped: %ld", (long)c.stacks);
	return NULL;
}

Test(fiber, finished_fibers_are_reaped, .timeout = 20)
{
	fl_test_run(many_main, NULL);
}

/* Each fiber keeps its own MXCSR rounding mode across switches. */
static void *rounding(void *arg)
{
	unsigned mode = (unsigned)(uintptr_t)arg;
	_MM_SET_ROUNDING_MODE(mode);
	for (int i = 0; i < 100; i++) {
		fl_snooze();
		cr_assert_eq(_MM_GET_ROUNDING_MODE(), mode);
	}
	return NULL;
}

static void *fpu_main(void *arg)
{
	(void)arg;
	unsigned before = _MM_GET_ROUNDING_MODE();
	fl_spin(rounding, (void *)(uintptr_t)_MM_ROUND_DOWN, NULL);
	fl_spin(rounding, (void *)(uintptr_t)_MM_ROUND_UP, NULL);
	fl_spin(rounding, (void *)(uintptr_t)_MM_ROUND_TOWARD_ZERO, NULL);
	for (int i = 0; i < 100; i++) {
		fl_snooze();
		cr_assert_eq(_MM_GET_ROUNDING_MODE(), before);
	}
	return NULL;
}

Test(fiber, mxcsr_is_per_fiber, .timeout = 10)
{
	fl_test_run(fpu_main, NULL);
}

/* ---- stack overflow, in a child process ---------------------------------- */

static char *guard_lo, *guard_hi;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)ctx;
	char *a = si->si_addr;
	_exit(a >= guard_lo && a < guard_hi ? 42 : 43);
}

static volatile int sink;

static int __attribute__((noinline)) recurse(int n)
{
	volatile char pad[512];
	pad[0] = (char)n;
	sink = pad[0];
	if (n < 0) /* never: only keeps the compiler from calling it infinite */
		return 0;
	return recurse(n + 1) + pad[1];
}

static void *overflow(void *arg)
{
	(void)arg;
	guard_lo = fl_fiber_guard_page(fl_current());
	guard_hi = guard_lo + sysconf(_SC_PAGESIZE);
	recurse(0);
	return NULL;
}

Test(fiber, stack_overflow_hits_guard_page, .timeout = 20)
{
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		/* the handler needs a stack of its own: the fiber's is gone */
		static char alt[64 * 1024];
		stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
		sigaltstack(&ss, NULL);
		struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_ONSTACK };
		sigaction(SIGSEGV, &sa, NULL);
		setenv("LOOPSTAT_SHM_DIR", "/nonexistent", 1); /* it dies: no segment */
		struct fl_options o = { .stack_size = 64 * 1024 };
		fl_run(overflow, NULL, &o, NULL);
		_exit(0);
	}
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "child died by signal %d", WTERMSIG(st));
	cr_assert_eq(WEXITSTATUS(st), 42, "fault not in the guard page (exit %d)", WEXITSTATUS(st));
}

/* The guard is one page of the machine's size and the usable stack is at
 * least what was asked for (a 4 KiB rounding on a 64 KiB-page kernel gave
 * a guard that swallowed the stack). */
static void *stack_extent(void *arg)
{
	size_t *usable = arg;
	char *guard = fl_fiber_guard_page(fl_current());
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	cr_assert_eq((uintptr_t)guard % ps, 0);
	/* the writable part starts right after the guard page; find its end */
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert(f);
	char line[512];
	*usable = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && lo == (uintptr_t)guard + ps &&
		    perms[0] == 'r' && perms[1] == 'w')
			*usable = hi - lo;
	}
	fclose(f);
	return NULL;
}

Test(fiber, stack_rounds_to_the_page_size, .timeout = 10)
{
	for (size_t want = 20000; want <= 300000; want += 140000) {
		size_t usable = 0;
		struct fl_options o = { .stack_size = want };
		fl_test_run_opts(stack_extent, &usable, &o);
		size_t ps = (size_t)sysconf(_SC_PAGESIZE);
		cr_assert_geq(usable, want, "asked %zu, usable %zu", want, usable);
		cr_assert_eq(usable % ps, 0);
		cr_assert_lt(usable, want + ps, "more than one page of rounding");
	}
}
