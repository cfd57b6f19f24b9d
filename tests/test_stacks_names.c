/* Stacks name the code: node's JIT functions from its perf map, and a fiber's own frames on the loopstat runtime. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loopstat_shm.h"
#include "probe_unwind.h"
#include "support/children.h"
#include "support/node_child.h"
#include "support/support.h"

static char *dir;

static void setup(void)
{
	dir = ts_tmpdir("stacknames");
	setenv(LOOPSTAT_SHM_DIR_ENV, dir, 1);
}

static void teardown(void) { ts_rmtree_free(dir); }

TestSuite(stacks_names, .init = setup, .fini = teardown, .timeout = 60);

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, key, &v), "missing key '%s'", key);
	return v;
}

/* How many of the stalls of `list --json --stall-ms 50` on pid have a
 * frame containing needle; their count in *nstalls. */
static int stalls_naming(pid_t pid, const char *needle, int *nstalls, char **text)
{
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "list", "--json", "--stall-ms", "50", "--duration", "4", "-p", p, NULL };
	int rc = ts_run(argv, text, 30000);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, *text);
	json_object *doc = json_tokener_parse(*text);
	cr_assert(doc, "not JSON: %s", *text);
	json_object *ws = get(doc, "workers");
	int found = 0;
	char missed[1400] = "";
	*nstalls = 0;
	for (size_t w = 0; w < json_object_array_length(ws); w++) {
		json_object *st = get(json_object_array_get_idx(ws, w), "stalls");
		for (size_t i = 0; i < json_object_array_length(st); i++) {
			json_object *fr = get(json_object_array_get_idx(st, i), "frames");
			int has = 0;
			for (size_t k = 0; k < json_object_array_length(fr); k++)
				has |= strstr(json_object_get_string(json_object_array_get_idx(fr, k)), needle) != NULL;
			found += has;
			(*nstalls)++;
			if (!has) {   /* what it had instead, first: the report cuts a long message */
				json_object *one = json_object_array_get_idx(st, i);
				size_t u = strlen(missed);
				size_t nf = json_object_array_length(fr);
				snprintf(missed + u, sizeof(missed) - u, "[%s from %s, missing '%s', %zu frames: %.40s | %.40s ... %.40s | %.40s] ",
					 json_object_get_string(get(one, "state")), json_object_get_string(get(one, "stack_from")),
					 json_object_get_string(get(one, "stack_missing")), nf,
					 json_object_get_string(json_object_array_get_idx(fr, 0)),
					 json_object_get_string(json_object_array_get_idx(fr, 1)),
					 nf > 1 ? json_object_get_string(json_object_array_get_idx(fr, nf - 2)) : "",
					 nf > 0 ? json_object_get_string(json_object_array_get_idx(fr, nf - 1)) : "");
			}
		}
	}
	json_object_put(doc);
	if (!found && missed[0]) {   /* the stalls lead the text the callers print */
		char *t;
		if (asprintf(&t, "stalls %s\n%s", missed, *text) > 0) {
			free(*text);
			*text = t;
		}
	}
	return found;
}

/* A fiber hogging the CPU: its stall's stack is the fiber's own (its stack
 * is not the thread's), through clock_gettime's vdso down to the fiber's
 * function. */
Test(stacks_names, fiber_hog_names_the_fibers_function)
{
	pid_t pid = tc_spawn_hogger("hogs", 0.3, 0.2, 1000);
	char *text = NULL;
	int n, found = stalls_naming(pid, "`hog", &n, &text);
	tc_kill(pid);
	cr_assert_gt(n, 0, "no stall captured: %s", text);
	cr_expect_geq(found * 2, n, "the fiber's function 'hog' in most stalls: %s", text);
	cr_expect(strstr(text, "fl__fiber_entry"), "down to the fiber's entry: %s", text);
	free(text);
}

/* Long names lose their templates, then parameters, then outer
 * qualifiers — whole words only. */
