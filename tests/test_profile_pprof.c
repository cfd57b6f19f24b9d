/* profile --format pprof: read back by go tool pprof -raw and protoc --decode against the shipped profile.proto — a known tree's stacks and values, a real child's profile and its recording's report with the text report's shares, write errors. */
#include <criterion/criterion.h>

#include <math.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "profile/profile_out.h"
#include "profile/profile_tree.h"
#include "support/children.h"
#include "support/probe_child.h"
#include "support/support.h"

#define SCHEMA_DIR "monitor"
#define SCHEMA     "monitor/profile/pprof/profile.proto"

/* ---- running the readers ---- */

/* Runs script under /bin/sh with $1 = dir, $2 = arg; its stdout in *out
 * (stderr too), its exit status returned. */
static int sh(const char *script, const char *dir, const char *arg, char **out)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, (char *)"sh", (char *)dir, (char *)arg, NULL };
	return ts_run(argv, out, 25000);
}

/* go tool pprof -raw FILE: go keeps its cache under HOME, so both point
 * into the test's directory (the reader needs no network for -raw). */
static char *go_pprof_raw(const char *dir, const char *file)
{
	char *out = NULL;
	int rc = sh("command -v go >/dev/null || { echo 'go missing: scripts/deps.sh installs golang-go'; exit 99; }\n"
		    "HOME=\"$1\" GOCACHE=\"$1/gocache\" GOFLAGS= exec go tool pprof -raw \"$2\" 2>&1",
		    dir, file, &out);
	cr_assert_eq(rc, 0, "go tool pprof -raw %s exited %d:\n%s", file, rc, out);
	return out;
}

