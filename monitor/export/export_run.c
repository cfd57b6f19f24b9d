/*
 * export_run.c — one export run: format, spool, deliver per destination in
 * parallel threads (a dead node only spends its own time), self-report.
 */
#include "export/export_run.h"

#include "cli.h"
#include "exitcodes.h"
#include "export/export_prom.h"
#include "export/export_spool.h"
#include "util/clock.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* One connection carries at most this much; the cursor moves per batch. */
#define EXPORT_BATCH_BYTES (1u << 20)

struct job {
	struct export_spool *spool;
	struct export_delivery *d;  /* the destination's cursor and resend window, across both passes */
	const struct export_send_timeouts *t;
	long long deadline;
	int64_t min_ts;
	int one_shot;               /* a single attempt (the self-report pass) */
	struct export_dest_result *r;
};

static void *deliver(void *arg)
{
	struct job *j = arg;
	struct export_dest_result *r = j->r;
	while (r->rc == 0) {
		struct export_batch b;
		r->rc = export_spool_batch(j->spool, j->d, EXPORT_BATCH_BYTES, j->min_ts, &b);
		if (r->rc < 0) {
			snprintf(r->why, sizeof(r->why), "read spool: %s", strerror(-r->rc));
			export_spool_batch_done(&b);
			break;
		}
		int attempts = b.len ? 1 : 0;
		if (b.len)
			r->rc = j->one_shot ? export_send_once(&r->dest, b.buf, b.len, j->t, j->deadline, r->why,
			                                       sizeof(r->why))
			                    : export_send_retry(&r->dest, b.buf, b.len, j->t, j->deadline, &attempts,
			                                        r->why, sizeof(r->why));
		export_spool_batch_done(&b);
		r->attempts += attempts;
		if (r->rc == 0 && (r->rc = export_spool_ack(j->spool, j->d, &b)) < 0)
			snprintf(r->why, sizeof(r->why), "store cursor: %s", r->rc == -EPERM ? "cursor." : strerror(-r->rc));
		if (r->rc == -EPERM)
			snprintf(r->why + strlen(r->why), sizeof(r->why) - strlen(r->why), "%s in the spool is no regular "
			         "file of ours: someone else writes to it; remove it", r->dest.key);
		if (r->rc < 0)
			break;
		r->sent += b.lines;
		r->resent += b.resent;
		r->expired += b.expired;
		/* a batch of only expired lines moved the cursor: read on */
		if (!b.len && b.from.seq == b.to.seq && b.from.off == b.to.off)
			break;
	}
	return NULL;
}

