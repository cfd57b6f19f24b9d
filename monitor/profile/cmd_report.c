/*
 * cmd_report.c — `loopstat report FILE`: a recording rendered in any of
 * profile's formats, through the same accumulator as a live profile.
 */
#include "cli.h"
#include "profile/profile_run.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define REPORT_SPAN_S 10.0   /* --around's window by default */

/* report's options: profile's, and the window --around asks for */
struct report_cli {
	struct profile_cli p;            /* first: profile's setters take it */
	const char *around;              /* NULL: the whole recording; "trigger" or a time */
	double span_s;                   /* the window's length, centred on --around */
};

static int set_around(void *ctx, const char *arg, char *msg, size_t len)
{
	double t;
	if (strcmp(arg, "trigger") != 0 && cli_set_duration("around", arg, 0, 1e7, &t, msg, len) < 0)
		return -1;
	((struct report_cli *)ctx)->around = arg;
	return 0;
}

static int set_span(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("span", arg, 0.01, 1e7, &((struct report_cli *)ctx)->span_s, msg, len);
}

/* The events of [lo_ns, hi_ns] into the accumulator. */
struct window {
	struct profile_acc *acc;
	uint64_t lo_ns, hi_ns;
	uint64_t first_ns, last_ns;
	int      any;
};

static int in_window(void *arg, const struct rec_event *ev)
{
	struct window *w = arg;
	if (ev->t_ns < w->lo_ns || ev->t_ns > w->hi_ns)
		return 0;
	if (!w->any || ev->t_ns < w->first_ns)
		w->first_ns = ev->t_ns;
	if (!w->any++ || ev->t_ns > w->last_ns)
		w->last_ns = ev->t_ns;
	return profile_acc_add(w->acc, ev);
}

static int nothing(void *arg, const struct rec_event *ev)
{
	(void)arg, (void)ev;
	return 0;
}

/* The recording on f into acc, the whole of it or --around's window
 * (of the first trigger: read twice, the triggers first). */
static int read_events(const struct report_cli *r, FILE *f, struct profile_acc *acc, struct rec_meta *rm, long *line,
		       struct window *w)
{
	*w = (struct window){ .acc = acc, .hi_ns = UINT64_MAX };
	if (!r->around)
		return profile_acc_read(acc, f, rm, line);
	double at = 0, span = r->span_s > 0 ? r->span_s : REPORT_SPAN_S;
	if (strcmp(r->around, "trigger") == 0) {
		int err = rec_read(f, rm, nothing, NULL, line);
		if (err < 0)
			return err;
		if (!rm->ntriggers)
			return -ENOENT;
		at = (double)rm->triggers[0].t_ns / 1e9;
		rewind(f);
	} else {
		cli_parse_duration(r->around, 0, 1e7, &at);
	}
	double lo = at - span / 2;
	w->lo_ns = lo > 0 ? (uint64_t)(lo * 1e9) : 0;
	w->hi_ns = (uint64_t)((at + span / 2) * 1e9);
	return rec_read(f, rm, in_window, w, line);
}

/* A flight recorder's limit readings: per worker, the seconds under each
 * verdict and the deciding figure's mean and largest. */
static void write_limits(FILE *f, const struct rec_meta *rm)
{
	if (!rm->limits_seen)
		return;
	fprintf(f, "\nlimits (flight recorder: each second's verdict per worker, with the figure of its rule: "
		"mean, largest):\n");
	for (unsigned i = 0; i < rm->nlimits; i++) {
		const struct rec_limit_tally *k = &rm->limits[i];
		fprintf(f, "  %d/%d  %-8s %5u s  %9.3f s .. %9.3f s", (int)k->pid, (int)k->tid, k->limit, k->seconds,
			(double)k->first_ns / 1e9, (double)k->last_ns / 1e9);
		if (k->nread)
			fprintf(f, "  reading %.1f, up to %.1f\n", k->reading_sum / k->nread, k->reading_max);
		else
			fputs("  reading -\n", f);
	}
	if (rm->limits_unkept)
		fprintf(f, "  and %u seconds of workers past the first %d\n", rm->limits_unkept, REC_MAX_LIMITS);
}

/* A flight recorder's triggers and limit readings, after the text report. */
static void write_triggers(const char *path, const struct rec_meta *rm)
{
	if (!rm->triggers_seen && !rm->limits_seen)
		return;
	FILE *f = !path || strcmp(path, "-") == 0 ? stdout : fopen(path, "a");
	if (!f)
		return;
	write_limits(f, rm);
	if (!rm->triggers_seen)
		goto out;
	fprintf(f, "\ntriggers (flight recorder, %.1f s recorded before the first):\n", rm->ring_s);
	for (unsigned i = 0; i < rm->ntriggers; i++) {
		const struct rec_trigger *k = &rm->triggers[i];
		if (k->pid)
			fprintf(f, "  %9.3f s  %s  by %d/%d\n", (double)k->t_ns / 1e9, k->text, (int)k->pid, (int)k->tid);
		else
			fprintf(f, "  %9.3f s  %s\n", (double)k->t_ns / 1e9, k->text);
	}
	if (rm->triggers_seen > rm->ntriggers)
		fprintf(f, "  and %u more\n", rm->triggers_seen - rm->ntriggers);
out:
	if (f != stdout)
		fclose(f);
	else
		fflush(f);
}

