/* The exit table (exitcodes.h) × the command table: every code a command can give, from a real run of the binary, with its message prefixed "loopstat COMMAND: "; the codes a command cannot give are listed, with why. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "support/children.h"
#include "support/support.h"
#include "support/users.h"

/*
 * One cell of the table. args is a shell fragment after the binary, with
 * %W (a live instrumented worker's pid), %R (a root process blocked in
 * read, refused to the user nobody), %D (a scratch directory), %E (an
 * empty segment directory), %B (the binary); env goes before it, as_nobody
 * runs it as the user nobody; a '!' first makes args a whole shell command.
 * A cell with `cannot` is a code the command cannot give, and why.
 */
struct cell {
	const char *cmd;
	int code;
	const char *env, *args;
	int as_nobody;
	const char *says;      /* in the messages on stderr (NULL: whatever they are) */
	const char *report;    /* check's verdicts: in its report on stdout instead */
	const char *cannot;
};

#define NOBODY 1
#define W_ARGS "-p %W --duration 0.3"

static const struct cell cells[] = {
	/* top: the dashboard on a terminal (script gives it one; 'q' quits) */
	{ "top", EXIT_OK, NULL, "!printf q | TERM=xterm script -qec '%B top -p %W' /dev/null >/dev/null" },
	{ "top", EXIT_FAIL, NULL, "top -p %W", 0, "needs a terminal" },
	{ "top", EXIT_USAGE, NULL, "top --delay 0", 0, "invalid delay" },
	{ "top", EXIT_INCONCLUSIVE, .cannot = "only check judges thresholds" },
	{ "top", EXIT_NOTHING, NULL, "top -p 4194000", 0, "no process 4194000" },
	{ "top", EXIT_ACCESS, NULL, "top -p %R", NOBODY, "access to pid" },
	{ "top", EXIT_DEFERRED, .cannot = "only export spools points" },

	{ "list", EXIT_OK, NULL, "list " W_ARGS },
	{ "list", EXIT_FAIL, NULL, "list " W_ARGS " >/dev/full", 0, "writing the output: No space left on device" },
	{ "list", EXIT_USAGE, NULL, "list --duration 30x", 0, "invalid duration" },
	{ "list", EXIT_INCONCLUSIVE, .cannot = "only check judges thresholds" },
	{ "list", EXIT_NOTHING, "LOOPSTAT_SHM_DIR=%E", "list --duration 0.3", 0, "no worker to measure" },
	{ "list", EXIT_ACCESS, NULL, "list -p %R --duration 0.3", NOBODY, "access refused" },
	{ "list", EXIT_DEFERRED, .cannot = "only export spools points" },

	{ "export", EXIT_OK, NULL, "export --dry-run " W_ARGS },
	{ "export", EXIT_FAIL, NULL, "export --dry-run " W_ARGS " >/dev/full", 0, "writing the output" },
	{ "export", EXIT_USAGE, NULL, "export --dry-run --timeout 0", 0, "invalid timeout" },
	{ "export", EXIT_INCONCLUSIVE, .cannot = "only check judges thresholds" },
	{ "export", EXIT_NOTHING, "LOOPSTAT_SHM_DIR=%E", "export --dry-run --duration 0.3", 0, "no worker to measure" },
	{ "export", EXIT_ACCESS, NULL, "export --dry-run -p %R --duration 0.3", NOBODY, "access refused" },
	/* port 1 of the loopback: nothing listens, the points wait in the spool */
	{ "export", EXIT_DEFERRED, NULL, "export --graphite 127.0.0.1:1 --spool %D/spool --timeout 2 " W_ARGS, 0,
	  "deferred to the next run" },

	/* serve runs until a signal: SIGTERM is its clean exit */
	{ "serve", EXIT_OK, NULL, "!%B serve --listen 127.0.0.1:0 -p %W 2>%D/serve.err & "
	  "until grep -qs listening %D/serve.err; do sleep 0.1; done; kill -TERM $!; wait $!; rc=$?; "
	  "cat %D/serve.err >&2; exit $rc", 0, "TERM: stopped" },
	{ "serve", EXIT_FAIL, NULL, "serve --listen 192.0.2.1:9 -p %W", 0, "Cannot assign requested address" },
	{ "serve", EXIT_USAGE, NULL, "serve --window 0", 0, "invalid window" },
	{ "serve", EXIT_INCONCLUSIVE, .cannot = "only check judges thresholds" },
	{ "serve", EXIT_NOTHING, NULL, "serve -p 4194000", 0, "no process 4194000" },
	{ "serve", EXIT_ACCESS, NULL, "serve --listen 127.0.0.1:0 -p %R", NOBODY, "access to pid" },
	{ "serve", EXIT_DEFERRED, .cannot = "only export spools points" },

	/* one second of a share is inconclusive; a maximum decides on any amount */
	{ "check", EXIT_OK, NULL, "check -p %W --duration 1 'runqueue_max<=1000'", 0, NULL, "1 passed" },
	{ "check", EXIT_FAIL, NULL, "check -p %W --duration 1 'runqueue_max>=1000'", 0, NULL, "1 failed" },
	{ "check", EXIT_USAGE, NULL, "check 'idel_pct>=30'", 0, "did you mean idle_pct" },
	{ "check", EXIT_INCONCLUSIVE, NULL, "check -p %W --duration 1 'idle_pct>=10'", 0, NULL, "1 inconclusive" },
	{ "check", EXIT_NOTHING, "LOOPSTAT_SHM_DIR=%E", "check --duration 1 'idle_pct>=10'", 0, "nothing to measure" },
	{ "check", EXIT_ACCESS, NULL, "check -p %R --duration 1 'idle_pct>=10'", NOBODY, "no access to the task's /proc syscall file" },
	{ "check", EXIT_DEFERRED, .cannot = "only export spools points" },

	{ "profile", EXIT_OK, NULL, "profile " W_ARGS " -o /dev/null" },
	{ "profile", EXIT_FAIL, NULL, "profile " W_ARGS " -o /dev/full", 0, "writing /dev/full: No space left on device" },
	{ "profile", EXIT_USAGE, NULL, "profile", 0, "needs -p PID" },
	{ "profile", EXIT_INCONCLUSIVE, .cannot = "only check judges thresholds" },
	{ "profile", EXIT_NOTHING, NULL, "profile -p 4194000", 0, "no process 4194000" },
	{ "profile", EXIT_ACCESS, NULL, "profile -p %R", NOBODY, "access to pid" },
	{ "profile", EXIT_DEFERRED, .cannot = "only export spools points" },

	{ "record", EXIT_OK, NULL, "record -o %D/ok.rec " W_ARGS },
	{ "record", EXIT_FAIL, NULL, "record -o /dev/full " W_ARGS, 0, "writing /dev/full: No space left on device" },
	{ "record", EXIT_USAGE, NULL, "record -p 1", 0, "needs -o FILE" },
	{ "record", EXIT_INCONCLUSIVE, .cannot = "only check judges thresholds" },
	{ "record", EXIT_NOTHING, NULL, "record -o /dev/null -p 4194000", 0, "no process 4194000" },
	{ "record", EXIT_ACCESS, NULL, "record -o /dev/null -p %R", NOBODY, "access to pid" },
	{ "record", EXIT_DEFERRED, .cannot = "only export spools points" },

	{ "report", EXIT_OK, NULL, "report %D/setup.rec -o /dev/null" },
	{ "report", EXIT_FAIL, NULL, "report %D/setup.rec -o /dev/full", 0, "writing /dev/full: No space left on device" },
	{ "report", EXIT_USAGE, NULL, "report", 0, "needs a recording" },
	{ "report", EXIT_INCONCLUSIVE, .cannot = "only check judges thresholds" },
	{ "report", EXIT_NOTHING, NULL, "report %D/empty.rec", 0, "holds no samples" },
	{ "report", EXIT_ACCESS, .cannot = "it reads a file, no process: a file it may not open is exit 1 with open's cause" },
	{ "report", EXIT_DEFERRED, .cannot = "only export spools points" },

	{ "diff", EXIT_OK, NULL, "diff %D/setup.rec %D/setup.rec" },
	{ "diff", EXIT_FAIL, NULL, "diff %D/setup.rec %D/setup.rec >/dev/full", 0, "writing the output: No space left on device" },
	{ "diff", EXIT_USAGE, NULL, "diff %D/setup.rec", 0, "needs two runs" },
	/* list --json's idle with its interval, the same twice: the change 0 +- 7 straddles -1 */
	{ "diff", EXIT_INCONCLUSIVE, NULL, "!printf '{\"workers\":[{\"name\":\"w\",\"idle_pct\":50,\"idle_ci95\":5}]}' "
	  ">%D/l.json && %B diff --fail-on 'idle_pct<-1' %D/l.json %D/l.json", 0, NULL,
	  "--fail-on idle_pct<-1: inconclusive" },
	{ "diff", EXIT_NOTHING, NULL, "diff %D/empty.rec %D/setup.rec", 0, "holds no worker" },
	{ "diff", EXIT_ACCESS, .cannot = "it reads files, no process: a file it may not open is exit 1 with open's cause" },
	{ "diff", EXIT_DEFERRED, .cannot = "only export spools points" },

	{ "gc", EXIT_OK, NULL, "gc", 0, NULL },
	{ "gc", EXIT_FAIL, NULL, "gc >/dev/full", 0, "writing the output" },
	{ "gc", EXIT_USAGE, NULL, "gc -p 1", 0, "does not take the option" },
	{ "gc", EXIT_INCONCLUSIVE, .cannot = "only check judges thresholds" },
	{ "gc", EXIT_NOTHING, .cannot = "no stale segment is success: there was nothing to remove, not nothing to measure" },
	{ "gc", EXIT_ACCESS, .cannot = "it reads no process; a segment it may not remove is exit 1 with unlink's cause" },
	{ "gc", EXIT_DEFERRED, .cannot = "only export spools points" },
};