/* The gunzipped bytes of path (zlib reads the gzip framing), in *len. */
static unsigned char *gunzip_file(const char *path, size_t *len)
{
	gzFile g = gzopen(path, "rb");
	cr_assert(g, "gzopen(%s)", path);
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	int r;
	while ((r = gzread(g, buf + n, (unsigned)(cap - n))) > 0) {
		n += (size_t)r;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	int err;
	gzerror(g, &err);
	cr_assert(r == 0 && err == Z_OK, "%s: gzip stream broken", path);
	gzclose(g);
	*len = n;
	return buf;
}

/* protoc --decode perftools.profiles.Profile with the shipped schema, on
 * the gunzipped bytes of path. */
/* not inlined: GCC 12 then takes the returned buffer for a local (-Wdangling-pointer) */
__attribute__((noinline)) static char *protoc_decode(const char *dir, const char *path)
{
	size_t len;
	unsigned char *raw = gunzip_file(path, &len);
	char *bin = ts_path_in(dir, "raw.pb"), *out = NULL;
	cr_assert_eq(ts_write_file(bin, raw, len), 0);
	int rc = sh("command -v protoc >/dev/null ||\n"
		    "{ echo 'protoc missing: scripts/deps.sh installs protobuf-compiler'; exit 99; }\n"
		    "exec protoc --proto_path=" SCHEMA_DIR " --decode perftools.profiles.Profile " SCHEMA " <\"$2\" 2>&1",
		    dir, bin, &out);
	cr_assert_eq(rc, 0, "protoc --decode exited %d:\n%s", rc, out);
	free(bin);
	free(raw);
	return out;
}

/* ---- go tool pprof -raw, parsed ---- */

struct raw_sample {
	long long count, wall;
	char stack[4096];      /* location names, leaf first, joined by ';' */
	char thread[320], state[32], fiber[320];
};

struct raw {
	char period_type[64];
	long long period;
	int nsamples;
	struct raw_sample s[256];
};

/* The value of "key:[value]" in a label line ("" when absent). Values may
 * hold ']' ("[untagged]"): one ends at the ']' before a space or the end. */
static void label_of(const char *line, const char *key, char *buf, size_t len)
{
	char k[32];
	snprintf(k, sizeof(k), "%s:[", key);
	buf[0] = '\0';
	const char *p = strstr(line, k);
	if (!p)
		return;
	p += strlen(k);
	const char *e = p;
	while (*e && !(e[0] == ']' && (e[1] == ' ' || e[1] == '\0' || e[1] == '\n')))
		e++;
	snprintf(buf, len, "%.*s", (int)(e - p), p);
}

static void parse_raw(char *text, struct raw *r)
{
	memset(r, 0, sizeof(*r));
	char *names[1024] = { 0 };
	int ids[256][160], nids[256] = { 0 };
	enum { HEAD, SAMPLES, LOCATIONS, OTHER } sec = HEAD;
	for (char *save, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "PeriodType: %63[^\n]", r->period_type) == 1)
			continue;
		if (sscanf(line, "Period: %lld", &r->period) == 1)
			continue;
		if (strncmp(line, "Samples:", 8) == 0) {
			sec = SAMPLES;
			continue;
		}
		if (strncmp(line, "Locations", 9) == 0) {
			sec = LOCATIONS;
			continue;
		}
		if (strncmp(line, "Mappings", 8) == 0) {
			sec = OTHER;
			continue;
		}
		long long c, w;
		int off;
		if (sec == SAMPLES && sscanf(line, " %lld %lld:%n", &c, &w, &off) == 2) {
			cr_assert_lt(r->nsamples, 256);
			struct raw_sample *s = &r->s[r->nsamples];
			s->count = c, s->wall = w;
			int n = 0, id, k;
			for (char *p = line + off; n < 160 && sscanf(p, "%d%n", &id, &k) == 1; p += k)
				ids[r->nsamples][n++] = id;
			nids[r->nsamples++] = n;
		} else if (sec == SAMPLES && r->nsamples > 0 && strstr(line, "thread:[")) {
			struct raw_sample *s = &r->s[r->nsamples - 1];
			label_of(line, "thread", s->thread, sizeof(s->thread));
			label_of(line, "state", s->state, sizeof(s->state));
			label_of(line, "fiber", s->fiber, sizeof(s->fiber));
		} else if (sec == LOCATIONS) {
			/* "     7: 0x0 M=1 NAME :0 s=0()": the name is anything up to " :0 s=" */
			int id;
			char *m = strstr(line, " M=");
			char *end = strstr(line, " :0 s=");
			if (sscanf(line, " %d:", &id) != 1 || !m || !end || id <= 0 || id >= 1024)
				continue;
			char *name = strchr(m + 1, ' ');
			cr_assert(name && name < end, "location line: %s", line);
			cr_assert_null(names[id], "location %d listed twice", id);
			names[id] = strndup(name + 1, (size_t)(end - name - 1));
		}
	}
	for (int i = 0; i < r->nsamples; i++) {
		size_t len = 0;
		for (int k = 0; k < nids[i]; k++) {
			int id = ids[i][k];
			cr_assert(id > 0 && id < 1024 && names[id], "sample %d: location %d has no name", i, id);
			len += (size_t)snprintf(r->s[i].stack + len, sizeof(r->s[i].stack) - len, "%s%s", k ? ";" : "",
						names[id]);
			cr_assert_lt(len, sizeof(r->s[i].stack));
		}
	}
	/* every label is one location: no two share a name */
	for (int a = 1; a < 1024; a++)
		for (int b = a + 1; names[a] && b < 1024; b++)
			cr_assert(!names[b] || strcmp(names[a], names[b]) != 0, "'%s' is two locations", names[a]);
	for (int a = 0; a < 1024; a++)
		free(names[a]);
}

static const struct raw_sample *find_stack(const struct raw *r, const char *stack)
{
	for (int i = 0; i < r->nsamples; i++)
		if (strcmp(r->s[i].stack, stack) == 0)
			return &r->s[i];
	return NULL;
}

/* ---- a known tree ---- */

static const char *const handle[] = { "libc.so.6`read", "app`handle", "app`main" };
static const char *const nap[] = { "libc.so.6`clock_nanosleep", "app`nap" };
static const char *const poll_frame[] = { "[idle] epoll_wait fd 4" };

