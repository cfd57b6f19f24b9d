/* The command table: each command's --help, options refused where they do not apply, strict numbers, one duration grammar, every message prefixed with its command, lost output reported, and loopstat(1) kept in step with the tables. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "support/support.h"

TestSuite(cli, .timeout = 30);

/* Runs `loopstat ARGS` through sh with the redirections in redir; returns
 * the exit status and stdout+stderr as the shell saw them. */
static int sh_loopstat(const char *args, const char *redir, char **out)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "exec \"%s\" %s %s", ts_loopstat_bin(), args, redir);
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	return ts_run(argv, out, 20000);
}

Test(cli, every_command_has_its_help)
{
	for (size_t i = 0; i < cli_ncommands; i++) {
		char args[64], *out;
		snprintf(args, sizeof(args), "%s --help", cli_commands[i]->name);
		int rc = sh_loopstat(args, "", &out);
		cr_assert_eq(rc, 0, "%s: exit %d", args, rc);
		char want[64];
		snprintf(want, sizeof(want), "usage: loopstat %s", cli_commands[i]->name);
		cr_assert(strstr(out, want), "%s:\n%s", args, out);
		for (const struct cli_option *o = cli_commands[i]->options; o->long_name; o++) {
			char opt[64];
			snprintf(opt, sizeof(opt), "--%s", o->long_name);
			cr_assert(strstr(out, opt) && strstr(out, o->help), "%s lacks %s:\n%s", args, opt, out);
		}
		free(out);
	}
}

Test(cli, main_usage_lists_commands_and_exit_codes)
{
	char *out;
	cr_assert_eq(sh_loopstat("--help", "", &out), 0);
	for (size_t i = 0; i < cli_ncommands; i++)
		cr_assert(strstr(out, cli_commands[i]->summary), "%s", out);
	for (int i = 0; i < exit_ncodes; i++)
		cr_assert(strstr(out, exit_codes[i].desc), "%s", out);
	free(out);
}

/* Every environment variable loopstat reads (a "LOOPSTAT_..." string in
 * the monitor's or the probes' sources) is in --help and docs/usage.md. */
Test(cli, main_usage_lists_every_environment_variable, .timeout = 20)
{
	char *help, *names = NULL;
	cr_assert_eq(sh_loopstat("--help", "", &help), 0);
	char *doc = ts_read_file("docs/usage.md");
	cr_assert(doc);
	char *const argv[] = { "/bin/sh", "-c", "grep -rhoE '\"LOOPSTAT_[A-Z_]+\"' monitor probes | tr -d '\"' | sort -u",
			       NULL };
	cr_assert_eq(ts_run(argv, &names, 10000), 0);
	int n = 0;
	for (char *name = strtok(names, "\n"); name; name = strtok(NULL, "\n"), n++) {
		cr_expect(strstr(help, name), "loopstat --help does not mention %s", name);
		cr_expect(strstr(doc, name), "docs/usage.md does not mention %s", name);
	}
	cr_assert_geq(n, 4, "found only %d variables in the sources", n);
	free(names);
	free(doc);
	free(help);
}

/* Commands that sweep the host say so, and no doc still says the old
 * default (instrumented workers only). */
Test(cli, sweeping_commands_say_their_default_targets, .timeout = 20)
{
	const char *cmds[] = { "list", "record", "check" };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char *out, args[64];
		snprintf(args, sizeof(args), "%s --help", cmds[i]);
		cr_assert_eq(sh_loopstat(args, "", &out), 0);
		cr_expect(strstr(out, CLI_TARGETS_HELP), "%s --help does not say its default targets:\n%s", cmds[i], out);
		cr_expect(!strstr(out, "every instrumented worker"), "%s --help says the old default", cmds[i]);
		free(out);
	}
	const char *docs[] = { "docs/usage.md", "docs/check.md", "docs/loopstat.1" };
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		char *doc = ts_read_file(docs[i]);
		cr_assert(doc);
		cr_expect(!strstr(doc, "every instrumented worker"), "%s still says 'every instrumented worker'", docs[i]);
		free(doc);
	}
}

/* The user's docs speak to users: no project history ("wave 3", "issue
 * 17"), and no alert said to never fire. */
