/*
 * cli.c — option parsing from a command's option table, the shared
 * options, strict numbers and durations, the messages every command
 * prefixes with its name, and how a run ends: nothing found, refused,
 * output lost.
 */
#include "cli.h"
#include "probe_access.h"
#include "probe_proc.h"
#include "probe_shm.h"
#include "probe_stat.h"
#include "probe_syscall.h"
#include "collect/sampler.h"
#include "collect/recording.h"
#include "collect/replay.h"
#include "model/feed.h"
#include "model/model.h"
#include "util/textsafe.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* The command being run: every message says it first. */
static const char *current;

void cli_set_command(const char *name) { current = name; }

static void vlog(FILE *f, const char *fmt, va_list ap)
{
	fprintf(f, "loopstat%s%s: ", current ? " " : "", current ? current : "");
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(stderr, fmt, ap);
	va_end(ap);
}

void cli_log(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(f, fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "loopstat%s%s: ", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\ntry 'loopstat %s%s--help'\n", cmd ? cmd : "", cmd ? " " : "");
	return EXIT_USAGE;
}

int64_t cli_parse_size(const char *s)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || errno || v < 0)
		return -1;
	int shift = 0;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (INT64_MAX >> shift))
		return -1;
	return (int64_t)v << shift;
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

/* The one duration grammar's units, smallest first (CLI_DURATION_UNITS). */
static const struct { const char *name; double mul; } duration_units[] = {
	{ "ns", 1e-9 }, { "us", 1e-6 }, { "ms", 1e-3 }, { "s", 1 }, { "m", 60 }, { "h", 3600 }, { "d", 86400 },
};
#define UNIT_S 3   /* duration_units[UNIT_S] is the second */

double cli_duration_unit(const char *u, size_t len)
{
	for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++)
		if (strlen(duration_units[i].name) == len && strncmp(u, duration_units[i].name, len) == 0)
			return duration_units[i].mul;
	return NAN;
}

int cli_parse_duration(const char *arg, double lo, double hi, double *out)
{
	size_t n = strspn(arg, "0123456789.");
	double mul = arg[n] ? cli_duration_unit(arg + n, strlen(arg + n)) : 1;
	if (isnan(mul))
		return -EINVAL;
	char num[32];
	double v;
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, arg, n);
	num[n] = '\0';
	if (cli_parse_number(num, 0, INFINITY, &v) < 0 || !(v * mul >= lo && v * mul <= hi))
		return -EINVAL;
	*out = v * mul;
	return 0;
}

/* A bound in the largest unit that writes it whole: "0.05s", "1d". */
static const char *duration_text(double s, char *buf, size_t len)
{
	size_t i = sizeof(duration_units) / sizeof(duration_units[0]);
	while (--i > UNIT_S && !(s >= duration_units[i].mul && fmod(s, duration_units[i].mul) == 0))
		;
	snprintf(buf, len, "%g%s", s / duration_units[i].mul, duration_units[i].name);
	return buf;
}

int cli_set_duration(const char *what, const char *arg, double lo, double hi, double *out, char *msg, size_t len)
{
	if (cli_parse_duration(arg, lo, hi, out) == 0)
		return 0;
	char a[32], b[32];
	snprintf(msg, len, "invalid %s '%s': expected %s to %s, in seconds or with a unit (2, 1.5, 30s, 2m)", what,
		 arg, duration_text(lo, a, sizeof(a)), duration_text(hi, b, sizeof(b)));
	return -1;
}

int cli_parse_rate(const char *arg, double *out, char *msg, size_t len)
{
	if (cli_parse_number(arg, CLI_RATE_MIN, CLI_RATE_MAX, out) == 0)
		return 0;
	snprintf(msg, len, "invalid rate '%s': expected " CLI_RATE_RANGE " Hz", arg);
	return -1;
}

int cli_parse_precision(const char *arg, double *out, char *msg, size_t len)
{
	double v;
	if (cli_parse_number(arg, 0, CLI_PRECISION_MAX, &v) == 0) {
		*out = v > 0 ? v : -1;
		return 0;
	}
	snprintf(msg, len, "invalid precision '%s': expected " CLI_PRECISION_RANGE " points", arg);
	return -1;
}

int cli_set_precision(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_parse_precision(arg, &((struct cli_common *)ctx)->precision_pts, msg, len);
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

int cli_set_user(void *ctx, const char *arg, char *msg, size_t len)
{
	return targets_set_user(&((struct cli_common *)ctx)->targets, arg, msg, len) < 0 ? -1 : 0;
}

int cli_set_service(void *ctx, const char *arg, char *msg, size_t len)
{
	return targets_set_service(&((struct cli_common *)ctx)->targets, arg, msg, len) < 0 ? -1 : 0;
}

int cli_set_instrumented(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct cli_common *)ctx)->targets.instrumented_only = 1;
	return 0;
}

