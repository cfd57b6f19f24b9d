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
#include <stdint.h>
#include <stdio.h>

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
	double stall_ms;             /* the stall threshold, ms; 0: the sampler's default */
	double precision_pts;        /* sampler_opts.precision_pts: 0 the default, < 0 every thread at the rate */
	int    source;               /* --source: enum sampler_source (collect/sampler.h); in a command that
	                              * takes --source LOOPSTAT_SOURCE or auto (cli_parse), else proc */
	int    source_given;         /* --source on the command line: export's config file yields to it */
	const char *replay;          /* --replay FILE: a recording instead of sampling (borrowed from argv) */
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

/*
 * The command names, once, in the order main's usage and loopstat(1) list
 * them: every cmd_<name>.c defines the row cmd_<name>, and both these
 * declarations and the table (commands.c) are made from this list.
 */
#define CLI_COMMANDS(X) X(top) X(list) X(export) X(serve) X(check) X(profile) X(record) X(report) X(diff) X(gc)

#define CLI_X_DECLARE(name) extern const struct cli_command cmd_##name;
CLI_COMMANDS(CLI_X_DECLARE)
#undef CLI_X_DECLARE

/* The command table (commands.c). */
extern const struct cli_command *const cli_commands[];
extern const size_t cli_ncommands;

/* The row named name, NULL if none. */
const struct cli_command *cli_find_command(const char *name);

/* The shared option rows (each works on a struct cli_common at ctx). */
#define CLI_OPT_PID      { 'p', "pid", "PID[,PID...]", "only these processes (uninstrumented ones too: every thread is sampled)", cli_set_pid }
#define CLI_OPT_NAME     { 'n', "name", "REGEX", "only processes whose name matches the extended regex", cli_set_name }
#define CLI_OPT_USER     { 'u', "user", "USER", "only processes of this user (name or uid)", cli_set_user }
#define CLI_OPT_SERVICE  { 's', "service", "REGEX", "only processes whose service (systemd unit, container, else name) matches", cli_set_service }
#define CLI_OPT_INSTRUMENTED { 0, "instrumented", NULL, "only workers that publish a segment: no sweep of the host's loops", cli_set_instrumented }
#define CLI_OPT_ALL      { 0, "all", NULL, "every loop: clients, interactive shells and helper loops too (default without -p or -n: servers)", cli_set_all }
/* Which processes: the six rows every sampling command takes, in this order. */
/* What the target options select, in every command's help that takes them. */
#define CLI_TARGETS_HELP "every server's event loop on the host (found by a sweep; --all: clients, shells and helper\n" \
			 "loops too; --instrumented: only the workers that publish a segment; -p, -n, -u, -s: those processes)"
#define CLI_OPT_TARGETS  CLI_OPT_PID, CLI_OPT_NAME, CLI_OPT_USER, CLI_OPT_SERVICE, CLI_OPT_INSTRUMENTED, CLI_OPT_ALL
#define CLI_OPT_RATE     { 'r', "rate", "HZ", "samples per second of a thread whose state changes (" CLI_RATE_RANGE ", default 100)", cli_set_rate }
#define CLI_OPT_PRECISION { 0, "precision", "PTS", "sample each thread as often as a +-PTS interval of its idle% over 10 s needs, " \
			   "at least 10 Hz (" CLI_PRECISION_RANGE ", default 2; 0: every thread at the rate)", cli_set_precision }