Test(cli, user_docs_have_no_internal_wording, .timeout = 10)
{
	const char *docs[] = { "README.md", "docs/usage.md", "docs/check.md", "docs/export.md", "docs/profile.md",
			       "docs/shm-abi.md", "docs/loopstat.1" };
	regex_t re;
	cr_assert_eq(regcomp(&re, "[Ww]ave [0-9]|[Ii]ssue [0-9]|never fire", REG_EXTENDED), 0);
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		char *doc = ts_read_file(docs[i]);
		cr_assert(doc, "%s", docs[i]);
		regmatch_t m;
		if (regexec(&re, doc, 1, &m, 0) == 0)
			cr_expect(0, "%s says \"%.40s\"", docs[i], doc + m.rm_so);
		free(doc);
	}
	regfree(&re);
}

/* Every line of a command's stderr says the command first: "loopstat
 * CMD: ...", or the hint "try 'loopstat CMD --help'" after a usage error,
 * or is an indented continuation of the message above it (check shows a
 * threshold with a caret under the mistake). */
static void expect_prefixed(const char *cmd, const char *args, const char *err)
{
	char pre[64], hint[64];
	snprintf(pre, sizeof(pre), "loopstat %s: ", cmd);
	snprintf(hint, sizeof(hint), "try 'loopstat %s --help'", cmd);
	cr_expect(err[0], "'%s' says why", args);
	for (const char *l = err; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
		cr_expect(strncmp(l, pre, strlen(pre)) == 0 || strncmp(l, hint, strlen(hint)) == 0 || (l != err && l[0] == ' '),
			  "'%s': a line without '%s':\n%s", args, pre, err);
}

/* The command a case runs: its first word. */
static void first_word(const char *args, char *buf, size_t len)
{
	snprintf(buf, len, "%.*s", (int)strcspn(args, " "), args);
}

Test(cli, usage_errors_exit_2_and_every_line_names_the_command)
{
	static const char *const bad[] = {
		"top -d 0", "top --delay 1x", "top --json", "top -r 0", "top extra",
		"list --duration 0x10", "list --duration ' 1'", "list --duration 1e1", "list -r +5", "list -r 100000",
		"list -p ' 1'", "list -p +1", "list -p '1 '", "list -p 1,,2", "list -p 0",
		"list -n a -n b",             /* a second -n would silently replace the first */
		"list extra", "list --duration", "list --duration 30x", "list --duration -1",
		"export --dry-run --timeout 0", "export --dry-run --duration 1y", "export --dry-run -r 100000",
		"export", "export --config /nonexistent/export.conf", "export --dry-run --max-age 0",
		"serve --listen nowhere", "serve --window 0", "serve --max-connections 0", "serve --interval 1x",
		"serve extra",
		"check", "check 'idel_pct>=30'", "check --duration 0 'idle_pct>=30'", "check --tap-version 12 'idle_pct>=1'",
		"check --timeout 5 'idle_pct>=1'",
		"profile", "profile -p 1 --duration 0", "profile -p 1 -f nope", "profile -p 1,2",
		"record", "record -o /dev/null --duration 1q",
		"report", "report a b", "report -f nope x",
		"diff", "diff a", "diff a b c", "diff -f nope a b", "diff --fail-on 'idel_pct<1' a b",
		"gc --json", "gc -p 1", "gc extra",   /* options that do not apply */
	};
	for (size_t c = 0; c < cli_ncommands; c++) {
		size_t n = 0;
		char cmd[32];
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			first_word(bad[i], cmd, sizeof(cmd));
			n += strcmp(cmd, cli_commands[c]->name) == 0;
		}
		cr_expect(n > 0, "no bad-usage case for %s", cli_commands[c]->name);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *out, cmd[32];
		first_word(bad[i], cmd, sizeof(cmd));
		int rc = sh_loopstat(bad[i], "2>&1 >/dev/null", &out);
		cr_expect_eq(rc, 2, "'%s': exit %d, %s", bad[i], rc, out);
		expect_prefixed(cmd, bad[i], out);
		free(out);
	}
	/* before a command is chosen there is none to name */
	char *out;
	cr_expect_eq(sh_loopstat("frobnicate", "2>&1", &out), 2);
	cr_expect(strncmp(out, "loopstat: unknown command 'frobnicate'\n", 39) == 0, "%s", out);
	free(out);
}

Test(cli, command_names_come_from_one_list)
{
#define NAME(n) #n,
	static const char *const names[] = { CLI_COMMANDS(NAME) };
#undef NAME
	cr_assert_eq(sizeof(names) / sizeof(names[0]), cli_ncommands);
	for (size_t i = 0; i < cli_ncommands; i++) {
		cr_expect_str_eq(cli_commands[i]->name, names[i]);
		cr_expect_eq(cli_find_command(names[i]), cli_commands[i]);
	}
}

