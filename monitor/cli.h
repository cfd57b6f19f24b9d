/*
 * cli.h — the command table and option parsing every command shares.
 *
 * Each command is one row {name, summary, options, run} (as git's
 * commands[]) and lives in cmd_<name>.c with its own option table; its
 * `--help`, main's usage and loopstat(1) are made from those tables, and
 * options a command does not list are usage errors there.
 */
#ifndef LOOPSTAT_CLI_H
#define LOOPSTAT_CLI_H

#include <stddef.h>

#include "exitcodes.h"
#include "collect/targets.h"

/* What the sampling commands share; every command's context starts with it. */
struct cli_common {
	struct targets targets;
	int    name_given;           /* -n seen: a second one is an error */
	double rate_hz;              /* 0: the sampler's default */
	double duration_s;
	int    json;
	size_t max_workers;          /* 0: the sampler's default */
};

/*
 * One option: short letter (0: none), long name, argument name (NULL for a
 * flag), help line, and the setter. A setter returns 0, or -1 after writing
 * why into msg.
 */
struct cli_option {
	int         short_name;
	const char *long_name;
	const char *arg;
	const char *help;
	int (*set)(void *ctx, const char *arg, char *msg, size_t len);
};

struct cli_command {
	const char *name;
	const char *summary;                  /* one line, for main's usage */
	const char *usage;                    /* "[OPTIONS]" etc., after the name */
	const char *about;                    /* a paragraph for --help, or NULL */
	const struct cli_option *options;     /* ends with a { 0 } row */
	int (*run)(int argc, char **argv);    /* argv[0] is the command's name */
	/* takes each positional argument, in order (report's FILE, check's thresholds); NULL: they are refused */
	int (*operand)(void *ctx, const char *arg, char *msg, size_t len);
	int no_sources;                       /* reads neither /proc nor the segment directory (report) */
};

/* The command table (commands.c): every cmd_<name>.c defines one row. */
extern const struct cli_command *const cli_commands[];
extern const size_t cli_ncommands;
extern const struct cli_command cmd_top, cmd_list, cmd_export, cmd_check, cmd_gc, cmd_profile, cmd_record, cmd_report;

/* The row named name, NULL if none. */
const struct cli_command *cli_find_command(const char *name);

/* The shared option rows (each works on a struct cli_common at ctx). */
#define CLI_OPT_PID      { 'p', "pid", "PID[,PID...]", "only these processes (uninstrumented ones too: every thread is sampled)", cli_set_pid }
#define CLI_OPT_NAME     { 'n', "name", "REGEX", "only processes whose name matches the extended regex", cli_set_name }
#define CLI_OPT_RATE     { 'r', "rate", "HZ", "samples per second per thread (1 to 10000, default 100)", cli_set_rate }
#define CLI_OPT_MAX_WORKERS { 0, "max-workers", "N", "sample at most N threads, counting the rest as ignored (default 4096)", cli_set_max_workers }
#define CLI_OPT_JSON     { 'j', "json", NULL, "JSON output", cli_set_json }
int cli_set_pid(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_name(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_rate(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_json(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_max_workers(void *ctx, const char *arg, char *msg, size_t len);

void cli_common_init(struct cli_common *c);
void cli_common_done(struct cli_common *c);

/*
 * Parses argv against cmd's options into ctx. Returns -1 to go on, or an
 * exit code: 0 after --help (printed), EXIT_USAGE after a message.
 * Positional arguments go to cmd->operand, or are refused without one.
 */
int cli_parse(const struct cli_command *cmd, int argc, char **argv, void *ctx);

/* "loopstat: <message>" and a hint, on stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A plain decimal number (digits, one optional point; no sign, no space,
 * no hex, no exponent) in [lo, hi]. Returns 0 or -EINVAL. */
int cli_parse_number(const char *arg, double lo, double hi, double *out);

/* Prints cmd's --help to stdout. */
void cli_print_help(const struct cli_command *cmd);

struct model;

/* Says on stderr, one line each, which processes refused us and how to fix
 * it. Returns EXIT_ACCESS when every process sampled refused us (nothing
 * could be measured), else -1. */
int cli_report_refused(const struct model *m);

/* Flushes stdout and reports a failed write (ENOSPC on /dev/full, EPIPE...)
 * with its cause. Returns rc, or EXIT_FAIL when the output was lost. */
int cli_finish_output(int rc);

#endif /* LOOPSTAT_CLI_H */