static struct profile_tree *known_tree(unsigned flags)
{
	struct profile_tree *t = profile_tree_new(flags);
	cr_assert(t);
	struct profile_sample s[] = {
		{ "9/9 loop", PROFILE_BLOCKED, "read", "fd 3 pipe:[7]", handle, 3, "conn" },
		{ "9/9 loop", PROFILE_ON_CPU, NULL, NULL, NULL, 0, "parser" },
		{ "9/9 loop", PROFILE_CPU_WAIT, NULL, NULL, NULL, 0, "parser" },
		{ "9/9 loop", PROFILE_IDLE, NULL, NULL, poll_frame, 1, NULL },
		{ "9/10 helper", PROFILE_BLOCKED, "clock_nanosleep", NULL, nap, 2, NULL },
	};
	static const uint64_t w[] = { 30, 25, 5, 40, 17 };
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		cr_assert_eq(profile_tree_add(t, &s[i], w[i]), 0);
	return t;
}

static char *write_pprof(const char *dir, const char *name, struct profile_tree *t)
{
	char *path = NULL;
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	FILE *f = fopen(path, "w");
	cr_assert(f);
	/* a comm is anyone's bytes: an escape sequence and a byte that is not UTF-8 */
	struct profile_meta meta = { .title = "pid 9 (a\x1b[31mp\xff)", .rate_hz = 250, .duration_s = 0.117,
				     .start_unix = 1700000000.5 };
	cr_assert_eq(profile_write(f, PROFILE_FMT_PPROF, t, &meta, NULL), 0);
	cr_assert_eq(fclose(f), 0);
	return path;
}

struct want {
	const char *stack, *thread, *state, *fiber;
	long long count;
};

static void check_known(const struct raw *r, const struct want *w, size_t n)
{
	cr_assert_str_eq(r->period_type, "wall nanoseconds");
	cr_assert_eq(r->period, 4000000, "1 s / 250 Hz: %lld ns", r->period);
	cr_assert_eq(r->nsamples, (int)n, "%d samples, want one per folded line (%zu)", r->nsamples, n);
	for (size_t i = 0; i < n; i++) {
		const struct raw_sample *s = find_stack(r, w[i].stack);
		cr_assert(s, "no sample with the stack %s", w[i].stack);
		cr_assert_eq(s->count, w[i].count, "%s: %lld samples", w[i].stack, s->count);
		cr_assert_eq(s->wall, w[i].count * 4000000, "%s: wall %lld ns", w[i].stack, s->wall);
		cr_assert_str_eq(s->thread, w[i].thread);
		cr_assert_str_eq(s->state, w[i].state);
		cr_assert_str_eq(s->fiber, w[i].fiber);
	}
}