static char *dir, *empty;
static pid_t worker, root_child;
static int root_wr;

static void setup(void)
{
	dir = ts_tmpdir("exittab");
	/* the user nobody opens the segment directory too (and is refused
	 * only the root process it is pointed at) */
	cr_assert_eq(chmod(dir, 0755), 0);
	setenv("LOOPSTAT_SHM_DIR", dir, 1);
	cr_assert(asprintf(&empty, "%s/empty", dir) > 0);
	cr_assert_eq(mkdir(empty, 0755), 0);
	const char *args[] = { "--idle", "0.9", "--seconds", "120", NULL };
	worker = tc_spawn_example("duty_cycle", args, NULL);
	int fd;
	root_child = tc_spawn_blocked_read(&fd, &root_wr);
}

static void teardown(void)
{
	tc_kill(worker);
	tc_kill(root_child);
	close(root_wr);
	free(empty);
	ts_rmtree_free(dir);
}

TestSuite(exit_table, .init = setup, .fini = teardown, .timeout = 180);

/* s with the placeholders filled in. */
static void expand(const char *s, char *out, size_t len)
{
	size_t o = 0;
	for (; *s && o + 1 < len; s++) {
		char v[512] = "";
		if (*s != '%' || !s[1]) {
			out[o++] = *s;
			continue;
		}
		switch (*++s) {
		case 'W': snprintf(v, sizeof(v), "%d", (int)worker); break;
		case 'R': snprintf(v, sizeof(v), "%d", (int)root_child); break;
		case 'D': snprintf(v, sizeof(v), "%s", dir); break;
		case 'E': snprintf(v, sizeof(v), "%s", empty); break;
		case 'B': snprintf(v, sizeof(v), "%s", ts_loopstat_bin()); break;
		default: cr_assert_fail("placeholder %%%c", *s);
		}
		o += (size_t)snprintf(out + o, len - o, "%s", v);
	}
	out[o < len ? o : len - 1] = '\0';
}

