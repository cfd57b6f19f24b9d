/* Profile outputs: folded parsed back, speedscope valid against the npm package's schema, SVG parsed as XML, JSON v1, text — and a real blocked child end to end. */
#include <criterion/criterion.h>

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe_syscall.h"
#include "probe_unwind.h"
#include "profile/profile_out.h"
#include "profile/profile_tree.h"
#include "support/probe_child.h"
#include "support/support.h"

#define PYTHON "/usr/bin/python3" /* Debian's, where python3-jsonschema lives */

static const char *const site_a[] = { "libc.so.6`read", "prog`wait_for_pipe", "prog`main" };
static const char *const site_b[] = { "libc.so.6`read", "prog`do;semi", "prog`main" };
static const char *const site_c[] = { "libc.so.6`clock_nanosleep", "libc.so.6`__nanosleep", "prog`nap" };

/* A known mix: two threads, all four states, a label with ';'. */
static struct profile_tree *sample_tree(unsigned flags)
{
	struct profile_tree *t = profile_tree_new(flags);
	cr_assert(t);
	struct profile_sample s[] = {
		{ "7/7 worker", PROFILE_BLOCKED, "read", "fd 3 pipe:[99]", site_a, 3, "conn" },
		{ "7/7 worker", PROFILE_BLOCKED, "read", "fd 3 pipe:[99]", site_b, 3, "conn" },
		{ "7/7 worker", PROFILE_ON_CPU, NULL, NULL, NULL, 0, "parser" },
		{ "7/7 worker", PROFILE_IDLE, "epoll_wait", "fd 5 eventpoll", NULL, 0, NULL },
		{ "7/7 worker", PROFILE_CPU_WAIT, NULL, NULL, NULL, 0, "parser" },
		{ "7/8 timer <&>", PROFILE_BLOCKED, "clock_nanosleep", NULL, site_c, 3, NULL },
	};
	static const uint64_t w[] = { 40, 5, 30, 20, 5, 17 };
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		cr_assert_eq(profile_tree_add(t, &s[i], w[i]), 0);
	return t;
}

static char *write_to(const char *dir, const char *name, enum profile_format fmt, struct profile_tree *t)
{
	char *path = NULL;
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	struct profile_meta meta = { .title = "pid 7 (worker)", .rate_hz = 1000, .duration_s = 0.117 };
	cr_assert_eq(profile_write(f, fmt, t, &meta, NULL), 0);
	cr_assert_eq(fclose(f), 0);
	return path;
}

Test(profile_formats, folded_parses_back, .timeout = PROBE_TEST_TIMEOUT)
{
	struct profile_tree *t = sample_tree(0);
	char *dir = ts_tmpdir("folded");
	char *path = write_to(dir, "p.folded", PROFILE_FMT_FOLDED, t);
	char *text = ts_read_file(path);
	uint64_t sum = 0;
	int lines = 0, found_semi = 0, found_a = 0;
	for (char *save, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' ');
		cr_assert(sp, "no count: %s", line);
		char *end;
		unsigned long long c = strtoull(sp + 1, &end, 10);
		cr_assert(*end == '\0' && c > 0, "count not an integer: %s", line);
		sum += c;
		lines++;
		*sp = '\0';
		int fields = 1;
		for (char *p = line; *p; p++)
			fields += *p == ';';
		/* thread;state[;syscall[;target]];frames: the ';' in "do;semi" was sanitised */
		if (strstr(line, "prog`do,semi")) {
			found_semi = 1;
			cr_assert_eq(fields, 7, "%s", line);
			cr_assert_eq(c, 5);
		}
		if (strcmp(line, "7/7 worker;blocked;read;fd 3 pipe:[99];libc.so.6`read;prog`wait_for_pipe;prog`main") == 0)
			found_a = c == 40;
		cr_assert(strncmp(line, "7/7 worker;", 11) == 0 || strncmp(line, "7/8 timer <&>;", 14) == 0,
			  "bad root: %s", line);
	}
	cr_assert_eq(sum, profile_tree_root(t)->count, "folded counts sum to %llu", (unsigned long long)sum);
	cr_assert_eq(lines, 6);
	cr_assert(found_semi && found_a);
	free(text);
	free(path);
	ts_rmtree_free(dir);
	profile_tree_delete(t);
}

/* Runs python3 with a script and arguments; returns its exit status and stdout. */
static int python(const char *script, const char *a1, const char *a2, char **out)
{
	cr_assert(access(PYTHON, X_OK) == 0, PYTHON " missing (scripts/deps.sh installs python3-jsonschema)");
	char *argv[] = { (char *)PYTHON, (char *)"-c", (char *)script, (char *)a1, (char *)a2, NULL };
	return ts_run(argv, out, 20000);
}