#define CLI_OPT_MAX_WORKERS { 0, "max-workers", "N", "sample at most N threads, counting the rest as ignored (default 4096)", cli_set_max_workers }
#define CLI_OPT_JSON     { 'j', "json", NULL, "JSON output", cli_set_json }
#define CLI_OPT_STALL_MS { 0, "stall-ms", "MS", "capture a worker out of its poll longer than MS ms (or 50ms, 2s): state, syscall, fd, stack, fiber (default 100)", cli_set_stall_ms }
#define CLI_OPT_REPLAY   { 0, "replay", "FILE", "read a recording (loopstat record) instead of sampling", cli_set_replay }
int cli_set_pid(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_name(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_rate(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_precision(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_user(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_service(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_instrumented(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_all(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_json(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_max_workers(void *ctx, const char *arg, char *msg, size_t len);
int cli_set_stall_ms(void *ctx, const char *arg, char *msg, size_t len);
#define CLI_OPT_SOURCE   { 0, "source", "auto|bpf|proc", "where figures come from: kernel tracepoints (bpf: root or CAP_BPF+CAP_PERFMON, " \
                           "kernel BTF) beside /proc samples, or the samples alone (default auto: bpf where it loads, else proc)", cli_set_source }
int cli_set_source(void *ctx, const char *arg, char *msg, size_t len);
/* sampler_new's failure under --source bpf, as an exit code after a message naming why. */
int cli_source_error(int err);
int cli_set_replay(void *ctx, const char *arg, char *msg, size_t len);

void cli_common_init(struct cli_common *c);
void cli_common_done(struct cli_common *c);

/*
 * Parses argv against cmd's options into ctx. Returns -1 to go on, or an
 * exit code: 0 after --help (printed), EXIT_USAGE after a message.
 * Positional arguments go to cmd->operand, or are refused without one.
 */
int cli_parse(const struct cli_command *cmd, int argc, char **argv, void *ctx);

/* "loopstat COMMAND: <message>" and a hint, on stderr (cmd NULL: before
 * a command was chosen, "loopstat: "); returns EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "loopstat COMMAND: <message>\n" on stderr, COMMAND the one cli_parse
 * parsed for: every message of a command, whichever file says it. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The command every message names (cli_parse sets it; a test that runs a
 * command's parts without parsing, too). */
void cli_set_command(const char *name);

/* The same on f (a command's log stream: export's run, a test's memstream). */
void cli_log(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A size in bytes: "4096", "512K", "64M", "1G" (an optional B); -1 if
 * malformed. export's config and record's --max-bytes read sizes so. */
int64_t cli_parse_size(const char *s);

/* A plain decimal number (digits, one optional point; no sign, no space,
 * no hex, no exponent) in [lo, hi]. Returns 0 or -EINVAL. */
int cli_parse_number(const char *arg, double lo, double hi, double *out);

/*
 * The one duration grammar of every command's options and check's
 * thresholds: a plain decimal number of seconds, or one with a unit: ns,
 * us, ms, s, m, h, d ("2", "1.5", "30s", "2m", "500ms"). In [lo, hi]
 * seconds. Returns 0 or -EINVAL. (--stall-ms alone reads a plain number
 * as milliseconds, as its name says.)
 */
int cli_parse_duration(const char *arg, double lo, double hi, double *out);
/* Seconds per unit u (len bytes, not NUL-terminated) of that grammar:
 * ns, us, ms, s, m, h, d; NaN when u is none of them. check's thresholds
 * read times with the same units. */
double cli_duration_unit(const char *u, size_t len);
#define CLI_DURATION_UNITS "ns, us, ms, s, m, h or d"

/* The same, with the message of a refusal in msg ("invalid WHAT 'ARG':
 * expected ..."). Returns 0 or -1, as an option setter does. */
int cli_set_duration(const char *what, const char *arg, double lo, double hi, double *out, char *msg, size_t len);

/* The one sampling-rate range, for every command and export's config file. */
#define CLI_RATE_MIN   1
#define CLI_RATE_MAX   10000
#define CLI_RATE_RANGE "1 to 10000"
#define CLI_PRECISION_RANGE "0 to 50"
#define CLI_PRECISION_MAX 50
/* A rate in Hz within that range; 0 or -1 with msg filled. */
int cli_parse_rate(const char *arg, double *out, char *msg, size_t len);
/* A target half-width in points within CLI_PRECISION_RANGE, as
 * sampler_opts.precision_pts takes it (0 becomes -1: off); 0 or -1 with
 * msg filled. */
int cli_parse_precision(const char *arg, double *out, char *msg, size_t len);

/* Prints cmd's --help to stdout. */
void cli_print_help(const struct cli_command *cmd);

struct model;
struct feed;
struct feed_opts;

/*
 * The one place a command's common options become its feed (model/feed.h):
 * c's targets, rate, precision, worker cap, stall threshold and --replay,
 * with what only the command knows in how (pacing, kept seconds, hooks;
 * its option fields are ignored; may be NULL). Returns -1 with *out open,
 * or an exit code after a message (a recording that cannot be read, a
 * sampler that cannot start).
 */
int cli_feed_open(const struct cli_common *c, const struct feed_opts *how, struct feed **out);

/*
 * Says on stderr which -p targets cannot be measured: gone, or kernel
 * threads. Returns EXIT_NOTHING when none of them can and no -n may find
 * another, else -1 (sampling goes on with the rest).
 */
int cli_check_pids(const struct targets *t);

/* Says on stderr, with the fix, which -p targets refuse us. Returns
 * EXIT_ACCESS when all of them do and no -n may find another, else -1.
 * For the commands that would otherwise only find out after sampling
 * (top; profile's one target). */
int cli_check_access(const struct targets *t);

/* Why nothing was found to measure, for "no worker to measure: <why>":
 * with no -p or -n, how many segments could not be read and what to do. */
void cli_no_worker_why(const struct targets *t, char *buf, size_t len);

/* Says on stderr, one line each, which processes refused us and how to fix
 * it. Returns EXIT_ACCESS when every process sampled refused us (nothing
 * could be measured), else -1. */
int cli_report_refused(const struct model *m);

/* The exit code of a sampling run that showed m: cli_report_refused's, or
 * EXIT_NOTHING (said, with cli_no_worker_why) when m has no worker, or
 * EXIT_OK. list and export end the same way. */
int cli_model_verdict(const struct model *m, const struct targets *t);

/* Flushes stdout and reports a failed write (ENOSPC on /dev/full, EPIPE...)
 * with its cause. Returns rc, or EXIT_FAIL when the output was lost: a
 * lost report is a failure whatever the run found. */
int cli_finish_output(int rc);

/* The same for a report file f at path; write_err is a -errno the writer
 * saw first (0: none; its cause beats fclose's). 0, or -errno after
 * "loopstat COMMAND: writing PATH: <cause>". Closes f. */
int cli_close_output(FILE *f, const char *path, int write_err);

#endif /* LOOPSTAT_CLI_H */
