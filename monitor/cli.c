/*
 * cli.c — option parsing from a command's option table, the shared
 * options, strict numbers, and output errors.
 */
#include "cli.h"
#include "probe_proc.h"
#include "probe_shm.h"
#include "model/model.h"
#include "util/textsafe.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_OPTIONS 32

const struct exit_code_info exit_codes[] = {
#define EXIT_X_INFO(name, code, desc) { code, #name, desc },
	EXIT_CODES(EXIT_X_INFO)
#undef EXIT_X_INFO
};
const int exit_ncodes = sizeof(exit_codes) / sizeof(exit_codes[0]);

void cli_common_init(struct cli_common *c)
{
	memset(c, 0, sizeof(*c));
	targets_init(&c->targets);
	c->duration_s = 2.0;
}

void cli_common_done(struct cli_common *c)
{
	targets_done(&c->targets);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("loopstat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry 'loopstat %s%s--help'\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

int cli_parse_number(const char *arg, double lo, double hi, double *out)
{
	int digits = 0, points = 0;
	for (const char *p = arg; *p; p++) {
		if (*p >= '0' && *p <= '9')
			digits++;
		else if (*p == '.' && !points)
			points++;
		else
			return -EINVAL;
	}
	if (!digits)
		return -EINVAL;
	errno = 0;
	double v = strtod(arg, NULL);
	if (errno || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

int cli_set_pid(void *ctx, const char *arg, char *msg, size_t len)
{
	struct cli_common *c = ctx;
	return targets_add_pids(&c->targets, arg, msg, len) < 0 ? -1 : 0;
}

int cli_set_name(void *ctx, const char *arg, char *msg, size_t len)
{
	struct cli_common *c = ctx;
	if (c->name_given) {
		snprintf(msg, len, "-n given twice: combine the patterns into one regex ('a|b')");
		return -1;
	}
	c->name_given = 1;
	return targets_set_regex(&c->targets, arg, msg, len) < 0 ? -1 : 0;
}

int cli_set_rate(void *ctx, const char *arg, char *msg, size_t len)
{
	struct cli_common *c = ctx;
	if (cli_parse_number(arg, 1, 10000, &c->rate_hz) == 0)
		return 0;
	snprintf(msg, len, "invalid rate '%s': expected 1 to 10000 Hz", arg);
	return -1;
}

int cli_set_json(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct cli_common *)ctx)->json = 1;
	return 0;
}

int cli_set_max_workers(void *ctx, const char *arg, char *msg, size_t len)
{
	struct cli_common *c = ctx;
	double v;
	if (cli_parse_number(arg, 1, 1 << 20, &v) == 0 && v == (double)(size_t)v) {
		c->max_workers = (size_t)v;
		return 0;
	}
	snprintf(msg, len, "invalid --max-workers '%s': expected a whole number from 1 to %d", arg, 1 << 20);
	return -1;
}

static const struct cli_option help_option = { 'h', "help", NULL, "this help", NULL };

void cli_print_help(const struct cli_command *cmd)
{
	printf("usage: loopstat %s %s\n\n%s\n", cmd->name, cmd->usage, cmd->summary);
	if (cmd->about)
		printf("\n%s\n", cmd->about);
	printf("\noptions:\n");
	for (const struct cli_option *o = cmd->options;; o++) {
		if (!o->long_name)
			o = &help_option;
		char left[64];
		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", o->short_name, o->long_name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->long_name, o->arg ? " " : "", o->arg ? o->arg : "");
		printf("  %-26s %s\n", left, o->help);
		if (o == &help_option)
			break;
	}
	printf("\nexit status: see 'loopstat --help' or loopstat(1)\n");
}

/* The row of an option getopt returned, NULL for --help. */
static const struct cli_option *row_of(const struct cli_command *cmd, int val)
{
	for (const struct cli_option *o = cmd->options; o->long_name; o++)
		if (o->short_name ? o->short_name == val : 256 + (o - cmd->options) == val)
			return o;
	return NULL;
}

/* A segment directory or proc root that is missing or unreadable would
 * only ever show "0 workers": it is a configuration error, said as such. */
static int check_sources(void)
{
	const struct { const char *env, *path; } dirs[] = {
		{ "LOOPSTAT_SHM_DIR", probe_shm_dir() }, { PROBE_PROC_ROOT_ENV, probe_proc_root() },
	};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *d = opendir(dirs[i].path);
		if (!d) {
			fprintf(stderr, "loopstat: opendir(%s): %s (%s)\n", dirs[i].path, strerror(errno),
				getenv(dirs[i].env) ? dirs[i].env : "the default");
			return EXIT_USAGE;
		}
		closedir(d);
	}
	return -1;
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv, void *ctx)
{
	struct option longs[CLI_MAX_OPTIONS + 2];
	char shorts[3 * CLI_MAX_OPTIONS + 4] = ":h";
	size_t ns = strlen(shorts), nl = 0;
	for (const struct cli_option *o = cmd->options; o->long_name && nl < CLI_MAX_OPTIONS; o++) {
		int val = o->short_name ? o->short_name : 256 + (int)(o - cmd->options);
		longs[nl++] = (struct option){ o->long_name, o->arg ? required_argument : no_argument, NULL, val };
		if (o->short_name) {
			shorts[ns++] = (char)o->short_name;
			if (o->arg)
				shorts[ns++] = ':';
		}
	}
	longs[nl++] = (struct option){ "help", no_argument, NULL, 'h' };
	longs[nl] = (struct option){ 0 };
	shorts[ns] = '\0';

	char msg[256];
	int opt;
	optind = 0;   /* a full reset: main may have parsed before */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		if (opt == 'h') {
			cli_print_help(cmd);
			return cli_finish_output(EXIT_OK);
		}
		if (opt == ':')
			return cli_usage_error(cmd->name, "option '%s' needs an argument", argv[optind - 1]);
		const struct cli_option *o = row_of(cmd, opt);
		if (opt == '?' || !o)
			return cli_usage_error(cmd->name, "%s does not take the option '%s'", cmd->name, argv[optind - 1]);
		msg[0] = '\0';
		if (o->set(ctx, optarg, msg, sizeof(msg)) < 0)
			return cli_usage_error(cmd->name, "%s", msg);
	}
	for (; optind < argc && cmd->operand; optind++) {
		msg[0] = '\0';
		if (cmd->operand(ctx, argv[optind], msg, sizeof(msg)) < 0)
			return cli_usage_error(cmd->name, "%s", msg);
	}
	if (optind < argc)
		return cli_usage_error(cmd->name, "unexpected argument '%s'", argv[optind]);
	return cmd->no_sources ? -1 : check_sources();
}

int cli_report_refused(const struct model *m)
{
	if (m->ignored)
		fprintf(stderr, "loopstat: %u threads not sampled: more than --max-workers %zu\n", m->ignored,
			m->max_workers);
	for (unsigned i = 0; i < m->nrefused && i < MODEL_REFUSED; i++)
		fprintf(stderr, "loopstat: access refused: %s\n", m->refused[i].text);
	if (m->nrefused > MODEL_REFUSED)
		fprintf(stderr, "loopstat: access refused to %u more processes\n", m->nrefused - MODEL_REFUSED);
	return m->nrefused && m->n == 0 && m->naccessible == 0 ? EXIT_ACCESS : -1;
}

int cli_finish_output(int rc)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	fprintf(stderr, "loopstat: writing the output: %s\n", errno ? strerror(errno) : "write error");
	return rc == EXIT_OK ? EXIT_FAIL : rc;
}