static const char validate_py[] =
	"import json,sys,jsonschema\n"
	"schema=json.load(open(sys.argv[1]))\n"
	"doc=json.load(open(sys.argv[2]))\n"
	"jsonschema.Draft7Validator.check_schema(schema)\n"
	"errs=list(jsonschema.Draft7Validator(schema).iter_errors(doc))\n"
	"for e in errs: print(e.message)\n"
	"sys.exit(1 if errs else 0)\n";

static char *speedscope_schema(void)
{
	/* `make deps` installs the npm package (pinned) into build/npm; this
	 * finds it, or installs it when the suite runs on its own */
	char *argv[] = { (char *)"/bin/sh", (char *)"scripts/speedscope-schema.sh", (char *)"build/npm", NULL };
	char *out = NULL;
	int rc = ts_run(argv, &out, 25000);
	cr_assert_eq(rc, 0, "scripts/speedscope-schema.sh failed (%d); run from the source tree", rc);
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = '\0';
	cr_assert(access(out, R_OK) == 0, "no schema at %s", out);
	return out;
}

static void check_speedscope(const char *path, const struct profile_tree *t, int want_profiles)
{
	json_object *doc = json_object_from_file(path);
	cr_assert(doc, "speedscope output is not JSON");
	json_object *shared, *frames, *profiles;
	cr_assert(json_object_object_get_ex(doc, "shared", &shared));
	cr_assert(json_object_object_get_ex(shared, "frames", &frames));
	cr_assert(json_object_object_get_ex(doc, "profiles", &profiles));
	size_t nframes = json_object_array_length(frames);
	cr_assert_eq((int)json_object_array_length(profiles), want_profiles);
	uint64_t total = 0;
	int wait_for_pipe = 0;
	for (size_t i = 0; i < nframes; i++) {
		json_object *name;
		cr_assert(json_object_object_get_ex(json_object_array_get_idx(frames, i), "name", &name));
		wait_for_pipe += strcmp(json_object_get_string(name), "prog`wait_for_pipe") == 0;
	}
	cr_assert_eq(wait_for_pipe, 1, "frames are not shared once");
	for (size_t p = 0; p < json_object_array_length(profiles); p++) {
		json_object *prof = json_object_array_get_idx(profiles, p), *samples, *weights, *endv;
		cr_assert(json_object_object_get_ex(prof, "samples", &samples));
		cr_assert(json_object_object_get_ex(prof, "weights", &weights));
		cr_assert(json_object_object_get_ex(prof, "endValue", &endv));
		cr_assert_eq(json_object_array_length(samples), json_object_array_length(weights));
		uint64_t sum = 0;
		for (size_t i = 0; i < json_object_array_length(samples); i++) {
			json_object *st = json_object_array_get_idx(samples, i);
			cr_assert_gt(json_object_array_length(st), 0);
			for (size_t k = 0; k < json_object_array_length(st); k++) {
				int64_t ix = json_object_get_int64(json_object_array_get_idx(st, k));
				cr_assert(ix >= 0 && (size_t)ix < nframes, "frame index %lld out of range", (long long)ix);
			}
			sum += (uint64_t)json_object_get_int64(json_object_array_get_idx(weights, i));
		}
		cr_assert_eq(sum, (uint64_t)json_object_get_int64(endv), "weights do not sum to endValue");
		total += sum;
	}
	cr_assert_eq(total, profile_tree_root(t)->count);
	json_object_put(doc);
}

Test(profile_formats, speedscope_is_valid_against_the_schema, .timeout = PROBE_TEST_TIMEOUT)
{
	char *schema = speedscope_schema();
	char *dir = ts_tmpdir("speedscope");
	for (int by_fiber = 0; by_fiber < 2; by_fiber++) {
		struct profile_tree *t = sample_tree(by_fiber ? PROFILE_TREE_BY_FIBER : 0);
		char *path = write_to(dir, by_fiber ? "f.speedscope.json" : "p.speedscope.json",
				      PROFILE_FMT_SPEEDSCOPE, t);
		char *out = NULL;
		int rc = python(validate_py, schema, path, &out);
		cr_assert_eq(rc, 0, "schema validation failed (%d): %s", rc, out);
		free(out);
		/* one profile per thread; by fiber: conn, parser, [no fiber] + the timer's [no fiber] */
		check_speedscope(path, t, by_fiber ? 4 : 2);
		free(path);
		profile_tree_delete(t);
	}
	/* the validator is real: a sampled profile without weights is refused */
	char *bad = NULL;
	cr_assert(asprintf(&bad, "%s/bad.json", dir) > 0);
	const char doc[] = "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
			   "\"shared\":{\"frames\":[]},\"profiles\":[{\"type\":\"sampled\",\"name\":\"x\","
			   "\"unit\":\"none\",\"startValue\":0,\"endValue\":1,\"samples\":[]}]}";
	cr_assert_eq(ts_write_file(bad, doc, sizeof(doc) - 1), 0);
	char *out = NULL;
	cr_assert_eq(python(validate_py, schema, bad, &out), 1, "an invalid file passed: %s", out);
	free(out);
	free(bad);
	free(schema);
	ts_rmtree_free(dir);
}