int cli_set_all(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct cli_common *)ctx)->targets.all_roles = 1;
	return 0;
}

int cli_set_rate(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_parse_rate(arg, &((struct cli_common *)ctx)->rate_hz, msg, len);
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

int cli_set_stall_ms(void *ctx, const char *arg, char *msg, size_t len)
{
	struct cli_common *c = ctx;
	double s;
	/* a plain number is milliseconds, as the option's name says; else the duration grammar */
	if (cli_parse_number(arg, 1, 3600000, &c->stall_ms) == 0)
		return 0;
	if (arg[strspn(arg, "0123456789.")] && cli_parse_duration(arg, 0.001, 3600, &s) == 0) {
		c->stall_ms = s * 1000;
		return 0;
	}
	snprintf(msg, len, "invalid --stall-ms '%s': expected 1 to 3600000 ms, or a duration from 1ms to 1h (50ms, 2s)",
		 arg);
	return -1;
}

int cli_set_source(void *ctx, const char *arg, char *msg, size_t len)
{
	static const int kinds[] = { SAMPLER_SOURCE_AUTO, SAMPLER_SOURCE_BPF, SAMPLER_SOURCE_PROC };
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(arg, sampler_source_name(kinds[i])) == 0) {
			((struct cli_common *)ctx)->source = kinds[i];
			((struct cli_common *)ctx)->source_given = 1;
			return 0;
		}
	snprintf(msg, len, "invalid --source '%s': expected auto, bpf or proc", arg);
	return -1;
}

int cli_source_error(int err)
{
	cli_error("--source bpf: %s", sampler_source_why()[0] ? sampler_source_why() : strerror(-err));
	return err == -EPERM || err == -EACCES ? EXIT_ACCESS : EXIT_FAIL;
}

int cli_set_replay(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	((struct cli_common *)ctx)->replay = arg;
	return 0;
}

int cli_feed_open(const struct cli_common *c, const struct feed_opts *how, struct feed **out)
{
	struct feed_opts o = how ? *how : (struct feed_opts){ 0 };
	o.targets = &c->targets;
	o.rate_hz = c->rate_hz;
	o.precision_pts = c->precision_pts;
	o.max_workers = c->max_workers;
	o.stall_ms = c->stall_ms;
	o.replay = c->replay;
	o.source = c->source;
	long line = 0;
	int err = feed_open(&o, out, &line);
	if (err == 0)
		return -1;
	if (!c->replay && c->source == SAMPLER_SOURCE_BPF && sampler_source_why()[0])
		return cli_source_error(err);
	if (!c->replay) {
		cli_error("starting the sampler: %s", strerror(-err));
		return err == -EACCES || err == -EPERM ? EXIT_ACCESS : EXIT_FAIL;
	}
	if (rec_format_error(err)) {
		cli_error("%s:%ld: %s", c->replay, line, rec_format_error(err));
		return EXIT_USAGE;
	}
	if (err == -E2BIG) {
		cli_error("%s:%ld: past what a replay reads (lines of %d bytes, %u strings, %d threads, samples "
			  "within %d s, %u thread-seconds; 'loopstat report' takes more): refused", c->replay, line,
			  REC_MAX_LINE, REC_MAX_STRINGS, REPLAY_MAX_THREADS, REPLAY_MAX_SPAN_S, REPLAY_MAX_THREAD_S);
		return EXIT_USAGE;
	}
	if (err != -ENOMEM && err != -EIO) {   /* fopen's */
		cli_error("open(%s): %s", c->replay, strerror(-err));
		return err == -ENOENT ? EXIT_USAGE : EXIT_FAIL;
	}
	cli_error("reading %s: %s", c->replay, strerror(-err));
	return EXIT_FAIL;
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
			cli_error("opendir(%s): %s (%s)", dirs[i].path, strerror(errno),
				  getenv(dirs[i].env) ? dirs[i].env : "the default");
			return EXIT_USAGE;
		}
		closedir(d);
	}
	return -1;
}

static int row_of_setter(const struct cli_command *cmd, int (*set)(void *, const char *, char *, size_t))
{
	for (const struct cli_option *o = cmd->options; o->long_name; o++)
		if (o->set == set)
			return 1;
	return 0;
}

/* --source's default: LOOPSTAT_SOURCE where set (the suites pin proc: they
 * judge the sampler unless they say --source), else auto. 0, or -1 after
 * writing why into msg. */
