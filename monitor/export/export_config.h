/*
 * export_config.h — the options of `loopstat export`, one struct filled by
 * the command line and by `--config FILE` alike: each `key = value` line of
 * the file is exactly the long option `--key value`.
 */
#ifndef LOOPSTAT_EXPORT_CONFIG_H
#define LOOPSTAT_EXPORT_CONFIG_H

#include <stddef.h>
#include <stdint.h>

struct export_opts {
	char graphite[1024];        /* HOST:PORT[,HOST:PORT...]; "" = none */
	char prefix[256];           /* default "loopstat" */
	char tmpl[256];             /* --template; "" = the default path */
	char host[256];             /* --host; "" = gethostname() up to the first dot */
	char spool[1024];           /* --spool DIR */
	char prometheus_textfile[1024]; /* "" = none */
	char resolution[16];        /* "1s" | "window" */
	char pids[256];             /* -p PID[,PID...] as given; the session parses it */
	char name_regex[256];       /* -n REGEX */
	char user[64];              /* -u USER */
	char service_regex[256];    /* -s REGEX */
	char source[8];             /* --source auto|bpf|proc as given; "" = the command line's (cli_parse) */
	int instrumented;           /* --instrumented */
	int all;                    /* --all */
	double duration_s;          /* sampling time, default 10 */
	double rate_hz;             /* 0 = the sampler's default */
	double precision_pts;       /* sampler_opts.precision_pts */
	double timeout_s;           /* delivery budget of one run, default 20 */
	double lock_wait_s;         /* how long a second run waits for the spool, default 5 */
	int64_t max_age_s;          /* points older than this expire, default 86400 */
	int64_t max_spool_bytes;    /* spool bound, default 64 MiB */
	size_t max_workers;         /* 0 = the sampler's default (the command line's --max-workers wins) */
	int tags;                   /* --tags: Graphite tag syntax */
	int dry_run;                /* --dry-run: print lines, send nothing */
	int no_resend;              /* --no-resend: never send the last delivery again */
};

/*
 * Every option of `loopstat export`, one row each: the command line's option
 * table (cmd_export.c) and the config file's keys (export_config.c) are both
 * made from these rows, so the two cannot drift apart. Columns: identifier,
 * long name (= the config key), short letter, argument (NULL: a flag), help
 * line, a valid value that is not the default (the tests set every option
 * with it), kind of value, field of struct export_opts, and who takes it on
 * the command line: OWN (kept, and applied over the config file in argv
 * order), or one of the sampling commands' shared rows of cli.h (PID, NAME,
 * MAX_WORKERS: their short letter, argument and help are the shared row's;
 * the file's value applies when the command line gives none), and for
 * durations the range in seconds (lo, hi; 0, 0 for the others).
 */