Test(stacks_names, long_names_shortened_never_mid_word)
{
	char out[64];
	probe_unwind_shorten("node::Start(int, char**)", out, sizeof(out));
	cr_expect_str_eq(out, "node::Start(int, char**)", "a name that fits stays whole");
	probe_unwind_shorten("v8::internal::Factory<v8::internal::Heap, std::allocator<char> >::New(int, long)", out, sizeof(out));
	cr_expect_str_eq(out, "v8::internal::Factory<...>::New(int, long)");
	probe_unwind_shorten("v8::internal::(anonymous namespace)::Invoke(v8::internal::Isolate*, v8::internal::InvokeParams const&)",
			     out, sizeof(out));
	cr_expect_str_eq(out, "v8::internal::(anonymous namespace)::Invoke(...)");
	probe_unwind_shorten("std::vector<int>::operator<<(std::basic_ostream<char, std::char_traits<char> >&, unsigned long long)",
			     out, sizeof(out));
	cr_expect_str_eq(out, "std::vector<...>::operator<<(...)", "operator< is no template");
	probe_unwind_shorten("aaaa::bbbbbbbbbbbbbbbbbbbbbbbbbbbb::cccccccccccccccccccccccccccc::dddddddddddddddddddd::run(int)",
			     out, sizeof(out));
	cr_expect_str_eq(out, "...::dddddddddddddddddddd::run(...)", "the innermost parts that fit");
	char big[200];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	probe_unwind_shorten(big, out, sizeof(out));
	cr_expect_eq(strlen(out), sizeof(out) - 1);
	cr_expect_str_eq(out + sizeof(out) - 4, "...", "one overlong word is cut and says so");
	/* a label too long for its field shortens the symbol, keeps the module */
	struct probe_unwind_frame f = { .pc = 1 };
	snprintf(f.module, sizeof(f.module), "node");
	snprintf(f.symbol, sizeof(f.symbol), "v8::internal::(anonymous namespace)::Invoke(v8::internal::Isolate*, "
		 "v8::internal::InvokeParams const&)");
	char label[64];
	probe_unwind_label(&f, label, sizeof(label));
	cr_expect_str_eq(label, "node`v8::internal::(anonymous namespace)::Invoke(...)");
}

/* Over its time for symbols (here from the first frame on, as node's
 * first captures are) a capture still names JIT code by the perf map:
 * libdwfl's module of node spans the JIT ranges between node's own
 * mappings, and once labelled JIT frames "node`0x7f..." (ci45: the
 * function in none of 4 stalls). */
Test(stacks_names, node_jit_function_in_stall_stack)
{
	struct node_run r = { 0 };
	node_start(&r, dir, 200);
	setenv("LOOPSTAT_STALL_SYMBOLS_MS", "0.000001", 1);
	char *text = NULL;
	int n, found = stalls_naming(r.pid, "burnCpuForAWhile", &n, &text);
	unsetenv("LOOPSTAT_STALL_SYMBOLS_MS");
	node_stop(&r);
	cr_assert_gt(n, 0, "no stall captured: %s", text);
	cr_expect_geq(found * 2, n, "burnCpuForAWhile in most stalls' stacks: %s", text);
	free(text);
}

Test(stacks_names, node_jit_function_in_folded_profile)
{
	struct node_run r = { 0 };
	node_start(&r, dir, 200);
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)r.pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "profile", "-p", p, "--duration", "3", "--format", "folded", NULL };
	char *text = NULL;
	int rc = ts_run(argv, &text, 30000);
	node_stop(&r);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, text);
	cr_expect(strstr(text, "burnCpuForAWhile"), "burnCpuForAWhile in the folded profile: %.4000s", text);
	/* names once cut at 95 bytes come whole. Here, not in a stall's stack:
	 * those keep their 16 innermost frames, which reach V8's C++ below
	 * the JIT frames only when the stall is caught in a shallow call. */
	cr_expect(strstr(text, "InvokeParams const&);") || strstr(text, "v8::Local<v8::Value>*);"),
		  "whole C++ names in the folded profile: %.4000s", text);
	free(text);
}

static const char py_script[] =
	"import time\n"
	"def burn_python_for_a_while():\n"
	"    end = time.monotonic() + 0.2\n"
	"    while time.monotonic() < end:\n"
	"        pass\n"
	"while True:\n"
	"    burn_python_for_a_while()\n"
	"    time.sleep(0.1)\n";

/* Python 3.12+ with -X perf writes the same map: its functions are named
 * in on-CPU stacks. */
Test(stacks_names, python_perf_trampoline_names_the_function)
{
	const char *py = getenv("LOOPSTAT_TEST_PYTHON") ? getenv("LOOPSTAT_TEST_PYTHON") : "python3";
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "%s -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null", py);
	if (system(cmd) != 0)
		cr_skip_test("%s is older than 3.12 (no -X perf; set LOOPSTAT_TEST_PYTHON)", py);
	char *script = ts_path_in(dir, "burn.py");
	cr_assert_eq(ts_write_file(script, py_script, sizeof(py_script) - 1), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp(py, py, "-X", "perf", script, (char *)NULL);
		_exit(127);
	}
	usleep(700000);
	char p[16];
	snprintf(p, sizeof(p), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "profile", "-p", p, "--duration", "2", "--format", "folded", NULL };
	char *text = NULL;
	int rc = ts_run(argv, &text, 30000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	char map[64];
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)pid);
	unlink(map);
	free(script);
	cr_assert_eq(rc, 0, "exit %d: %s", rc, text);
	cr_expect(strstr(text, "[jit]`py::burn_python_for_a_while:"), "the Python function in on-CPU stacks: %.3000s", text);
	free(text);
}
