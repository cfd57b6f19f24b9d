/*
 * main.c — loopstat's command line: picks the command, parses options,
 * runs the view. Usage errors exit 2, runtime errors 1.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "list.h"
#include "sampler.h"
#include "probe_shm.h"
#include "snapshot.h"
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
	"  list        print every instrumented worker's counters once (default otherwise)\n"
	"  gc          remove segments left by processes that are gone\n"
	"\n"
	"options:\n"
	"  -p, --pid PID[,PID...]   only these processes\n"
	"  -n, --name REGEX         only processes whose name matches (extended regex)\n"
	"  -j, --json               JSON output (list)\n"
	"  -r, --rate HZ            samples per second per thread (top; 10..2000)\n"
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
	struct targets targets;
	double rate_hz, delay_s;         /* top: 0 means default */
	int no_color;
};

static int usage_error(const char *fmt, const char *arg)
{
	fputs("loopstat: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("\ntry 'loopstat --help'\n", stderr);
	return EXIT_USAGE;
}

static int parse_positive(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0))
		return -1;
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
		case 'r':
			if (parse_positive(optarg, &c->rate_hz) < 0 || c->rate_hz < 10 || c->rate_hz > 2000)
				return usage_error("rate '%s' is not a number of Hz in 10..2000", optarg);
			break;
		case 'd':
			if (parse_positive(optarg, &c->delay_s) < 0)
				return usage_error("delay '%s' is not a positive number of seconds", optarg);
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

static int cmd_list(struct cli *c)
{
	struct snapshot s;
	int err = snapshot_take(&s, NULL, &c->targets);
	if (err < 0) {
		fprintf(stderr, "loopstat: reading segments in %s: %s\n", probe_shm_dir(), strerror(-err));
		return 1;
	}
	if (c->json)
		list_print_json(stdout, &s);
	else
		list_print_text(stdout, &s);
	snapshot_done(&s);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int cmd_top(struct cli *c)
{
	struct sampler_opts so = { .rate_hz = c->rate_hz, .targets = &c->targets };
	struct tui_opts to = { .delay_s = c->delay_s, .no_color = c->no_color };
	struct sampler *s;
	int err = sampler_new(&so, &s);
	if (err == 0 && (err = sampler_start(s)) < 0)
		sampler_delete(s);
	if (err < 0) {
		fprintf(stderr, "loopstat: starting the sampler: %s\n", strerror(-err));
		return 1;
	}
	int rc = tui_run(s, &to);
	sampler_stop(s);
	sampler_delete(s);
	if (rc < 0) {
		fprintf(stderr, "loopstat: top needs a terminal: %s\n", strerror(-rc));
		return 1;
	}
	return rc > 0 ? 128 + rc : 0;   /* stopped by a signal, as a shell reports it */
}

static int gc_one(const char *path, pid_t pid, void *arg)
{
	int *removed = arg;
	struct probe_shm *shm;
	int err = probe_shm_open(path, &shm);
	if (err == 0) {
		probe_shm_close(shm);
		return 0;
	}
	if (err != -ESRCH && err != -ESTALE)
		return 0;
	if (unlink(path) < 0) {
		fprintf(stderr, "loopstat: unlink(%s): %s\n", path, strerror(errno));
		return 0;
	}
	printf("removed %s (pid %d %s)\n", path, (int)pid, err == -ESRCH ? "is gone" : "was reused");
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

int main(int argc, char **argv)
{
	struct cli c = { 0 };
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
