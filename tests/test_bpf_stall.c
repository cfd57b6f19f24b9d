/* Stalls under --source bpf: the kernel's event carries the stack of the moment, named down to the loop's own function. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "probe_bpf.h"
#include "support/children.h"
#include "support/list_json.h"
#include "support/support.h"

TestSuite(bpf_stall, .timeout = 40);

#define STALL_MS 150    /* each stall, by the child's own clock */

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "missing key '%s'", key);
	return v;
}

static const char *str(json_object *o, const char *key) { return json_object_get_string(get(o, key)); }

/* Non-static and never inlined: the name the stack must show. */
__attribute__((noinline)) void bpf_stall_nap(void);
__attribute__((noinline)) void bpf_stall_nap(void)
{
	usleep(STALL_MS * 1000);
	__asm__ volatile("" ::: "memory");   /* not a tail call: this frame stays */
}

__attribute__((noinline)) void bpf_stall_spin(void);
__attribute__((noinline)) void bpf_stall_spin(void)
{
	uint64_t until = ts_mono_ns() + STALL_MS * 1000000ull;
	volatile uint64_t x = 0;
	while (ts_mono_ns() < until)
		x++;
}

static void pin_cpu0(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* A child: an epoll loop idle 300 ms, then stalling in body, over and over. */
static pid_t loop_child(void (*body)(void), int pinned)
{
	pid_t pid = tc_fork();
	if (pid == 0) {
		if (pinned)
			pin_cpu0();
		int ep = epoll_create1(0), p[2];
		struct epoll_event ev = { .events = EPOLLIN };
		if (ep < 0 || pipe(p) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev) < 0)
			_exit(1);
		for (;;) {
			epoll_wait(ep, &ev, 1, 300);
			body();
		}
	}
	return pid;
}

/* A child spinning on CPU 0 for good: the stalled loop there is preempted. */
static pid_t hog_child(void)
{
	pid_t pid = tc_fork();
	if (pid == 0) {
		pin_cpu0();
		for (volatile uint64_t x = 0;; x++)
			;
	}
	return pid;
}

/* A loop_child stalling in body (on CPU 0 beside a hog when crowded),
 * listed with --source bpf --stall-ms 50 for 2.5 s: its stalls (at
 * least one), the document in *doc. */
static json_object *stalls_of(void (*body)(void), int crowded, json_object **doc, char **text)
{
	char why[256];
	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("bpf unavailable: %s", why);
	pid_t hog = crowded ? hog_child() : 0, pid = loop_child(body, crowded);
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--source", "bpf", "--stall-ms", "50",
			 "--duration", "2.5", "-p", p, NULL };
	int rc = ts_run(argv, text, 20000);
	tc_kill(pid);
	if (hog)
		tc_kill(hog);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, *text);
	*doc = json_tokener_parse(*text);
	cr_assert(*doc, "not JSON: %s", *text);
	cr_assert_str_eq(str(*doc, "source"), "bpf", "%s", *text);
	json_object *ws = get(*doc, "workers");
	cr_assert_eq(json_object_array_length(ws), 1, "one worker: %s", *text);
	json_object *st = get(json_object_array_get_idx(ws, 0), "stalls");
	cr_assert_gt(json_object_array_length(st), 0, "no stall captured: %s", *text);
	return st;
}

/* 150 ms asleep in bpf_stall_nap: the kernel sees the stall at the
 * syscall's exit; the stack, unwound from its copy through libc (no frame
 * pointers there), names the function, and the syscall is named. */
Test(bpf_stall, blocked_stall_names_its_function)
{
	json_object *doc;
	char *text = NULL;
	json_object *st = stalls_of(bpf_stall_nap, 0, &doc, &text);
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *s = json_object_array_get_idx(st, i);
		cr_expect_str_eq(str(s, "state"), "blocked", "%s", text);
		cr_expect_str_eq(str(s, "stack_from"), "bpf", "%s", text);
		cr_expect(strstr(str(s, "syscall"), "nanosleep"), "the syscall it slept in: %s", text);
		cr_expect(tj_has_frame(s, "bpf_stall_nap"), "bpf_stall_nap in the stack: %s", text);
		double d = json_object_get_double(get(s, "duration_ms"));
		cr_expect(d >= STALL_MS - 1 && d <= STALL_MS + 40, "a stall of %.0f ms for a %d-ms nap: %s", d, STALL_MS,
			  text);
	}
	json_object_put(doc);
	free(text);
}

/* 150 ms on a CPU in bpf_stall_spin: seen while it lasts (preempted by a
 * hog on its CPU, or by the clock tick on a CPU of its own), within a tick
 * or two of the 50-ms threshold, with the spinning function in its stack. */
static void spin_seen(int crowded)
{
	json_object *doc;
	char *text = NULL;
	json_object *st = stalls_of(bpf_stall_spin, crowded, &doc, &text);
	for (size_t i = 0; i < json_object_array_length(st); i++) {
		json_object *s = json_object_array_get_idx(st, i);
		double d = json_object_get_double(get(s, "duration_ms"));
		cr_expect_str_eq(str(s, "state"), "running", "%s", text);
		cr_expect_str_eq(str(s, "stack_from"), "bpf", "%s", text);
		cr_expect(!json_object_get_boolean(get(s, "ended")), "seen while it lasted: %s", text);
		cr_expect(d >= 50 && d <= 80, "seen at %.0f ms, the threshold 50: %s", d, text);
		cr_expect(tj_has_frame(s, "bpf_stall_spin"), "bpf_stall_spin in the stack: %s", text);
	}
	json_object_put(doc);
	free(text);
}

Test(bpf_stall, preempted_stall_names_its_function) { spin_seen(1); }
Test(bpf_stall, stall_on_a_cpu_seen_by_the_tick) { spin_seen(0); }