/* Runs a cell: its exit status; its stderr into *err, its stdout into *out.
 * args starting with '!' are a whole shell command of their own. */
static int run(const struct cell *c, char **err, char **out)
{
	char args[1024], env[512] = "", cmd[4096], *outpath;
	expand(c->args[0] == '!' ? c->args + 1 : c->args, args, sizeof(args));
	if (c->env)
		expand(c->env, env, sizeof(env));
	cr_assert(asprintf(&outpath, "%s/stdout", dir) > 0);
	if (c->args[0] == '!')
		snprintf(cmd, sizeof(cmd), "%s", args);
	else
		/* stderr to the pipe, stdout to a file, then the cell's own redirections */
		snprintf(cmd, sizeof(cmd), "%s exec %s \"%s\" %s", env,
			 c->as_nobody ? TS_AS_NOBODY : "",
			 ts_loopstat_bin(), args);
	char full[4200];
	snprintf(full, sizeof(full), "exec 2>&1 >%s; %s", outpath, cmd);
	char *argv[] = { "/bin/sh", "-c", full, NULL };
	unlink(outpath);
	int rc = ts_run(argv, err, 60000);
	FILE *f = fopen(outpath, "r");
	size_t n = 0;
	*out = NULL;
	if (!f || getdelim(out, &n, '\0', f) < 0) {
		free(*out);
		*out = strdup("");
	}
	if (f)
		fclose(f);
	free(outpath);
	return rc;
}

