/* The command table: each command's --help, options refused where they do not apply, strict numbers, lost output reported, and loopstat(1) kept in step with the tables. */
#include <criterion/criterion.h>
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

Test(cli, usage_errors_exit_2_with_a_message)
{
	static const char *const bad[] = {
		"frobnicate",                 /* unknown command */
		"gc --json", "gc -p 1",       /* options that do not apply */
		"list --duration 0x10", "list --duration ' 1'", "list --duration 1e1", "list -r +5",
		"list -p ' 1'", "list -p +1", "list -p '1 '", "list -p 1,,2", "list -p 0",
		"list -n a -n b",             /* a second -n would silently replace the first */
		"list extra", "top -d 0", "list --duration",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *out;
		int rc = sh_loopstat(bad[i], "2>&1", &out);
		cr_assert_eq(rc, 2, "'%s': exit %d, %s", bad[i], rc, out);
		cr_assert(strstr(out, "loopstat: "), "'%s' says why: %s", bad[i], out);
		free(out);
	}
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
			cr_assert_eq(rc, 1, "'%s %s': exit %d, %s", cmds[i], redirs[r], rc, out);
			cr_assert(strstr(out, "loopstat: writing the output: "), "'%s %s': %s", cmds[i], redirs[r], out);
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
