/*
 * commands.c — the command table: one row per command, in the order main's
 * usage and loopstat(1) list them.
 */
#include "cli.h"

#include <string.h>

const struct cli_command *const cli_commands[] = { &cmd_top, &cmd_list, &cmd_export, &cmd_check, &cmd_profile, &cmd_record,
						   &cmd_report, &cmd_gc };
const size_t cli_ncommands = sizeof(cli_commands) / sizeof(cli_commands[0]);

const struct cli_command *cli_find_command(const char *name)
{
	for (size_t i = 0; i < cli_ncommands; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}