/* Every line says the command first, or is the usage hint, or an indented
 * continuation (check's caret under a threshold). */
static int prefixed(const char *cmd, const char *err)
{
	char pre[64], hint[64];
	snprintf(pre, sizeof(pre), "loopstat %s: ", cmd);
	snprintf(hint, sizeof(hint), "try 'loopstat %s --help'", cmd);
	for (const char *l = err; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
		if (strncmp(l, pre, strlen(pre)) && strncmp(l, hint, strlen(hint)) && !(l != err && l[0] == ' '))
			return 0;
	return 1;
}

static const struct cell *find(const char *cmd, int code)
{
	const struct cell *found = NULL;
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++)
		if (strcmp(cells[i].cmd, cmd) == 0 && cells[i].code == code) {
			cr_assert(!found, "two cells for %s exit %d", cmd, code);
			found = &cells[i];
		}
	return found;
}

Test(exit_table, every_command_gives_every_code_it_can)
{
	ts_need_nobody();
	char rec[1024];
	/* a recording to report, and one without samples */
	snprintf(rec, sizeof(rec), "record -o %s/setup.rec -p %d --duration 0.3", dir, (int)worker);
	char *a[] = { "/bin/sh", "-c", NULL, NULL }, *out, line[1200];
	snprintf(line, sizeof(line), "exec \"%s\" %s", ts_loopstat_bin(), rec);
	a[2] = line;
	cr_assert_eq(ts_run(a, &out, 20000), 0, "%s", out);
	free(out);
	char *empty_rec;
	cr_assert(asprintf(&empty_rec, "%s/empty.rec", dir) > 0);
	const char header[] = "loopstat-record 1\nm rate_hz 1000.000\nm start_unix 0.000\nm host h\nm title t\n"
			      "m duration_s 1.000\n";
	cr_assert_eq(ts_write_file(empty_rec, header, sizeof(header) - 1), 0);
	free(empty_rec);

	int ran = 0;
	for (size_t c = 0; c < cli_ncommands; c++)
		for (int e = 0; e < exit_ncodes; e++) {
			const char *name = cli_commands[c]->name;
			int code = exit_codes[e].code;
			const struct cell *cell = find(name, code);
			cr_assert(cell, "%s exit %d (%s): no case, and not listed as impossible", name, code,
				  exit_codes[e].name);
			if (cell->cannot)
				continue;
			char *err, *stdout_text;
			int rc = run(cell, &err, &stdout_text);
			cr_expect_eq(rc, code, "%s exit %d (%s) from '%s': got %d:\n%s", name, code, exit_codes[e].name,
				     cell->args, rc, err);
			cr_expect(prefixed(name, err), "%s exit %d: a message not prefixed 'loopstat %s: ':\n%s", name,
				  code, name, err);
			if (code != EXIT_OK && !cell->report)
				cr_expect(err[0], "%s exit %d says why", name, code);
			if (cell->says)
				cr_expect(strstr(err, cell->says), "%s exit %d should say '%s':\n%s", name, code, cell->says,
					  err);
			if (cell->report)
				cr_expect(strstr(stdout_text, cell->report), "%s exit %d: report lacks '%s':\n%s", name, code,
					  cell->report, stdout_text);
			free(err);
			free(stdout_text);
			ran++;
		}
	cr_log_info("%d runs", ran);
	/* no cell names a command or a code that is not in the tables */
	for (size_t i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
		int known = cli_find_command(cells[i].cmd) != NULL, code = 0;
		for (int e = 0; e < exit_ncodes; e++)
			code |= exit_codes[e].code == cells[i].code;
		cr_expect(known && code, "cell %zu: %s exit %d is not in the tables", i, cells[i].cmd, cells[i].code);
	}
}

