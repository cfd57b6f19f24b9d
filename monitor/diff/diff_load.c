/*
 * diff_load.c — one run of a diff: a recording replayed through the feed
 * (the seconds check would judge it on, every metric check may name,
 * through the same evaluator), or a --json document (diff_json.c).
 */
#include "diff/diff.h"
#include "check/check_series.h"
#include "cli.h"
#include "model/feed.h"
#include "model/track.h"
#include "util/textsafe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REC_MAGIC "loopstat-record "

const struct check_metric *diff_metrics(size_t *n)
{
	return check_series_metrics(n);
}

void diff_run_done(struct diff_run *r)
{
	free(r->u);
	r->u = NULL;
	r->n = 0;
}

/* Every worker row check may name, over [lo, hi] of trs (one worker, or a
 * service's pooled). */
static int eval_unit(struct diff_unit *u, const struct track *const *trs, size_t ntr, int64_t lo, int64_t hi)
{
	size_t nm;
	const struct check_metric *cm = diff_metrics(&nm);
	memset(u->est, 0, sizeof(u->est));
	for (size_t i = 0; i < nm && lo <= hi; i++) {   /* no whole second: nothing measured */
		const struct metric *m = metric_find(cm[i].name);
		if (!m)
			continue;   /* a fleet roll-up: no unit has it */
		int err = track_eval(m, NULL, trs, ntr, lo, hi, EVAL_INTERVAL, &u->est[m - metric_worker]);
		if (err < 0)
			return err;
	}
	return 0;
}

static const struct worker_view *view_of(const struct model *m, const struct track *t)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->workers[i].pid == t->pid && m->workers[i].tid == t->tid)
			return &m->workers[i];
	return NULL;
}

static int same_service(const void *x, const void *y)
{
	const struct track *const *a = x, *const *b = y;
	return strcmp((*a)->service, (*b)->service);
}

/* Workers and services from a followed feed's tracks. 0 or -errno. */
static int units_of(struct diff_run *r, struct feed *f)
{
	const struct tracks *ts = feed_tracks(f);
	int64_t lo = feed_whole_after(feed_start_s(f)), hi = ts->now_sec - 1;
	struct model m;
	int have_model = feed_now(f, 0, 0, &m) == 0;
	if (hi < lo)
		cli_error("%s holds no whole second: its workers' figures are unknown", r->path);
	const struct track **by = calloc(ts->n ? ts->n : 1, sizeof(*by));
	r->u = calloc(2 * ts->n + 1, sizeof(*r->u));
	int err = by && r->u ? 0 : -ENOMEM;
	for (size_t i = 0; i < ts->n && !err; i++) {
		const struct track *t = by[i] = &ts->v[i];
		struct diff_unit *u = &r->u[r->n++];
		const struct worker_view *w = have_model ? view_of(&m, t) : NULL;
		snprintf(u->service, sizeof(u->service), "%s", t->service);
		snprintf(u->name, sizeof(u->name), "%s", t->name);
		snprintf(u->tag, sizeof(u->tag), "%s", t->tag);
		snprintf(u->runtime, sizeof(u->runtime), "%s", w && w->runtime ? w->runtime : "");
		snprintf(u->role, sizeof(u->role), "%s", w && w->role ? w->role : "");
		textsafe(u->service);   /* a crafted recording's names reach the terminal */
		textsafe(u->name);
		textsafe(u->tag);
		u->pid = t->pid;
		u->tid = t->tid;
		err = eval_unit(u, &t, 1, lo, hi);
	}
	/* each service once, its workers pooled */
	if (!err)
		qsort(by, ts->n, sizeof(*by), same_service);
	for (size_t i = 0; i < ts->n && !err;) {
		size_t j = i;
		while (j < ts->n && strcmp(by[j]->service, by[i]->service) == 0)
			j++;
		struct diff_unit *u = &r->u[r->n++];
		u->is_service = 1;
		snprintf(u->service, sizeof(u->service), "%s", by[i]->service);
		textsafe(u->service);
		err = eval_unit(u, &by[i], j - i, lo, hi);
		i = j;
	}
	if (have_model)
		model_done(&m);
	free(by);
	return err;
}

static int load_recording(struct diff_run *r, const char *path)
{
	struct cli_common c;
	char msg[256];
	cli_common_init(&c);
	c.replay = path;
	cli_set_all(&c, NULL, msg, sizeof(msg));   /* every loop a recording holds, clients too */
	struct feed *f = NULL;
	struct feed_opts how = { .keep_seconds = 1 };
	int rc = cli_feed_open(&c, &how, &f);
	if (rc < 0) {
		struct feed_follow ff = { 0 };
		int err = feed_follow(f, &ff);
		feed_stop(f);
		if (err == FEED_ENDED)
			err = units_of(r, f);
		if (err < 0) {
			cli_error("reading %s: %s", path, strerror(-err));
			rc = EXIT_FAIL;
		} else if (feed_truncated(f)) {
			cli_error("%s was cut short (no end record): compared as far as it goes", path);
		}
		feed_close(f);
	}
	cli_common_done(&c);
	return rc;
}

int diff_run_load(struct diff_run *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	FILE *f = fopen(path, "r");
	if (!f) {
		int e = errno;
		cli_error("open(%s): %s", path, strerror(e));
		return e == ENOENT ? EXIT_USAGE : EXIT_FAIL;
	}
	char head[sizeof(REC_MAGIC)] = "";
	size_t got = fread(head, 1, sizeof(head) - 1, f);
	size_t skip = 0;
	while (head[skip] && strchr(" \t\r\n", head[skip]))
		skip++;
	fclose(f);
	int rc;
	if (got == sizeof(head) - 1 && memcmp(head, REC_MAGIC, got) == 0) {
		r->recording = 1;
		rc = load_recording(r, path);
	} else if (head[skip] == '{' || (skip == got && got > 0)) {   /* JSON, or leading space: json-c judges */
		char why[512];
		rc = diff_json_load(r, path, why, sizeof(why)) < 0 ? EXIT_USAGE : -1;
		if (rc >= 0)
			cli_error("%s: %s", path, why);
	} else {
		cli_error("%s: neither a recording (loopstat record) nor a list or check --json document", path);
		rc = EXIT_USAGE;
	}
	if (rc < 0) {
		size_t workers = 0;
		for (size_t i = 0; i < r->n; i++)
			workers += !r->u[i].is_service;
		if (!workers) {
			cli_error("%s holds no worker to compare", path);
			rc = EXIT_NOTHING;
		}
	}
	if (rc >= 0)
		diff_run_done(r);
	return rc;
}
