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
	double duration_s;          /* sampling time, default 10 */
	double rate_hz;             /* 0 = the sampler's default */
	double timeout_s;           /* delivery budget of one run, default 20 */
	double lock_wait_s;         /* how long a second run waits for the spool, default 5 */
	int64_t max_age_s;          /* points older than this expire, default 86400 */
	int64_t max_spool_bytes;    /* spool bound, default 64 MiB */
	int tags;                   /* --tags: Graphite tag syntax */
	int dry_run;                /* --dry-run: print lines, send nothing */
	int no_resend;              /* --no-resend: never send the last delivery again */
};

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

/* The host name points and self-report use: --host, else gethostname() up
 * to the first dot. */
void export_opts_host(const struct export_opts *o, char *buf, size_t len);

/* "90", "90s", "5m", "2h", "7d" → seconds; -1 if malformed. */
double export_parse_duration(const char *s);
/* "4096", "512K", "64M", "1G" → bytes; -1 if malformed. */
int64_t export_parse_size(const char *s);

#endif /* LOOPSTAT_EXPORT_CONFIG_H */