static int set_file(void *ctx, const char *arg, char *msg, size_t len)
{
	struct profile_cli *c = ctx;
	if (c->file) {
		snprintf(msg, len, "report takes one recording, not '%s' too", arg);
		return -1;
	}
	c->file = arg;
	return 0;
}

static const struct cli_option options[] = {
	{ 'f', "format", "FORMAT", PROFILE_FORMAT_LIST, profile_cli_format },
	{ 'o', "output", "FILE", "write the profile to FILE (default: stdout)", profile_cli_output },
	PROFILE_CLI_THREADS,
	{ 0, "around", "TIME", "only the window around TIME: seconds into the recording (12.5, 1m30s), or "
	  "'trigger', its first trigger's", set_around },
	{ 0, "span", "DURATION", "with --around: the window's length (default 10s)", set_span },
	{ 0 },
};

static int run(int argc, char **argv)
{
	struct report_cli r = { .span_s = 0 };
	struct profile_cli *c = &r.p;
	cli_common_init(&c->common);
	int rc = cli_parse(&cmd_report, argc, argv, &r);
	if (rc >= 0)
		goto out;
	if (!c->file) {
		rc = cli_usage_error("report", "needs a recording: loopstat report FILE");
		goto out;
	}
	if ((rc = profile_check_output("report", c->fmt, c->out)) >= 0)
		goto out;
	rc = EXIT_FAIL;
	FILE *f = strcmp(c->file, "-") == 0 ? stdin : fopen(c->file, "r");
	if (!f) {
		cli_error("open(%s): %s", c->file, strerror(errno));
		rc = errno == ENOENT ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	struct profile_acc *acc = profile_acc_new(PROFILE_ACC_AUTO_FIBER);
	struct rec_meta rm;
	long line = 0;
	struct window w;
	if (r.around && strcmp(r.around, "trigger") == 0 && f == stdin) {
		rc = cli_usage_error("report", "--around trigger reads the file twice: not from standard input");
		profile_acc_delete(acc);
		goto out;   /* stdin: nothing to close */
	}
	int err = acc ? read_events(&r, f, acc, &rm, &line, &w) : -ENOMEM;
	if (err == -ENOENT) {
		cli_error("%s has no trigger to be --around", c->file);
		fclose(f);
		profile_acc_delete(acc);
		rc = EXIT_NOTHING;
		goto out;
	}
	if (err == 0 && r.around) {
		/* the window's own span, and where it is */
		rm.duration_s = w.any ? (double)(w.last_ns - w.first_ns) / 1e9 : 0;
		char title[sizeof(rm.title)];
		snprintf(title, sizeof(title), "%.80s, %.1f-%.1f s", rm.title, (double)w.lo_ns / 1e9,
			 w.hi_ns == UINT64_MAX ? 0 : (double)w.hi_ns / 1e9);
		memcpy(rm.title, title, sizeof(title));
	}
	if (f != stdin)
		fclose(f);
	if (rec_format_error(err))
		cli_error("%s:%ld: %s", c->file, line, rec_format_error(err));
	else if (err == -E2BIG)
		cli_error("%s:%ld: past what a report reads (lines of %d bytes, %u strings, %u threads, %u tree "
			  "nodes): refused", c->file, line, REC_MAX_LINE, REC_MAX_STRINGS, PROFILE_ACC_MAX_THREADS,
			  PROFILE_TREE_MAX_NODES);
	else if (err < 0)
		cli_error("reading %s: %s", c->file, strerror(-err));
	if (err == 0 && rm.cut) {
		/* a signal or a full disk ended the writer: what it wrote is still samples */
		cli_error("%s was cut short (no end record): the report covers its %.1f s of complete records",
			  c->file, (double)rm.last_t_ns / 1e9);
		if (!r.around)
			rm.duration_s = (double)rm.last_t_ns / 1e9;
	}
	struct profile_tree *t = err == 0 ? profile_acc_finish(acc) : NULL;
	if (err == 0 && !t)
		cli_error("out of memory");
	if (t && profile_acc_samples(acc, NULL, NULL) == 0) {
		cli_error("%s holds no samples", c->file);
		rc = EXIT_NOTHING;
	} else if (t) {
		struct profile_meta meta = { .title = rm.title, .rate_hz = rm.rate_hz, .duration_s = rm.duration_s,
					     .start_unix = rm.start_unix,
					     .threads = c->threads };
		rc = profile_emit(c->out, c->fmt, t, &meta, acc);
		if (rc == EXIT_OK && c->fmt == PROFILE_FMT_TEXT)
			write_triggers(c->out, &rm);
	} else if (rec_format_error(err) || err == -E2BIG) {
		rc = EXIT_USAGE;
	}
	profile_acc_delete(acc);
out:
	cli_common_done(&c->common);
	return rc;
}

const struct cli_command cmd_report = {
	"report", "render a recording (record, profile --record) in any of profile's formats",
	"FILE [OPTIONS]",
	"Reads a recording made by 'loopstat record' or 'loopstat profile --record', on this machine or\n"
	"another, and writes the same report a live profile of those samples gives. A flight recorder's\n"
	"recording (record --ring, serve --flight-recorder) lists each worker's limit readings and its\n"
	"triggers after the text report; --around shows only a window.",
	options, run, set_file, 1,
};