static void deliver_all(struct export_spool *sp, struct export_delivery *dl, struct export_result *r,
                        const struct export_send_timeouts *t, long long deadline, int64_t min_ts, int one_shot)
{
	pthread_t th[EXPORT_DEST_MAX];
	struct job jobs[EXPORT_DEST_MAX];
	int started[EXPORT_DEST_MAX] = { 0 };
	for (int i = 0; i < r->ndest; i++) {
		if (one_shot && r->dest[i].rc < 0)
			continue;  /* its points, self-report included, wait for the next run */
		jobs[i] = (struct job){ sp, &dl[i], t, deadline, min_ts, one_shot, &r->dest[i] };
		started[i] = pthread_create(&th[i], NULL, deliver, &jobs[i]) == 0;
		if (!started[i])
			deliver(&jobs[i]);
	}
	for (int i = 0; i < r->ndest; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}

static void add_line(FILE *f, const struct export_name_opts *no, const struct expo_point *p,
                     struct export_result *r)
{
	char line[EXPORT_LINE_MAX];
	int n = export_line(no, p, line);
	if (n == -EDOM)
		r->nonfinite++;
	else if (n < 0)
		r->too_long++;
	else {
		fwrite(line, 1, (size_t)n, f);
		r->lines++;
	}
}

/* The exporter's own figures, under <prefix>.<host>.loopstat.export.* */
static void self_report(FILE *f, const struct export_name_opts *no, const struct export_opts *o,
                        const struct export_input *in, struct export_result *r)
{
	const char *host = in->host;
	int64_t now = in->now;
	struct export_result scratch = { 0 };
	struct expo_point p = { .prefix = o->prefix, .host = host, .process = "loopstat", .pid = -1, .tid = -1,
	                          .ts = now };
	char metric[EXPO_COMPONENT_MAX + 64];
	struct { const char *name; double v; } global[] = {
		{ "spooled", (double)r->spooled },
		{ "spool_bytes", (double)r->spool_bytes },
		{ "nonfinite_skipped", (double)r->nonfinite },
		{ "too_long_skipped", (double)r->too_long },
		{ "seconds_missed", (double)in->seconds_missed },
	};
	for (size_t i = 0; i < sizeof(global) / sizeof(global[0]); i++) {
		snprintf(metric, sizeof(metric), "export.%s", global[i].name);
		p.metric = metric;
		p.value = global[i].v;
		add_line(f, no, &p, &scratch);
	}
	for (int d = 0; d < r->ndest; d++) {
		const struct export_dest_result *x = &r->dest[d];
		struct { const char *name; double v; } per[] = {
			{ "sent", (double)x->sent },
			{ "resent", (double)x->resent },
			{ "expired", (double)x->expired },
			{ "pending", (double)x->pending },
			{ "oldest_unsent_age_s", x->oldest_unsent ? (double)(now - x->oldest_unsent) : 0 },
		};
		for (size_t i = 0; i < sizeof(per) / sizeof(per[0]); i++) {
			snprintf(metric, sizeof(metric), "export.%s.%s", x->dest.key, per[i].name);
			p.metric = metric;
			p.value = per[i].v;
			add_line(f, no, &p, &scratch);
		}
	}
}

static void update_pending(struct export_spool *sp, struct export_result *r)
{
	for (int i = 0; i < r->ndest; i++) {
		struct export_mark m;
		export_spool_mark_load(sp, r->dest[i].dest.key, &m);
		export_spool_pending(sp, &m.next, &r->dest[i].pending, &r->dest[i].oldest_unsent);
	}
	r->spool_bytes = export_spool_bytes(sp);
}

static int trim(struct export_spool *sp, struct export_result *r, int64_t now)
{
	const char *keys[EXPORT_DEST_MAX];
	uint64_t expired[EXPORT_DEST_MAX] = { 0 };
	for (int i = 0; i < r->ndest; i++)
		keys[i] = r->dest[i].dest.key;
	int rc = export_spool_trim(sp, keys, r->ndest, now, expired);
	for (int i = 0; i < r->ndest; i++)
		r->dest[i].expired += expired[i];
	return rc;
}

/* Said after a spool error this user's rights caused (not a refusal of ours). */
static const char *access_hint(int rc)
{
	return rc == -EACCES || rc == -EROFS ? " (give this user write access to it, or choose another --spool)" : "";
}

/* -EPERM: its directory refused (the message says how to fix it); -EEXIST:
 * PATH is not a regular file of ours, a usage error */
static int textfile_error_code(int rc)
{
	return rc == -EACCES || rc == -EPERM || rc == -EROFS ? EXIT_ACCESS : EXIT_USAGE;
}

static int spool_error_code(int rc)
{
	if (rc == -EACCES || rc == -EPERM || rc == -EROFS)
		return EXIT_ACCESS;
	if (rc == -ENOSPC || rc == -EDQUOT || rc == -EIO || rc == -EWOULDBLOCK)
		return EXIT_DEFERRED;
	return EXIT_USAGE;
}

int export_run_check(const struct export_opts *o, FILE *log)
{
	if (o->dry_run)
		return EXIT_OK;
	char err[1400];
	int rc;
	if (o->prometheus_textfile[0] && (rc = export_prom_check(o->prometheus_textfile, err, sizeof(err))) < 0) {
		cli_log(log, "--prometheus-textfile: %s", err);
		return textfile_error_code(rc);
	}
	if (o->graphite[0]) {
		struct export_spool_opts so = { o->max_spool_bytes, o->max_age_s, (int)(o->lock_wait_s * 1000), o->no_resend };
		struct export_spool sp;
		if ((rc = export_spool_open(&sp, o->spool, &so, err, sizeof(err))) < 0) {
			cli_log(log, "%s%s", err, access_hint(rc));
			return spool_error_code(rc);
		}
		export_spool_close(&sp);
	}
	return EXIT_OK;
}

static int graphite(const struct export_opts *o, const struct export_name_opts *no, const char *lines,
                    size_t len, const struct export_input *in, FILE *log, struct export_result *r)
{
	int64_t now = in->now;
	struct export_spool_opts so = { o->max_spool_bytes, o->max_age_s, (int)(o->lock_wait_s * 1000), o->no_resend };
	struct export_spool sp;
	char err[1400];
	int rc = export_spool_open(&sp, o->spool, &so, err, sizeof(err));
	if (rc < 0) {
		cli_log(log, "%s%s", err, access_hint(rc));
		return spool_error_code(rc);
	}
	if (sp.note[0])
		fprintf(log, "export: spool %s: %s\n", sp.dir, sp.note);
	rc = export_spool_append(&sp, lines, len, err, sizeof(err));
	if (rc < 0) {
		cli_log(log, "%s; %" PRIu64 " points not spooled%s", err, r->lines, access_hint(rc));
		export_spool_close(&sp);
		return spool_error_code(rc);
	}
	r->spooled = r->lines;
	rc = export_spool_lock_send(&sp, err, sizeof(err));
	if (rc < 0) {
		cli_log(log, "%s; %" PRIu64 " points spooled for the next run", err, r->spooled);
		r->spool_bytes = export_spool_bytes(&sp);
		export_spool_close(&sp);
		return EXIT_DEFERRED;
	}
	/* the delivery budget starts once this run may deliver; reading the
	 * spool stops a second after the self-report pass's */
	long long deadline = mono_ms() + (long long)(o->timeout_s * 1000);
	sp.deadline_ms = deadline + 2000;
	struct export_send_timeouts t;
	export_send_timeouts_init(&t);
	int64_t min_ts = now - o->max_age_s;
	trim(&sp, r, now);
	struct export_delivery dl[EXPORT_DEST_MAX];
	for (int i = 0; i < r->ndest; i++)
		if ((r->dest[i].rc = export_spool_delivery_begin(&sp, r->dest[i].dest.key, &dl[i])) < 0)
			snprintf(r->dest[i].why, sizeof(r->dest[i].why), "read cursor: %s", strerror(-r->dest[i].rc));
	deliver_all(&sp, dl, r, &t, deadline, min_ts, 0);
	update_pending(&sp, r);

	/* self-report: spooled like any point, sent now where the first pass worked */
	char *self = NULL;
	size_t self_len = 0;
	FILE *f = open_memstream(&self, &self_len);
	if (f) {
		self_report(f, no, o, in, r);
		fclose(f);
		if (export_spool_append(&sp, self, self_len, err, sizeof(err)) == 0) {
			for (const char *c = self; c < self + self_len; c++)
				r->spooled += *c == '\n';
			deliver_all(&sp, dl, r, &t, deadline + 1000, min_ts, 1);
		}
		free(self);
	}
	trim(&sp, r, now);
	update_pending(&sp, r);
	char why[256];
	int foreign = export_spool_foreign(&sp, why, sizeof(why));
	if (foreign)
		fprintf(log, "export: spool %s: %d file%s left unread, not ours (%s): someone else writes to this "
		        "directory; remove them, and keep other users from writing here\n", sp.dir, foreign,
		        foreign > 1 ? "s" : "", why);
	export_spool_close(&sp);

	int code = EXIT_OK;
	for (int i = 0; i < r->ndest; i++) {
		const struct export_dest_result *x = &r->dest[i];
		/* pending lines with rc 0 came from a run that appended while this one
		 * delivered: that run waits for lock.send and delivers them itself */
		if (x->rc < 0) {
			code = EXIT_DEFERRED;
			cli_log(log, "%s: %" PRIu64 " points deferred to the next run (oldest %lld s old, %d "
			        "attempts, %" PRIu64 " sent, %" PRIu64 " expired): %s", x->dest.label, x->pending,
			        x->oldest_unsent ? (long long)(now - x->oldest_unsent) : 0LL, x->attempts, x->sent,
			        x->expired, x->why[0] ? x->why : "not sent");
		} else if (x->expired) {
			cli_log(log, "%s: %" PRIu64 " points expired before delivery (older than --max-age "
			        "or over --max-spool); %" PRIu64 " sent", x->dest.label, x->expired, x->sent);
		}
	}
	return code;
}

int export_run(const struct export_opts *o, const struct export_input *in, FILE *out, FILE *log,
               struct export_result *r)
{
	const struct expo_point *pts = in->pts;
	size_t n = in->n;
	memset(r, 0, sizeof(*r));
	char err[512];
	struct export_template tmpl;
	struct export_name_opts no = { &tmpl, o->tags };
	if (export_template_parse(&tmpl, o->tmpl[0] ? o->tmpl : NULL, err, sizeof(err)) < 0) {
		cli_log(log, "%s", err);
		return r->exit_code = EXIT_USAGE;
	}
	if (o->graphite[0]) {
		struct export_dest dests[EXPORT_DEST_MAX];
		int nd = export_dest_parse(o->graphite, dests, EXPORT_DEST_MAX, err, sizeof(err));
		if (nd < 0) {
			cli_log(log, "--graphite: %s", err);
			return r->exit_code = EXIT_USAGE;
		}
		r->ndest = nd;
		for (int i = 0; i < nd; i++)
			r->dest[i].dest = dests[i];
	} else if (!o->prometheus_textfile[0] && !o->dry_run) {
		cli_log(log, "nothing to do: give --graphite HOST:PORT, --prometheus-textfile PATH or --dry-run");
		return r->exit_code = EXIT_USAGE;
	}

	char *lines = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&lines, &len);
	if (!f) {
		cli_log(log, "open_memstream: %s", strerror(errno));
		return r->exit_code = EXIT_FAIL;
	}
	for (size_t i = 0; i < n; i++)
		add_line(f, &no, &pts[i], r);
	fclose(f);

	int code = EXIT_OK;
	if (o->dry_run) {
		fwrite(lines, 1, len, out);
	} else {
		/* a textfile holds one value per series: with --resolution 1s, the last
		 * second's (the points come second by second, each second's together) */
		size_t last = n;
		while (last > 0 && pts[last - 1].ts == pts[n - 1].ts)
			last--;
		int prc = o->prometheus_textfile[0] ? export_prom_write(o->prometheus_textfile, n ? pts + last : pts, n - last, err,
		                                                          sizeof(err)) : 0;
		if (prc < 0) {
			cli_log(log, "--prometheus-textfile: %s", err);
			code = textfile_error_code(prc);
		}
		if (r->ndest) {
			int g = graphite(o, &no, lines, len, in, log, r);
			if (g != EXIT_OK)
				code = g;
		}
	}
	free(lines);
	return r->exit_code = code;
}
