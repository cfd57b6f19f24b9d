/*
 * commands.c — the command table: one row per name of CLI_COMMANDS
 * (cli.h), in its order, which main's usage and loopstat(1) follow.
 */
#include "cli.h"

#include <string.h>

#define CLI_X_ROW(name) &cmd_##name,
const struct cli_command *const cli_commands[] = { CLI_COMMANDS(CLI_X_ROW) };
#undef CLI_X_ROW
const size_t cli_ncommands = sizeof(cli_commands) / sizeof(cli_commands[0]);

const struct cli_command *cli_find_command(const char *name)
{
	for (size_t i = 0; i < cli_ncommands; i++)
		if (strcmp(cli_commands[i]->name, name) == 0)
			return cli_commands[i];
	return NULL;
}