Test(profile_pprof, known_tree_read_by_go_pprof_and_protoc, .timeout = PROBE_TEST_TIMEOUT)
{
	char *dir = ts_tmpdir("pprof-known");
	/* leaf first: fd, syscall, the stack from the blocking call out, state, [fiber], thread */
	static const struct want plain[] = {
		{ "fd 3 pipe:[7];read;libc.so.6`read;app`handle;app`main;blocked;9/9 loop", "9/9 loop", "blocked", "", 30 },
		{ "on cpu;9/9 loop", "9/9 loop", "on cpu", "", 25 },
		{ "waiting for cpu;9/9 loop", "9/9 loop", "waiting for cpu", "", 5 },
		{ "[idle] epoll_wait fd 4;idle;9/9 loop", "9/9 loop", "idle", "", 40 },
		{ "clock_nanosleep;libc.so.6`clock_nanosleep;app`nap;blocked;9/10 helper", "9/10 helper", "blocked", "", 17 },
	};
	static const struct want fibers[] = {
		{ "fd 3 pipe:[7];read;libc.so.6`read;app`handle;app`main;blocked;conn;9/9 loop", "9/9 loop", "blocked",
		  "conn", 30 },
		{ "on cpu;parser;9/9 loop", "9/9 loop", "on cpu", "parser", 25 },
		{ "waiting for cpu;parser;9/9 loop", "9/9 loop", "waiting for cpu", "parser", 5 },
		{ "[idle] epoll_wait fd 4;idle;[no fiber];9/9 loop", "9/9 loop", "idle", "[no fiber]", 40 },
		{ "clock_nanosleep;libc.so.6`clock_nanosleep;app`nap;blocked;[no fiber];9/10 helper", "9/10 helper",
		  "blocked", "[no fiber]", 17 },
	};
	struct raw *r = malloc(sizeof(*r));
	for (int by_fiber = 0; by_fiber <= 1; by_fiber++) {
		struct profile_tree *t = known_tree(by_fiber ? PROFILE_TREE_BY_FIBER : 0);
		char *path = write_pprof(dir, by_fiber ? "f.pb.gz" : "p.pb.gz", t);
		char *text = go_pprof_raw(dir, path);
		parse_raw(text, r);
		check_known(r, by_fiber ? fibers : plain, 5);
		free(text);
		if (!by_fiber) {
			/* the shipped schema decodes it: the header fields, each label once in the strings */
			char *dec = protoc_decode(dir, path);
			static const char *const fields[] = {
				"period: 4000000", "duration_nanos: 117000000", "time_nanos: 1700000000500000000",
				"string_table: \"\"\n", "string_table: \"wall\"", "string_table: \"nanoseconds\"",
				"string_table: \"pid 9 (a?[31mp?)\"", "has_functions: true",
			};
			for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
				cr_assert(strstr(dec, fields[i]), "no '%s' in:\n%s", fields[i], dec);
			cr_assert(strncmp(strstr(dec, "string_table:"), "string_table: \"\"\n", 17) == 0,
				  "string_table[0] is not \"\"");
			const char *once = strstr(dec, "string_table: \"9/9 loop\"");
			cr_assert(once && !strstr(once + 1, "string_table: \"9/9 loop\""), "a label is not one string");
			free(dec);
		}
		free(path);
		profile_tree_delete(t);
	}
	free(r);
	ts_rmtree_free(dir);
}

/* The deepest stack a tree keeps (PROFILE_MAX_FRAMES frames under a syscall
 * and target), beside a shallow one: every frame in order, once. */
Test(profile_pprof, deepest_stack_kept_whole, .timeout = PROBE_TEST_TIMEOUT)
{
	char *dir = ts_tmpdir("pprof-deep");
	struct profile_tree *t = profile_tree_new(0);
	cr_assert(t);
	static char names[PROFILE_MAX_FRAMES][24];
	const char *frames[PROFILE_MAX_FRAMES];
	for (int i = 0; i < PROFILE_MAX_FRAMES; i++) {
		snprintf(names[i], sizeof(names[i]), "app`f%d", i);
		frames[i] = names[i];
	}
	struct profile_sample deep = { "1/1 deep", PROFILE_BLOCKED, "read", "fd 0 /dev/null", frames, PROFILE_MAX_FRAMES,
				       NULL };
	struct profile_sample shallow = { "1/1 deep", PROFILE_BLOCKED, "read", "fd 0 /dev/null", frames, 1, NULL };
	cr_assert_eq(profile_tree_add(t, &deep, 3), 0);
	cr_assert_eq(profile_tree_add(t, &shallow, 2), 0);
	char *path = write_pprof(dir, "deep.pb.gz", t);
	char *text = go_pprof_raw(dir, path);
	struct raw *r = malloc(sizeof(*r));
	parse_raw(text, r);
	char want[4096] = "fd 0 /dev/null;read";
	size_t len = strlen(want);
	for (int i = 0; i < PROFILE_MAX_FRAMES; i++)
		len += (size_t)snprintf(want + len, sizeof(want) - len, ";app`f%d", i);
	snprintf(want + len, sizeof(want) - len, ";blocked;1/1 deep");
	const struct raw_sample *s = find_stack(r, want);
	cr_assert(s && s->count == 3, "no deep stack of 3 samples in:\n%s", text);
	s = find_stack(r, "fd 0 /dev/null;read;app`f0;blocked;1/1 deep");
	cr_assert(s && s->count == 2, "no shallow stack of 2 samples in:\n%s", text);
	cr_assert_eq(r->nsamples, 2);
	free(r);
	free(text);
	free(path);
	profile_tree_delete(t);
	ts_rmtree_free(dir);
}

