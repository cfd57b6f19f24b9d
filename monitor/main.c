/*
 * main.c — loopstat's command line: picks the command, parses options,
 * runs the view. Usage errors exit 2, runtime errors 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "list.h"
#include "probe_shm.h"
#include "probe_stat.h"
#include "sampler.h"
#include "targets.h"
#include "tui.h"

#define EXIT_USAGE 2

static const char usage_text[] =
	"usage: loopstat [COMMAND] [OPTIONS]\n"
	"\n"
	"Shows how close event-loop workers are to capacity.\n"
	"\n"
	"commands:\n"
	"  top         live dashboard (default when stdout is a terminal)\n"
	"  list        sample for a while, then print every worker once (default otherwise)\n"
	"  gc          remove segments left by processes that are gone\n"
	"\n"
	"options:\n"
	"  -p, --pid PID[,PID...]   only these processes\n"
	"  -n, --name REGEX         only processes whose name matches (extended regex)\n"
	"  -j, --json               JSON output (list)\n"
	"      --duration SECONDS   how long list samples (default 2)\n"
	"  -r, --rate HZ            samples per second per thread (default 100)\n"
	"  -d, --delay SECONDS      seconds between screen refreshes (top; default 1)\n"
	"      --no-color           no colours (top; also when NO_COLOR is set)\n"
	"  -h, --help               this help\n"
	"  -V, --version            version\n"
	"\n"
	"environment:\n"
	"  LOOPSTAT_SHM_DIR    segment directory (default /dev/shm)\n"
	"  LOOPSTAT_PROC_ROOT  proc root (default /proc)\n";

struct cli {
	const char *command;
	int json;
	double duration_s;
	double rate_hz;
	double delay_s;                  /* top: 0 means default */
	int no_color;
	struct targets targets;
};

static int usage_error(const char *fmt, const char *arg)
{
	fputs("loopstat: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\ntry 'loopstat --help'\n", stderr);
	return EXIT_USAGE;
}

/* A number in [lo, hi]; 0 or -EINVAL. */
static int parse_seconds(const char *arg, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(arg, &end);
	if (end == arg || *end || errno || !(v >= lo && v <= hi))
		return -EINVAL;
	*out = v;
	return 0;
}