static const char svg_py[] =
	"import sys,xml.etree.ElementTree as ET\n"
	"ns={'s':'http://www.w3.org/2000/svg'}\n"
	"r=ET.parse(sys.argv[1]).getroot()\n"
	"assert r.tag=='{http://www.w3.org/2000/svg}svg', r.tag\n"
	"sc=r.findall('s:script',ns)\n"
	"assert len(sc)==1 and 'function zoom' in sc[0].text and 'function unzoom' in sc[0].text\n"
	"assert r.get('onload')=='init()'\n"
	"gs=r.findall(\".//s:g[@class='f']\",ns)\n"
	"print('frames', len(gs))\n"
	"for g in gs:\n"
	"  assert g.find('s:rect',ns) is not None and g.find('s:text',ns) is not None\n"
	"  print('title', g.find('s:title',ns).text)\n";

Test(profile_formats, svg_parses_and_holds_the_frames, .timeout = PROBE_TEST_TIMEOUT)
{
	struct profile_tree *t = sample_tree(0);
	char *dir = ts_tmpdir("svg");
	char *path = write_to(dir, "p.svg", PROFILE_FMT_SVG, t);
	char *out = NULL;
	int rc = python(svg_py, path, "", &out);
	cr_assert_eq(rc, 0, "SVG did not parse (%d): %s", rc, out);
	size_t nodes = profile_tree_nodes(t);
	char want[64];
	snprintf(want, sizeof(want), "frames %zu\n", nodes);
	cr_assert(strstr(out, want), "want every node drawn (%s): %s", want, out);
	static const char *const expect[] = {
		"title all (117 samples, 100%)",
		"title 7/8 timer <&> (17 samples",
		"title prog`wait_for_pipe (40 samples, 40.00% ",
		"title prog`do,semi (5 samples",
		"title fd 3 pipe:[99] (45 samples",
		"title idle (20 samples, 20.00%",
		"title libc.so.6`clock_nanosleep (17 samples, 100.00%",
	};
	for (size_t i = 0; i < sizeof(expect) / sizeof(expect[0]); i++)
		cr_assert(strstr(out, expect[i]), "missing \"%s\" in:\n%s", expect[i], out);
	free(out);
	free(path);
	ts_rmtree_free(dir);
	profile_tree_delete(t);
}

Test(profile_formats, json_v1_and_text, .timeout = PROBE_TEST_TIMEOUT)
{
	struct profile_tree *t = sample_tree(0);
	char *dir = ts_tmpdir("pjson");
	char *path = write_to(dir, "p.json", PROFILE_FMT_JSON, t);
	json_object *doc = json_object_from_file(path), *v, *nodes;
	cr_assert(doc);
	cr_assert(json_object_object_get_ex(doc, "version", &v));
	cr_assert_eq(json_object_get_int(v), 1);
	cr_assert(json_object_object_get_ex(doc, "nodes", &nodes));
	cr_assert_eq(json_object_array_length(nodes), profile_tree_nodes(t));
	uint64_t self_sum = 0;
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		json_object *n = json_object_array_get_idx(nodes, i), *id, *parent, *self;
		cr_assert(json_object_object_get_ex(n, "id", &id));
		cr_assert_eq((size_t)json_object_get_int(id), i);
		cr_assert(json_object_object_get_ex(n, "parent", &parent));
		if (i == 0)
			cr_assert(json_object_is_type(parent, json_type_null));
		else
			cr_assert_lt(json_object_get_int(parent), (int)i, "parent after child");
		cr_assert(json_object_object_get_ex(n, "self", &self));
		self_sum += (uint64_t)json_object_get_int64(self);
	}
	cr_assert_eq(self_sum, 117);
	json_object_put(doc);
	free(path);

	path = write_to(dir, "p.txt", PROFILE_FMT_TEXT, t);
	char *text = ts_read_file(path);
	/* sorted by share within the worker: blocked 45, on cpu 30, idle 20, waiting 5 */
	char *b = strstr(text, "blocked\n"), *c = strstr(text, "on cpu\n"), *i = strstr(text, "idle\n"),
	     *w = strstr(text, "waiting for cpu\n");
	cr_assert(b && c && i && w, "%s", text);
	cr_assert(b < c && c < i && i < w, "not sorted by share:\n%s", text);
	cr_assert(strstr(text, " 45.0%    9.6"), "blocked share with its interval:\n%s", text);
	cr_assert(strstr(text, "prog`wait_for_pipe"), "%s", text);
	cr_assert(strstr(text, "117 samples over 0.1 s at 1000 Hz"), "%s", text);
	free(text);
	free(path);
	ts_rmtree_free(dir);
	profile_tree_delete(t);

	enum profile_format f;
	cr_assert_eq(profile_format_parse("svg", &f), 0);
	cr_assert_eq(f, PROFILE_FMT_SVG);
	cr_assert_eq(profile_format_parse("flame", &f), -EINVAL);
}