Test(cli, one_duration_grammar)
{
	static const struct { const char *in; double s; } good[] = {
		{ "2", 2 }, { "1.5", 1.5 }, { "30s", 30 }, { "2m", 120 }, { "1.5h", 5400 }, { "1d", 86400 },
		{ "500ms", 0.5 }, { ".5", 0.5 }, { "0", 0 }, { "250us", 250e-6 }, { "100ns", 100e-9 },
	};
	static const char *const bad[] = { "", "s", "1x", "-1", "+1", " 1", "1 ", "1e1", "0x10", "1.5.2", "2mm",
					   "30sec", "1,5", "inf", "nan", "1..", "m2" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		double v = -1;
		cr_expect_eq(cli_parse_duration(good[i].in, 0, 1e9, &v), 0, "'%s'", good[i].in);
		cr_expect(fabs(v - good[i].s) < 1e-9, "'%s' is %g s, not %g", good[i].in, good[i].s, v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double v;
		cr_expect_eq(cli_parse_duration(bad[i], 0, 1e9, &v), -EINVAL, "'%s' refused", bad[i]);
	}
	double v;
	cr_expect_eq(cli_parse_duration("2m", 0, 60, &v), -EINVAL, "the range is in seconds, after the unit");
	cr_expect_eq(cli_parse_duration("0.04", 0.05, 1, &v), -EINVAL);
}

/* --stall-ms: a plain number is milliseconds, as its name says; with a unit, the duration grammar. */
Test(cli, stall_ms_takes_milliseconds_or_a_duration)
{
	static const struct { const char *in; double ms; } good[] = {
		{ "100", 100 }, { "50ms", 50 }, { "2s", 2000 }, { "1.5", 1.5 }, { "1m", 60000 },
	};
	static const char *const bad[] = { "0", "2x", "0.5ms", "2h", "ms", "-5" };
	struct cli_common c;
	char msg[256];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cli_common_init(&c);
		cr_expect_eq(cli_set_stall_ms(&c, good[i].in, msg, sizeof(msg)), 0, "'%s': %s", good[i].in, msg);
		cr_expect(fabs(c.stall_ms - good[i].ms) < 1e-9, "'%s' is %g ms, not %g", good[i].in, good[i].ms, c.stall_ms);
		cli_common_done(&c);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cli_common_init(&c);
		cr_expect_eq(cli_set_stall_ms(&c, bad[i], msg, sizeof(msg)), -1, "'%s' refused", bad[i]);
		cr_expect(strstr(msg, "--stall-ms"), "%s", msg);
		cli_common_done(&c);
	}
}

/* Every duration option of every command takes the one grammar: a run
 * that gets past the options (exit 4: the pid is gone; export: nothing to
 * do) shows that each form was accepted. */
Test(cli, every_duration_option_takes_every_form, .timeout = 60)
{
	static const struct { const char *cmd, *before; int rc; const char *says; } runs[] = {
		{ "top", "-p 4194000", 4, "no process 4194000" },
		{ "list", "-p 4194000", 4, "no process 4194000" },
		{ "export", "-p 4194000", 2, "nothing to do" },
		{ "serve", "-p 4194000 --flight-recorder /nonexistent/fr", 4, "no process 4194000" },
		{ "check", "-p 4194000 --duration 1 --wait-for-workers 1 'idle_pct>=1'", 4, "no process 4194000" },
		{ "profile", "-p 4194000", 4, "no process 4194000" },
		{ "record", "-o /dev/null -p 4194000 --ring 10s", 4, "no process 4194000" },
		{ "report", "/nonexistent/x.rec --around 1", 2, "open(/nonexistent/x.rec)" },
	};
	/* options that take a time, by name: a new one must be a DURATION too */
	static const char *const timed[] = { "duration", "delay", "warmup", "max-duration", "timeout", "lock-wait", "max-age",
	                                     "window", "interval", "ring", "after", "cooldown", "span" };
	static const char *const forms[] = { "2", "1.5", "30s", "2m" };
	size_t tried = 0;
	for (size_t c = 0; c < cli_ncommands; c++) {
		const struct cli_command *cmd = cli_commands[c];
		for (const struct cli_option *o = cmd->options; o->long_name; o++) {
			int is_timed = 0;
			for (size_t t = 0; t < sizeof(timed) / sizeof(timed[0]); t++)
				is_timed |= strcmp(o->long_name, timed[t]) == 0;
			cr_expect(is_timed == (o->arg && strcmp(o->arg, "DURATION") == 0), "%s --%s: arg %s", cmd->name,
				  o->long_name, o->arg ? o->arg : "(none)");
			if (!is_timed)
				continue;
			size_t r = 0;
			while (r < sizeof(runs) / sizeof(runs[0]) && strcmp(runs[r].cmd, cmd->name))
				r++;
			cr_assert(r < sizeof(runs) / sizeof(runs[0]), "no run for %s", cmd->name);
			for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
				char args[256], *out;
				snprintf(args, sizeof(args), "%s %s --%s %s", cmd->name, runs[r].before, o->long_name, forms[f]);
				int rc = sh_loopstat(args, "2>&1 >/dev/null", &out);
				cr_expect_eq(rc, runs[r].rc, "'%s': exit %d: %s", args, rc, out);
				cr_expect(strstr(out, runs[r].says), "'%s': %s", args, out);
				expect_prefixed(cmd->name, args, out);
				free(out);
				tried++;
			}
		}
	}
	cr_expect_geq(tried, 4 * 12, "every duration option was tried: %zu runs", tried);
}