#define EXPORT_OPTIONS(X) \
	X(graphite, "graphite", 0, "HOST:PORT[,...]", "carbon destinations (plaintext protocol), each with its own cursor", \
	  "127.0.0.1:2003", STR, graphite, OWN, 0, 0) \
	X(prefix, "prefix", 0, "P", "first path level(s) of every metric (default loopstat)", "lp", STR, prefix, OWN, 0, 0) \
	X(template, "template", 0, "T", "path template, e.g. {prefix}.{host}.{process}.{metric}", \
	  "{prefix}.{host}.{process}.{metric}", STR, tmpl, OWN, 0, 0) \
	X(host, "host", 0, "H", "host level of the path (default: the host name up to its first dot)", "web1", STR, host, \
	  OWN, 0, 0) \
	X(tags, "tags", 0, NULL, "Graphite tag syntax: name;host=..;process=..", "yes", BOOL, tags, OWN, 0, 0) \
	X(duration, "duration", 0, "DURATION", "how long to sample: 10, 1.5, 30s, 1m (default 10 s)", "0.2", SECONDS, duration_s, OWN, 0.05, 86400) \
	X(rate, "rate", 'r', "HZ", "samples per second per thread (" CLI_RATE_RANGE ", default 100)", "50", HZ, rate_hz, OWN, 0, 0) \
	X(precision, "precision", 0, "PTS", "sample each thread as often as a +-PTS interval of its idle% over 10 s " \
	  "needs, at least 10 Hz (" CLI_PRECISION_RANGE ", default 2; 0: every thread at the rate)", "0", PRECISION, \
	  precision_pts, OWN, 0, 0) \
	X(resolution, "resolution", 0, "1s|window", "one point per second sampled, or one per run (default window)", "1s", \
	  RESOLUTION, resolution, OWN, 0, 0) \
	X(spool, "spool", 0, "DIR", "where points wait until every destination has them", "/nonexistent/spool", STR, \
	  spool, OWN, 0, 0) \
	X(max_age, "max-age", 0, "DURATION", "points older than this expire, counted (default 1d: match the retention)", "2h", \
	  AGE, max_age_s, OWN, 1, 3650 * 86400.0) \
	X(max_spool, "max-spool", 0, "SIZE", "spool size bound, oldest expire first (default 64M)", "8M", SIZE, \
	  max_spool_bytes, OWN, 0, 0) \
	X(timeout, "timeout", 0, "DURATION", "delivery budget of one run, more than 0 (default 20 s)", "3s", SECONDS, timeout_s, OWN, 0.1, 86400) \
	X(lock_wait, "lock-wait", 0, "DURATION", "how long to wait for an overlapping run (default 5 s)", "1", SECONDS, \
	  lock_wait_s, OWN, 0, 86400) \
	X(no_resend, "no-resend", 0, NULL, "never send the last delivery again (for aggregating destinations)", "yes", \
	  BOOL, no_resend, OWN, 0, 0) \
	X(prometheus_textfile, "prometheus-textfile", 0, "PATH", "also write the points for node_exporter's textfile " \
	  "collector", "/nonexistent/loopstat.prom", STR, prometheus_textfile, OWN, 0, 0) \
	X(dry_run, "dry-run", 0, NULL, "print the lines on stdout, send and spool nothing", "yes", BOOL, dry_run, OWN, 0, 0) \
	X(pid, "pid", 0, NULL, NULL, "1", STR, pids, PID, 0, 0) \
	X(name, "name", 0, NULL, NULL, "^no-such-process$", STR, name_regex, NAME, 0, 0) \
	X(user, "user", 0, NULL, NULL, "0", STR, user, USER, 0, 0) \
	X(service, "service", 0, NULL, NULL, "^no-such-service$", STR, service_regex, SERVICE, 0, 0) \
	X(instrumented, "instrumented", 0, NULL, NULL, "yes", BOOL, instrumented, INSTRUMENTED, 0, 0) \
	X(all, "all", 0, NULL, NULL, "yes", BOOL, all, ALL, 0, 0) \
	X(max_workers, "max-workers", 0, NULL, NULL, "16", COUNT, max_workers, MAX_WORKERS, 0, 0) \
	X(source, "source", 0, NULL, NULL, "proc", STR, source, SOURCE, 0, 0)

/* Each row's config key and example value, in the table's order. */
struct export_option {
	const char *key;
	const char *example;
};
extern const struct export_option export_options[];
extern const size_t export_noptions;

/* Defaults; the spool dir is /var/spool/loopstat for root, else
 * $XDG_STATE_HOME (or ~/.local/state)/loopstat/spool, the home directory
 * taken from the passwd entry when HOME is unset; "" when there is none. */
void export_opts_init(struct export_opts *o);

/* Sets one option by its long name (`max-age`; `max_age` also accepted).
 * Booleans take yes/no/true/false/on/off/1/0 (value NULL = yes, for flags).
 * Returns 0, -ENOENT for an unknown key, -EINVAL for a bad value; err gets a
 * lowercase reason either way. */
int export_opts_set(struct export_opts *o, const char *key, const char *value, char *err, size_t errlen);

/* Reads `key = value` lines (blank lines and `#` comments allowed, a value
 * may be double-quoted) into o. Returns 0, or a negative errno with
 * "PATH:LINE: reason" (or "open(PATH): reason") in err. */
int export_config_load(struct export_opts *o, const char *path, char *err, size_t errlen);

#endif /* LOOPSTAT_EXPORT_CONFIG_H */