/* `cmd` (a shell fragment after the binary) as nobody or root; stderr in *err. */
static int run_line(const char *args, int as_nobody, char **err)
{
	struct cell c = { .cmd = "", .args = args, .as_nobody = as_nobody };
	char *out;
	int rc = run(&c, err, &out);
	free(out);
	return rc;
}

/* A plain list, export or check by a user who may read no segment: the
 * same 4, and each says how many segments it could not read. */
Test(exit_table, a_user_who_can_read_no_segment_is_told_how_many)
{
	ts_need_nobody();
	char want[600];
	snprintf(want, sizeof(want), "no worker to measure: 1 segment in %s could not be read", dir);
	static const char *const cmds[] = { "list --duration 0.3", "export --dry-run --duration 0.3",
					    "check --duration 1 'idle_pct>=10'" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char *err, name[16];
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(cmds[i], " "), cmds[i]);
		int rc = run_line(cmds[i], NOBODY, &err);
		cr_expect_eq(rc, EXIT_NOTHING, "%s as nobody: exit %d: %s", cmds[i], rc, err);
		cr_expect(strstr(err, want) || (i == 2 && strstr(err, "nothing to measure: 1 segment in")),
			  "%s says how many: %s", cmds[i], err);
		cr_expect(prefixed(name, err), "%s", err);
		free(err);
	}
	/* root reads it: the same list shows the worker */
	char *err;
	cr_expect_eq(run_line("list --duration 0.3", 0, &err), EXIT_OK, "%s", err);
	free(err);
}

/* A kernel thread's syscall file reads as all zeros ("read fd 0"): named
 * with -p it is said to be one, and is nothing to measure. */
Test(exit_table, a_kernel_thread_is_nothing_to_measure)
{
	/* the first kernel thread /proc shows (PF_KTHREAD in stat's flags) */
	pid_t k = 0;
	for (pid_t p = 2; p < 4096 && !k; p++) {
		char path[64], buf[1024];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
		const char *fields = ts_stat_fields(path, buf, sizeof(buf));
		unsigned long flags;
		if (fields && sscanf(fields, "%*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & 0x00200000))
			k = p;
	}
	if (!k)
		cr_skip_test("no kernel thread in this pid namespace");
	static const char *const cmds[] = { "list -p %d --duration 0.3", "profile -p %d --duration 0.3",
					    "record -o /dev/null -p %d --duration 0.3", "top -p %d",
					    "check -p %d --duration 1 'idle_pct>=10'" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char args[128], *err, want[64];
		snprintf(args, sizeof(args), cmds[i], (int)k);
		int rc = run_line(args, 0, &err);
		cr_expect_eq(rc, EXIT_NOTHING, "%s: exit %d: %s", args, rc, err);
		snprintf(want, sizeof(want), "pid %d (", (int)k);
		cr_expect(strstr(err, want) && strstr(err, ") is a kernel thread"), "%s: %s", args, err);
		free(err);
	}
}