/* ---- a real child ---- */

/* Waits for "ready" on an example's stdout. */
static void wait_ready(int fd)
{
	char buf[256];
	size_t len = 0;
	long long end = ts_now_ms() + 5000;
	buf[0] = '\0';
	while (!strstr(buf, "ready") && len < sizeof(buf) - 1 && ts_now_ms() < end) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		buf[len += (size_t)n] = '\0';
	}
	cr_assert(strstr(buf, "ready"), "the child never said ready: '%s'", buf);
}

/* The text report's state rows of thread: "  45.3%    2.1      459  blocked"
 * (a state row is the only one whose label starts right after the samples). */
static int text_states(const char *text, const char *thread, char names[][32], double *pct, long long *samples)
{
	char head[128];
	snprintf(head, sizeof(head), "\n%s: ", thread);
	const char *p = strstr(text, head);
	cr_assert(p, "no thread '%s' in:\n%s", thread, text);
	p = strchr(p + 1, '\n') + 1;   /* the column header */
	p = strchr(p, '\n') + 1;
	int n = 0;
	while (*p == ' ' && n < PROFILE_NSTATES) {
		double share, ci;
		long long c;
		int off;
		if (sscanf(p, " %lf%% %lf %lld%n", &share, &ci, &c, &off) == 3 && p[off] == ' ' && p[off + 1] == ' ' &&
		    p[off + 2] != ' ') {
			snprintf(names[n], 32, "%.*s", (int)(strchr(p + off + 2, '\n') - (p + off + 2)), p + off + 2);
			pct[n] = share;
			samples[n++] = c;
		}
		p = strchr(p, '\n') + 1;
	}
	return n;
}