Test(cli, lost_output_is_reported_and_fails)
{
	static const char *const cmds[] = { "--help", "--version", "gc", "list --duration 0.1", "list --help" };
	static const char *const redirs[] = { "2>&1 >/dev/full", "2>&1 >&-" };
	char *dir = ts_tmpdir("cli");
	setenv("LOOPSTAT_SHM_DIR", dir, 1);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		for (size_t r = 0; r < 2; r++) {
			char *out;
			int rc = sh_loopstat(cmds[i], redirs[r], &out);
			/* list finds nothing (4), but a lost report is a failure first */
			cr_assert_eq(rc, 1, "'%s %s': exit %d, %s", cmds[i], redirs[r], rc, out);
			cr_assert(strstr(out, "writing the output: "), "'%s %s': %s", cmds[i], redirs[r], out);
			if (cmds[i][0] != '-')
				expect_prefixed(cmds[i][0] == 'g' ? "gc" : "list", cmds[i], out);
			free(out);
		}
	unsetenv("LOOPSTAT_SHM_DIR");
	ts_rmtree_free(dir);
}

/* roff spells '-' as "\-" */
static void roff(const char *s, char *out, size_t len)
{
	size_t j = 0;
	for (; *s && j + 3 < len; s++) {
		if (*s == '-')
			out[j++] = '\\';
		out[j++] = *s;
	}
	out[j] = '\0';
}

Test(cli, man_page_follows_the_command_and_exit_tables)
{
	char *man = ts_read_file("docs/loopstat.1");
	for (size_t i = 0; i < cli_ncommands; i++) {
		char ss[64];
		snprintf(ss, sizeof(ss), "\n.SS %s\n", cli_commands[i]->name);
		const char *sec = strstr(man, ss);
		cr_assert(sec, "loopstat(1) has no section for %s", cli_commands[i]->name);
		const char *end = strstr(sec + 1, "\n.S");
		size_t seclen = end ? (size_t)(end - sec) : strlen(sec);
		for (const struct cli_option *o = cli_commands[i]->options; o->long_name; o++) {
			char opt[64], r[128];
			snprintf(opt, sizeof(opt), "--%s", o->long_name);
			roff(opt, r, sizeof(r));
			cr_assert(memmem(sec, seclen, r, strlen(r)), "loopstat(1) %s lacks %s", cli_commands[i]->name, opt);
		}
	}
	for (int i = 0; i < exit_ncodes; i++) {
		char row[256];
		snprintf(row, sizeof(row), ".TP\n.B %d\n%s\n", exit_codes[i].code, exit_codes[i].desc);
		cr_assert(strstr(man, row), "loopstat(1) lacks exit status %d: %s", exit_codes[i].code, row);
	}
	free(man);
}

Test(cli, a_missing_directory_is_an_error_not_zero_workers)
{
	static const char *const envs[] = { "LOOPSTAT_SHM_DIR=/nonexistent/shm", "LOOPSTAT_PROC_ROOT=/nonexistent/proc" };
	for (size_t i = 0; i < 2; i++) {
		char args[128], *out;
		snprintf(args, sizeof(args), "list --duration 0.1 2>&1");
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "%s exec \"%s\" %s", envs[i], ts_loopstat_bin(), args);
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };
		int rc = ts_run(argv, &out, 20000);
		cr_assert_eq(rc, 2, "%s: exit %d, %s", envs[i], rc, out);
		cr_assert(strstr(out, "opendir(/nonexistent/"), "%s: %s", envs[i], out);
		free(out);
	}
}