/* Returns -1 to go on, or the exit code. */
static int parse(int argc, char **argv, struct cli *c)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, 'n' },
		{ "json", no_argument, NULL, 'j' },
		{ "duration", required_argument, NULL, 'D' },
		{ "rate", required_argument, NULL, 'r' },
		{ "delay", required_argument, NULL, 'd' },
		{ "no-color", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	char msg[256];
	int opt;

	/* a bare `loopstat` on a terminal is the dashboard; in a pipe, the list */
	c->command = isatty(STDOUT_FILENO) ? "top" : "list";
	if (argc > 1 && argv[1][0] != '-') {
		c->command = argv[1];
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:n:jr:d:hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (targets_add_pids(&c->targets, optarg, msg, sizeof(msg)) < 0)
				return usage_error("%s", msg);
			break;
		case 'n':
			if (targets_set_regex(&c->targets, optarg, msg, sizeof(msg)) < 0)
				return usage_error("%s", msg);
			break;
		case 'j':
			c->json = 1;
			break;
		case 'D':
			if (parse_seconds(optarg, 0.05, 86400, &c->duration_s) < 0)
				return usage_error("invalid duration '%s': expected seconds (0.05 to 86400)", optarg);
			break;
		case 'r':
			if (parse_seconds(optarg, 1, 10000, &c->rate_hz) < 0)
				return usage_error("invalid rate '%s': expected 1 to 10000 Hz", optarg);
			break;
		case 'd':
			if (parse_seconds(optarg, 0.05, 3600, &c->delay_s) < 0)
				return usage_error("invalid delay '%s': expected seconds (0.05 to 3600)", optarg);
			break;
		case 'C':
			c->no_color = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("loopstat %s\n", LOOPSTAT_VERSION);
			return 0;
		case ':':
			return usage_error("option '%s' needs an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	return -1;
}

/* Sleeps for the sampling duration, with a progress line on a terminal. */
static void wait_sampling(double seconds)
{
	int tty = isatty(STDERR_FILENO);
	const double tick = 0.1;
	for (double t = 0; t < seconds; t += tick) {
		if (tty)
			fprintf(stderr, "\rloopstat: sampling %.1f / %.1f s", t, seconds);
		double step = seconds - t < tick ? seconds - t : tick;
		struct timespec ts = { (time_t)step, (long)((step - (time_t)step) * 1e9) };
		nanosleep(&ts, NULL);
	}
	if (tty)
		fputs("\r\033[K", stderr);
}

/* The sampler for list and top, running; NULL (reported) on failure. */
static struct sampler *start_sampler(struct cli *c)
{
	struct sampler_opts o = { .rate_hz = c->rate_hz, .targets = &c->targets };
	struct sampler *s = NULL;
	int err = sampler_new(&o, &s);
	if (err == 0 && (err = sampler_start(s)) < 0)
		sampler_delete(s);
	if (err < 0) {
		fprintf(stderr, "loopstat: starting the sampler: %s\n", strerror(-err));
		return NULL;
	}
	return s;
}

static int cmd_list(struct cli *c)
{
	struct sampler *s = start_sampler(c);
	struct model m;
	if (!s)
		return 1;
	wait_sampling(c->duration_s);
	sampler_stop(s);
	int err = sampler_model(s, 0, &m);
	sampler_delete(s);
	if (err) {
		fprintf(stderr, "loopstat: %s\n", strerror(-err));
		return 1;
	}
	if (c->json)
		list_print_json(stdout, &m);
	else
		list_print_text(stdout, &m);
	model_done(&m);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_top(struct cli *c)
{
	struct tui_opts to = { .delay_s = c->delay_s, .no_color = c->no_color };
	struct sampler *s = start_sampler(c);
	if (!s)
		return 1;
	int rc = tui_run(s, &to);
	sampler_stop(s);
	sampler_delete(s);
	if (rc < 0) {
		fprintf(stderr, "loopstat: top needs a terminal: %s\n", strerror(-rc));
		return 1;
	}
	return rc > 0 ? 128 + rc : 0;   /* stopped by a signal, as a shell reports it */
}

/*
 * A segment is stale when the process its name claims is gone, or that pid
 * now belongs to a later process. Decided from the name and /proc first, so
 * that files a writer left half-made (no header yet) are collected too; the
 * inode is checked again right before the unlink so that a file recreated
 * meanwhile by a new process with that pid is kept.
 */
static int gc_one(const char *path, pid_t pid, void *arg)
{
	int *removed = arg;
	struct stat before, now;
	struct probe_stat st;
	const char *why = NULL;
	if (lstat(path, &before) < 0)
		return 0;
	int err = probe_stat_read(pid, 0, &st);
	if (err == -ESRCH) {
		why = "is gone";
	} else if (err == 0) {
		struct probe_shm *shm;
		err = probe_shm_open(path, &shm);
		if (err == 0)
			probe_shm_close(shm);
		if (err == -ESTALE)
			why = "was reused";
		else if (err == -ESRCH)
			why = "is gone";
	}
	if (!why || lstat(path, &now) < 0 || now.st_ino != before.st_ino)
		return 0;
	if (unlink(path) < 0) {
		fprintf(stderr, "loopstat: unlink(%s): %s\n", path, strerror(errno));
		return 0;
	}
	printf("removed %s (pid %d %s)\n", path, (int)pid, why);
	(*removed)++;
	return 0;
}

static int cmd_gc(void)
{
	int removed = 0;
	int err = probe_shm_scan(NULL, gc_one, &removed);
	if (err < 0 && err != -ENOENT) {
		fprintf(stderr, "loopstat: opendir(%s): %s\n", probe_shm_dir(), strerror(-err));
		return 1;
	}
	printf("%d stale segment%s removed\n", removed, removed == 1 ? "" : "s");
	return 0;
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
	struct cli c = { .duration_s = 2.0 };
	targets_init(&c.targets);
	int rc = parse(argc, argv, &c);
	if (rc < 0) {
		if (strcmp(c.command, "top") == 0)
			rc = cmd_top(&c);
		else if (strcmp(c.command, "list") == 0)
			rc = cmd_list(&c);
		else if (strcmp(c.command, "gc") == 0)
			rc = cmd_gc();
		else
			rc = usage_error("unknown command '%s'", c.command);
	}
	targets_done(&c.targets);
	return rc;
}