Test(profile_pprof, real_child_profile_and_report_match_the_text, .timeout = PROBE_TEST_TIMEOUT)
{
	int fd;
	const char *args[] = { "split", NULL };
	pid_t pid = tc_spawn_example("profile_mix", args, &fd);
	wait_ready(fd);
	char *dir = ts_tmpdir("pprof-real");
	char spid[16], thread[32];
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	snprintf(thread, sizeof(thread), "%d/%d profile_mix", (int)pid, (int)pid);
	char *live = ts_path_in(dir, "live.pb.gz"), *rec = ts_path_in(dir, "run.rec"), *rep = ts_path_in(dir, "report.pb.gz");
	cr_assert_eq(ts_loopstat(NULL, 20000, "profile", "-p", spid, "--duration", "1.5", "-f", "pprof", "-o", live,
				 "--record", rec, NULL), 0);
	tc_kill(pid);
	close(fd);
	char *text = NULL;
	cr_assert_eq(ts_loopstat(&text, 20000, "report", rec, "--threads", NULL), 0);
	cr_assert_eq(ts_loopstat(NULL, 20000, "report", rec, "--format", "pprof", "-o", rep, NULL), 0);
	/* the report of the recording is the live profile, byte for byte */
	size_t nl, nr;
	unsigned char *bl = gunzip_file(live, &nl), *br = gunzip_file(rep, &nr);
	cr_assert(nl == nr && memcmp(bl, br, nl) == 0, "report's pprof (%zu bytes) differs from the live one (%zu)", nr, nl);
	free(bl), free(br);

	char *raw = go_pprof_raw(dir, rep);
	struct raw *r = malloc(sizeof(*r));
	char *copy = strdup(raw);
	parse_raw(copy, r);
	free(copy);
	cr_assert_str_eq(r->period_type, "wall nanoseconds");
	cr_assert_eq(r->period, 1000000, "1 s / 1000 Hz: %lld", r->period);
	/* the child's stack: the blocked read, from its fd out to the call site */
	int asan = strstr(text, "libasan") != NULL;
	const char *site = asan ? "libc.so.6`read" : "profile_mix`read_answer";
	int read_ok = 0, idle_ok = 0;
	long long wall[PROFILE_NSTATES] = { 0 }, total = 0, count[PROFILE_NSTATES] = { 0 };
	for (int i = 0; i < r->nsamples; i++) {
		const struct raw_sample *s = &r->s[i];
		const char *root = strrchr(s->stack, ';');
		cr_assert_str_eq(root ? root + 1 : s->stack, s->thread, "the root frame is the thread");
		if (strcmp(s->thread, thread) != 0)
			continue;
		total += s->wall;
		for (int k = 0; k < PROFILE_NSTATES; k++)
			if (strcmp(s->state, profile_state_name(k)) == 0)
				wall[k] += s->wall, count[k] += s->count;
		if (strncmp(s->stack, "fd ", 3) == 0 && strstr(s->stack, " pipe:[") && strstr(s->stack, ";read;libc.so.6`read") &&
		    strstr(s->stack, site) && strcmp(s->state, "blocked") == 0)
			read_ok = 1;
		if (strncmp(s->stack, "[idle] epoll_wait fd ", 21) == 0 && strcmp(s->state, "idle") == 0)
			idle_ok = 1;
	}
	cr_assert(read_ok && idle_ok, "read %d idle %d in:\n%s", read_ok, idle_ok, raw);
	cr_assert_gt(total, 0);
	/* weighted by the split, the thread's samples still cover its wall time */
	long long all = 0;
	for (int k = 0; k < PROFILE_NSTATES; k++)
		all += count[k];
	cr_assert(llabs(total - all * r->period) <= (long long)r->nsamples, "wall %lld ns for %lld samples of %lld ns",
		  total, all, r->period);
	/* every state of the text report: the same samples, its share within its rounding */
	char names[PROFILE_NSTATES][32];
	double pct[PROFILE_NSTATES];
	long long samples[PROFILE_NSTATES];
	int n = text_states(text, thread, names, pct, samples);
	cr_assert_geq(n, 3, "blocked, on cpu, idle at least:\n%s", text);
	for (int i = 0; i < n; i++) {
		int k = 0;
		while (k < PROFILE_NSTATES && strcmp(names[i], profile_state_name(k)) != 0)
			k++;
		cr_assert_lt(k, PROFILE_NSTATES, "'%s' is no state", names[i]);
		double share = 100.0 * (double)wall[k] / (double)total;
		cr_assert_eq(count[k], samples[i], "%s: %lld samples in pprof, %lld in the text", names[i], count[k],
			     samples[i]);
		cr_assert(fabs(share - pct[i]) <= 0.05 + 1e-9, "%s: %.3f%% of wall in pprof, %.1f%% in the text", names[i],
			  share, pct[i]);
	}
	free(r);
	free(raw);
	free(text);
	free(live), free(rec), free(rep);
	ts_rmtree_free(dir);
}

/* ---- errors ---- */

/* `loopstat report rec -f pprof` with a terminal as stdout and stderr:
 * its exit status, and what it wrote in buf. */
