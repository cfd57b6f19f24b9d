/*
 * main.c — loopstat's command line: the global options (--help, --version)
 * and the dispatch through the command table (commands.c). Each command
 * parses its own options (cmd_<name>.c); exit codes come from the one
 * table in exitcodes.h.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli.h"

static void print_usage(void)
{
	printf("usage: loopstat [COMMAND] [OPTIONS]\n"
	       "\n"
	       "Shows how close event-loop workers are to capacity.\n"
	       "\n"
	       "commands:\n");
	for (size_t i = 0; i < cli_ncommands; i++)
		printf("  %-10s %s\n", cli_commands[i]->name, cli_commands[i]->summary);
	printf("\n'loopstat COMMAND --help' lists a command's options.\n"
	       "\n"
	       "options:\n"
	       "  -h, --help     this help\n"
	       "  -V, --version  version\n"
	       "\n"
	       "exit status:\n");
	for (int i = 0; i < exit_ncodes; i++)
		printf("  %-3d %s\n", exit_codes[i].code, exit_codes[i].desc);
	printf("\n"
	       "environment:\n"
	       "  LOOPSTAT_SHM_DIR    segment directory (default /dev/shm)\n"
	       "  LOOPSTAT_PROC_ROOT  proc root (default /proc)\n"
	       "  LOOPSTAT_SYS_ROOT   cgroup filesystem (default /sys/fs/cgroup)\n"
	       "  LOOPSTAT_DISCOVER   'instrumented': --instrumented is the default (no sweep of the host)\n"
	       "  LOOPSTAT_SOURCE     auto|bpf|proc: --source's default (default auto)\n"
	       "  LOOPSTAT_BPF_RAW    set: the bpf source runs its syscall programs at every syscall\n"
	       "                      (as without CAP_SYS_ADMIN), not on the poll family's own tracepoints\n"
	       "  LOOPSTAT_SERIES_BUDGET  series one /metrics or textfile exposition may hold (default 10000)\n"
	       "  LOOPSTAT_STALL_SYMBOLS_MS  time a stall's capture may spend naming its frames' symbols (default\n"
	       "                      5): the rest are module+offset until a later capture names them\n"
	       "  NO_COLOR            top: no colours\n");
}

/* Each sampled thread holds two /proc files open: a large -p target must
 * not run out of descriptors at the default soft limit. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	raise_fd_limit();
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		print_usage();
		return cli_finish_output(EXIT_OK);
	}
	if (argc > 1 && (strcmp(argv[1], "-V") == 0 || strcmp(argv[1], "--version") == 0)) {
		printf("loopstat %s\n", LOOPSTAT_VERSION);
		return cli_finish_output(EXIT_OK);
	}
	/* a bare `loopstat` on a terminal is the dashboard; in a pipe, the list */
	const struct cli_command *cmd = isatty(STDOUT_FILENO) ? &cmd_top : &cmd_list;
	if (argc > 1 && argv[1][0] != '-') {
		if (!(cmd = cli_find_command(argv[1])))
			return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
		argc--;
		argv++;
	}
	return cmd->run(argc, argv);
}