static int default_source(struct cli_common *c, char *msg, size_t len)
{
	const char *env = getenv("LOOPSTAT_SOURCE");
	if (!env || !*env) {
		c->source = SAMPLER_SOURCE_AUTO;
		return 0;
	}
	if (cli_set_source(c, env, msg, len) == 0) {
		c->source_given = 0;
		return 0;
	}
	snprintf(msg, len, "invalid LOOPSTAT_SOURCE '%s': expected auto, bpf or proc", env);
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
	/* a command that takes --source takes bpf where it loads unless told;
	 * one that does not (its figures from the samples alone) stays proc */
	cli_set_command(cmd->name);
	if (row_of_setter(cmd, cli_set_source) && default_source(ctx, msg, sizeof(msg)) < 0)
		return cli_usage_error(cmd->name, "%s", msg);
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

int cli_check_pids(const struct targets *t)
{
	size_t bad = 0;
	for (size_t i = 0; i < t->npids; i++) {
		struct probe_stat st;
		int err = probe_stat_read(t->pids[i], 0, &st);
		if (err == -ESRCH || err == -ENOENT) {
			cli_error("no process %d", (int)t->pids[i]);
			bad++;
		} else if (err == 0 && (st.flags & PROBE_STAT_KTHREAD)) {
			textsafe(st.comm);
			cli_error("pid %d (%s) is a kernel thread: it runs no event loop, nothing of it can be measured",
				  (int)t->pids[i], st.comm);
			bad++;
		}
	}
	return t->npids && bad == t->npids && !t->has_re ? EXIT_NOTHING : -1;
}

int cli_check_access(const struct targets *t)
{
	size_t refused = 0;
	for (size_t i = 0; i < t->npids; i++) {
		struct probe_syscall p;
		int err = probe_syscall_open(&p, t->pids[i], t->pids[i]);
		probe_syscall_close(&p);
		if (err == -EACCES || err == -EPERM) {
			char why[PROBE_ACCESS_TEXT_LEN];
			probe_access_explain(t->pids[i], why, sizeof(why));
			cli_error("access to pid %d refused: %s", (int)t->pids[i], why);
			refused++;
		}
	}
	return t->npids && refused == t->npids && !t->has_re ? EXIT_ACCESS : -1;
}

/* Segments in the directory this user may not open: another user's. */
static unsigned unreadable_segments(void)
{
	DIR *d = opendir(probe_shm_dir());
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strncmp(de->d_name, "loopstat.", 9) == 0 && de->d_name[9] >= '0' && de->d_name[9] <= '9') {
			int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd >= 0)
				close(fd);
			else if (errno == EACCES || errno == EPERM)
				n++;
		}
	closedir(d);
	return n;
}

void cli_no_worker_why(const struct targets *t, char *buf, size_t len)
{
	if (!targets_all(t)) {
		snprintf(buf, len, "no thread of the processes named waits in an event loop's poll");
		return;
	}
	if (targets_host(t)) {
		snprintf(buf, len, "no thread on this host%s was seen waiting in an event loop's poll",
			 t->has_uid || t->has_service ? " that -u or -s selects" : "");
		return;
	}
	unsigned n = unreadable_segments();
	if (n)
		snprintf(buf, len, "%u segment%s in %s could not be read (another user's: run loopstat as that user "
			 "or root), and no other is there", n, n == 1 ? "" : "s", probe_shm_dir());
	else
		snprintf(buf, len, "no worker publishes a segment in %s (name uninstrumented processes with -p or -n)",
			 probe_shm_dir());
}

int cli_report_refused(const struct model *m)
{
	if (m->ignored)
		cli_error("%u threads not sampled: more than --max-workers %zu", m->ignored, m->max_workers);
	for (unsigned i = 0; i < m->nrefused && i < MODEL_REFUSED; i++)
		cli_error("access refused: %s", m->refused[i].text);
	if (m->nrefused > MODEL_REFUSED)
		cli_error("access refused to %u more processes", m->nrefused - MODEL_REFUSED);
	return m->nrefused && m->n == 0 && m->naccessible == 0 ? EXIT_ACCESS : -1;
}

int cli_model_verdict(const struct model *m, const struct targets *t)
{
	int refused = cli_report_refused(m);
	if (refused >= 0)
		return refused;
	if (m->n)
		return EXIT_OK;
	char why[512];
	cli_no_worker_why(t, why, sizeof(why));
	cli_error("no worker to measure: %s", why);
	return EXIT_NOTHING;
}

int cli_finish_output(int rc)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	cli_error("writing the output: %s", errno ? strerror(errno) : "write error");
	return EXIT_FAIL;
}

int cli_close_output(FILE *f, const char *path, int write_err)
{
	int err = write_err;
	errno = 0;
	/* a failed write leaves its bytes buffered: the flush tries them
	 * again and gives the cause, which ferror alone does not keep */
	if ((fflush(f) != 0 || ferror(f)) && !err)
		err = errno ? -errno : -EIO;
	errno = 0;
	if (fclose(f) != 0 && !err)
		err = errno ? -errno : -EIO;
	if (err)
		cli_error("writing %s: %s", path, strerror(-err));
	return err;
}