static int on_a_tty(const char *rec, char *buf, size_t len)
{
	int master;
	pid_t pid = forkpty(&master, NULL, NULL, NULL);
	cr_assert_geq(pid, 0, "forkpty");
	if (pid == 0) {
		execl(ts_loopstat_bin(), "loopstat", "report", rec, "-f", "pprof", (char *)NULL);
		_exit(127);
	}
	size_t n = 0;
	long long end = ts_now_ms() + 10000;
	for (;;) {
		struct pollfd p = { .fd = master, .events = POLLIN };
		if (ts_now_ms() > end || poll(&p, 1, 100) < 0)
			break;
		ssize_t r = p.revents ? read(master, buf + n, len - 1 - n) : 0;
		if (p.revents && r <= 0)
			break;   /* EIO: the child and its terminal are gone */
		n += r > 0 ? (size_t)r : 0;
	}
	buf[n] = '\0';
	close(master);
	int st;
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(profile_pprof, unwritable_output_or_a_terminal_refused, .timeout = PROBE_TEST_TIMEOUT)
{
	int rfd, wfd;
	pid_t pid = tc_spawn_blocked_read(&rfd, &wfd);
	char *dir = ts_tmpdir("pprof-err");
	char spid[16], *rec = ts_path_in(dir, "run.rec"), *out = NULL;
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	cr_assert_eq(ts_loopstat(NULL, 20000, "record", "-o", rec, "-p", spid, "--duration", "0.3", NULL), 0);
	/* stderr through sh: the message names the call and the cause */
	static const char report_full[] = "exec \"$1\" report \"$2\" -f pprof -o /dev/full 2>&1";
	static const char report_nodir[] = "exec \"$1\" report \"$2\" -f pprof -o \"$2.d/none/p.pb.gz\" 2>&1";
	static const char profile_full[] = "exec \"$1\" profile -p \"$2\" --duration 0.2 -f pprof -o /dev/full 2>&1";
	const char *bin = ts_loopstat_bin();
	cr_assert_eq(sh(report_full, bin, rec, &out), 1, "%s", out);
	cr_assert(strstr(out, "loopstat report: ") && strstr(out, "/dev/full") && strstr(out, "No space left on device"),
		  "%s", out);
	free(out);
	cr_assert_eq(sh(report_nodir, bin, rec, &out), 1, "%s", out);
	cr_assert(strstr(out, "loopstat report: open(") && strstr(out, "No such file or directory"), "%s", out);
	free(out);
	cr_assert_eq(sh(profile_full, bin, spid, &out), 1, "%s", out);
	cr_assert(strstr(out, "loopstat profile: ") && strstr(out, "No space left on device"), "%s", out);
	free(out);
	/* to a pipe it is written; to a terminal it is refused, as gzip does */
	cr_assert_eq(ts_loopstat(&out, 20000, "report", rec, "-f", "pprof", NULL), 0);
	cr_assert((unsigned char)out[0] == 0x1f && (unsigned char)out[1] == 0x8b, "no gzip magic on the pipe");
	free(out);
	char tty_out[4096];
	cr_assert_eq(on_a_tty(rec, tty_out, sizeof(tty_out)), 2, "%s", tty_out);
	cr_assert(strstr(tty_out, "loopstat report: pprof is gzipped binary: not written to a terminal"), "%s", tty_out);
	tc_kill(pid);
	close(wfd);
	free(rec);
	ts_rmtree_free(dir);
}

/* ---- the one table of formats ---- */

Test(profile_pprof, format_table_help_and_docs_agree, .timeout = PROBE_TEST_TIMEOUT)
{
	char *usage = ts_read_file("docs/usage.md"), *profile_md = ts_read_file("docs/profile.md"), *help = NULL;
	const char *row = strstr(usage, "| `-f, --format FORMAT` |");
	cr_assert(row, "docs/usage.md has no --format row");
	char *row_end = strchr(row, '\n');
	*row_end = '\0';
	cr_assert_eq(ts_loopstat(&help, 20000, "report", "--help", NULL), 0);
	for (int i = 0; i < PROFILE_NFORMATS; i++) {
		const char *name = profile_format_name(i);
		enum profile_format f;
		cr_assert_eq(profile_format_parse(name, &f), 0);
		cr_assert_eq((int)f, i);
		char code[32];
		snprintf(code, sizeof(code), "`%s`", name);
		cr_assert(strstr(row, code), "docs/usage.md's --format row lacks %s: %s", code, row);
		snprintf(code, sizeof(code), "- `%s`", name);
		cr_assert(strstr(profile_md, code), "docs/profile.md's Formats lack %s", code);
		cr_assert(strstr(PROFILE_FORMAT_LIST, name), "PROFILE_FORMAT_LIST lacks %s", name);
	}
	cr_assert(strstr(help, PROFILE_FORMAT_LIST), "report --help: %s", help);
	cr_assert_null(profile_format_name(PROFILE_NFORMATS));
	free(help);
	free(usage);
	free(profile_md);
}
