/*
 * flight_opts.c — the flight recorder's options (flight.h): their setters,
 * the triggers parsed in check's grammar, and the usage checks that record
 * and serve share.
 */
#include "profile/flight.h"
#include "profile/flight_int.h"
#include "check/check_series.h"
#include "cli.h"
#include "model/metric.h"

#include <stdio.h>
#include <string.h>

int flight_opt_ring(struct flight_opts *o, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("ring", arg, 1, 86400, &o->ring_s, msg, len);
}

int flight_opt_trigger(struct flight_opts *o, const char *arg, char *msg, size_t len)
{
	if (o->ntrigger == FLIGHT_MAX_TRIGGERS) {
		snprintf(msg, len, "at most %d triggers", FLIGHT_MAX_TRIGGERS);
		return -1;
	}
	o->trigger[o->ntrigger++] = arg;
	return 0;
}

int flight_opt_after(struct flight_opts *o, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("after", arg, 0, 3600, &o->after_s, msg, len);
}

int flight_opt_cooldown(struct flight_opts *o, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("cooldown", arg, 0, 7 * 86400, &o->cooldown_s, msg, len);
}

static int set_size(const char *what, const char *arg, int64_t lo, int64_t *out, char *msg, size_t len)
{
	int64_t v = cli_parse_size(arg);
	if (v >= lo)
		return *out = v, 0;
	snprintf(msg, len, "invalid %s '%s': expected a size of at least %lld bytes (4096, 512K, 64M, 1G)", what, arg,
		 (long long)lo);
	return -1;
}

int flight_opt_max_bytes(struct flight_opts *o, const char *arg, char *msg, size_t len)
{
	return set_size("max-bytes", arg, 1, &o->max_bytes, msg, len);
}

int flight_opt_ring_bytes(struct flight_opts *o, const char *arg, char *msg, size_t len)
{
	return set_size("ring-bytes", arg, (int64_t)4 << 20, &o->ring_bytes, msg, len);
}

int flight_parse_triggers(const char *cmd, const struct flight_opts *o, struct check_set *s)
{
	size_t nm;
	const struct check_metric *metrics = check_series_metrics(&nm);
	struct check_parse_ctx px = { metrics, nm, check_series_filter_ok, NULL, 0 };
	char err[CHECK_ERR_LEN];
	for (int i = 0; i < o->ntrigger; i++) {
		if (check_set_add(s, &px, o->trigger[i], err, sizeof(err)) < 0)
			return cli_usage_error(cmd, "--trigger %s", err);
		const struct check_threshold *t = &s->v[s->n - 1];
		/* judged on one worker's second: its own figure, as list shows it */
		if (t->relative || t->nfilter || !metric_find(t->metric->name))
			return cli_usage_error(cmd, "--trigger '%s': a trigger is a worker's metric against a number "
					       "(no baseline, no filter, no fleet roll-up)", o->trigger[i]);
	}
	return -1;
}

int flight_check_usage(const char *cmd, const struct flight_opts *o, const char *dir, const char *on_opt,
		       const char *dir_opt)
{
	if (o->ring_s <= 0) {
		if (o->ntrigger || o->after_s >= 0 || o->cooldown_s >= 0 || o->max_bytes || o->ring_bytes)
			return cli_usage_error(cmd, "--trigger, --after, --cooldown, --max-bytes and --ring-bytes "
					       "need %s", on_opt);
		return -1;
	}
	if (!dir || strcmp(dir, "-") == 0)
		return cli_usage_error(cmd, "--ring needs %s: the directory its recordings go to", dir_opt);
	struct check_set s;
	check_set_init(&s);
	int rc = flight_parse_triggers(cmd, o, &s);
	check_set_done(&s);
	return rc;
}