__attribute__((noinline, noclone)) static void wait_for_pipe(int fd)
{
	char c;
	for (;;)
		if (read(fd, &c, 1) < 0)
			_exit(3);
	__asm__ volatile("" ::: "memory");
}

static void park(void *arg, int ready_fd)
{
	tchild_ready(ready_fd);
	wait_for_pipe((int)(intptr_t)arg);
}

/* What cmd_profile does per blocked sample: sample, unwind, re-check,
 * label, add — then every format holds the blocking function. */
Test(profile_formats, real_blocked_child_end_to_end, .timeout = PROBE_TEST_TIMEOUT)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = tchild_fork(park, TCHILD_FD(fds[0]));
	cr_assert_gt(pid, 0);
	struct probe_syscall p;
	struct probe_sc_sample s;
	cr_assert_eq(probe_syscall_open(&p, pid, pid), 0);
	for (int tries = 0; tries < 1000; tries++) {
		cr_assert_eq(tchild_wait_state(&p, PROBE_SC_IN_SYSCALL, 5000, &s), 0);
		if (s.nr == SYS_read)
			break;
		usleep(1000);
	}
	cr_assert_eq(s.nr, SYS_read);
	struct probe_unwind *u = probe_unwind_new(NULL, NULL);
	struct profile_tree *t = profile_tree_new(0);
	int kept = 0;
	for (int i = 0; i < 20; i++) {
		struct probe_unwind_frame f[32];
		cr_assert_eq(probe_syscall_sample(&p, &s), 0);
		int n = probe_unwind_stack(u, pid, pid, s.sp, s.pc, f, 32);
		cr_assert_gt(n, 0);
		if (probe_unwind_unchanged(&p, &s) != 1)
			continue;
		char labels[32][160];
		const char *lp[32];
		for (int k = 0; k < n; k++) {
			probe_unwind_label(&f[k], labels[k], sizeof(labels[k]));
			lp[k] = labels[k];
		}
		char target[64];
		snprintf(target, sizeof(target), "fd %d pipe", (int)s.args[0]);
		struct profile_sample ps = { .thread = "child", .state = PROFILE_BLOCKED, .syscall = "read",
					     .target = target, .frames = lp, .nframes = n };
		cr_assert_eq(profile_tree_add(t, &ps, 1), 0);
		kept++;
	}
	cr_assert_eq(kept, 20, "a parked child's samples moved");
	char *dir = ts_tmpdir("e2e");
	char *folded = write_to(dir, "p.folded", PROFILE_FMT_FOLDED, t);
	char *text = ts_read_file(folded);
	cr_assert(strstr(text, "child;blocked;read;fd "), "%s", text);
	cr_assert(strstr(text, "test_profile_formats`wait_for_pipe;test_profile_formats`park"), "%s", text);
	cr_assert(strstr(text, " 20\n"), "%s", text);
	free(text);
	char *svg = write_to(dir, "p.svg", PROFILE_FMT_SVG, t);
	char *out = NULL;
	cr_assert_eq(python(svg_py, svg, "", &out), 0, "%s", out);
	cr_assert(strstr(out, "title test_profile_formats`wait_for_pipe (20 samples, 100.00%"), "%s", out);
	free(out);
	free(svg);
	free(folded);
	ts_rmtree_free(dir);
	profile_tree_delete(t);
	probe_unwind_delete(u);
	probe_syscall_close(&p);
	tchild_reap(pid);
	close(fds[0]);
	close(fds[1]);
}
