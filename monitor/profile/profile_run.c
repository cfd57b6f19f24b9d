/*
 * profile_run.c — target checks, one sampling run with the profile hook,
 * and the output file (shared by profile, record and report).
 */
#include "profile/profile_run.h"
#include "cli.h"
#include "util/clock.h"
#include "exitcodes.h"
#include "probe_access.h"
#include "probe_stat.h"
#include "probe_syscall.h"
#include "model/feed.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int profile_check_target(pid_t pid, pid_t tid)
{
	struct targets one = { .pids = { pid }, .npids = 1 };
	int rc = cli_check_pids(&one);   /* gone, or a kernel thread */
	if (rc < 0)
		rc = cli_check_access(&one);
	if (rc >= 0)
		return rc;
	struct probe_syscall p;
	int err = probe_syscall_open(&p, pid, tid ? tid : pid);
	probe_syscall_close(&p);
	if (err == 0)
		return -1;
	if (err == -EACCES || err == -EPERM) {
		char why[PROBE_ACCESS_TEXT_LEN];
		probe_access_explain(pid, why, sizeof(why));
		cli_error("access to thread %d refused: %s", (int)tid, why);
		return EXIT_ACCESS;
	}
	if (tid && probe_stat_read(pid, 0, &(struct probe_stat){ 0 }) == 0)
		cli_error("no thread %d in process %d", (int)tid, (int)pid);
	else
		cli_error("no process %d: %s", (int)pid, strerror(-err));
	return EXIT_NOTHING;
}

/* The one target has exited (a zombie counts: it will never run again). */
static int target_gone(void *arg)
{
	const struct profile_run_opts *o = arg;
	struct probe_stat st;
	if (probe_stat_read(o->pid, o->tid, &st) < 0)
		return 1;
	return st.state == 'Z' || st.state == 'X';
}

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

struct run_wait {
	const struct profile_run_opts *o;
	struct feed *f;
};

/* Ends the wait: a signal, the one target's exit, or the caller's poll. */
static int stop_now(void *arg)
{
	const struct run_wait *w = arg;
	if (stop_signal || (w->o->pid && target_gone((void *)w->o)))
		return 1;
	return w->o->poll ? w->o->poll(w->o->arg, w->f) : 0;
}

static int each_second(void *arg, int64_t sec)
{
	const struct run_wait *w = arg;
	return w->o->second(w->o->arg, w->f, sec);
}

int profile_run(const struct profile_run_opts *o, struct profile_run_result *res)
{
	memset(res, 0, sizeof(*res));
	struct cli_common c = *o->common;   /* its rate made explicit: the hook's and the sampler's */
	c.rate_hz = c.rate_hz ? c.rate_hz : PROFILE_DEFAULT_HZ;
	struct profile_live_opts lo = { .pid = o->pid, .tid = o->tid, .acc = o->acc, .rec = o->rec,
					.ring = o->ring, .rate_hz = c.rate_hz };
	struct profile_live *l = profile_live_new(&lo);
	if (!l) {
		cli_error("starting the unwinder: %s", strerror(errno));
		return -errno;
	}
	struct feed_opts how = { .all_threads = 1, .on_sample = profile_live_on_sample, .on_sample_arg = l,
				 .on_stall = profile_live_on_stall };
	struct feed *f;
	if (cli_feed_open(&c, &how, &f) >= 0) {
		profile_live_delete(l);
		return -EIO;
	}
	/* Ctrl-C or a TERM ends the sampling, not the program: the report of
	 * what was measured and a recording's trailer are still written. Only
	 * while sampling: a second one during the writing kills as usual. */
	static const int sigs[] = { SIGINT, SIGTERM };
	struct sigaction sa = { .sa_handler = on_stop }, old[2];
	sigemptyset(&sa.sa_mask);
	stop_signal = 0;
	for (int i = 0; i < 2; i++)
		sigaction(sigs[i], &sa, &old[i]);
	struct run_wait rw = { o, f };
	struct feed_follow wait = { .second = o->second ? each_second : NULL, .poll = stop_now, .arg = &rw,
				    .until_s = c.duration_s, .expect_s = o->second ? 0 : c.duration_s };
	int early = feed_follow(f, &wait) > 0;
	for (int i = 0; i < 2; i++)
		sigaction(sigs[i], &old[i], NULL);
	res->signal = stop_signal;
	res->gone = early && !res->signal;
	feed_stop(f);
	res->elapsed_s = feed_elapsed_s(f);
	feed_close(f);
	profile_live_stats(l, &res->st);
	profile_live_delete(l);
	/* a recording that could not be written is said once, with its
	 * path, when it is closed (profile_close_out) */
	if (res->st.err < 0 && !(o->rec && res->st.err != -ENOMEM)) {
		cli_error("keeping the samples: %s", strerror(-res->st.err));
		return res->st.err;
	}
	return 0;
}

int profile_run_verdict(const struct profile_run_opts *o, const struct profile_run_result *res)
{
	if (res->st.samples == 0 && res->st.no_access > 0) {
		char why[PROBE_ACCESS_TEXT_LEN];
		probe_access_explain(o->pid, why, sizeof(why));
		cli_error("every sample was refused: %s", why);
		return EXIT_ACCESS;
	}
	if (res->signal) {
		cli_error("interrupted by %s after %.1f s; what was measured is kept: %llu samples",
			  res->signal == SIGINT ? "SIGINT" : "SIGTERM", res->elapsed_s,
			  (unsigned long long)res->st.samples);
		return 128 + res->signal;
	}
	if (res->gone) {
		cli_error("%s %d exited after %.1f s; the report covers the %llu samples taken until then",
			  o->tid ? "thread" : "process", (int)(o->tid ? o->tid : o->pid), res->elapsed_s,
			  (unsigned long long)res->st.samples);
		return EXIT_NOTHING;
	}
	if (res->st.samples == 0) {
		cli_error("no samples: no target thread was seen");
		return EXIT_NOTHING;
	}
	return EXIT_OK;
}

static int to_stdout(const char *path)
{
	return !path || strcmp(path, "-") == 0;
}

int profile_check_output(const char *cmd, enum profile_format fmt, const char *path)
{
	if (fmt != PROFILE_FMT_PPROF || !to_stdout(path) || !isatty(STDOUT_FILENO))
		return -1;
	return cli_usage_error(cmd, "pprof is gzipped binary: not written to a terminal; use -o FILE or a pipe");
}

FILE *profile_open_out(const char *path)
{
	if (to_stdout(path))
		return stdout;
	FILE *f = fopen(path, "w");
	if (!f)
		cli_error("open(%s): %s", path, strerror(errno));
	return f;
}

int profile_close_out(FILE *f, const char *path, int write_err)
{
	/* -EIO only says that a write failed: the flush finds out why */
	int known = write_err == -EIO ? 0 : write_err;
	if (!to_stdout(path))
		return cli_close_output(f, path, known) < 0 ? EXIT_FAIL : EXIT_OK;
	if (known < 0) {
		cli_error("writing the output: %s", strerror(-known));
		return EXIT_FAIL;
	}
	return cli_finish_output(EXIT_OK);
}

int profile_emit(const char *path, enum profile_format fmt, struct profile_tree *t, const struct profile_meta *meta,
		 const struct profile_acc *acc)
{
	FILE *f = profile_open_out(path);
	return f ? profile_emit_to(f, path, fmt, t, meta, acc) : EXIT_FAIL;
}

int profile_emit_to(FILE *f, const char *path, enum profile_format fmt, struct profile_tree *t,
		    const struct profile_meta *meta, const struct profile_acc *acc)
{
	int err = profile_write(f, fmt, t, meta, NULL);
	if (err == 0 && acc && fmt == PROFILE_FMT_TEXT)
		err = profile_acc_write_stalls(acc, f);
	if (err == -ENOMEM) {
		cli_error("writing the profile: %s", strerror(ENOMEM));
		if (!to_stdout(path))
			fclose(f);
		return EXIT_FAIL;
	}
	return profile_close_out(f, path, err);
}

/* ---- options shared by profile, record and report ---- */

int profile_cli_pid(void *ctx, const char *arg, char *msg, size_t len)
{
	struct profile_cli *c = ctx;
	double v;
	if (c->pid || cli_parse_number(arg, 1, 4194304, &v) < 0 || v != floor(v)) {
		snprintf(msg, len, c->pid ? "-p takes one process id, given once" : "invalid process id '%s'", arg);
		return -1;
	}
	c->pid = (pid_t)v;
	return targets_add_pids(&c->common.targets, arg, msg, len) < 0 ? -1 : 0;
}

int profile_cli_tid(void *ctx, const char *arg, char *msg, size_t len)
{
	double v;
	if (cli_parse_number(arg, 1, 4194304, &v) == 0 && v == floor(v)) {
		((struct profile_cli *)ctx)->tid = (pid_t)v;
		return 0;
	}
	snprintf(msg, len, "invalid thread id '%s'", arg);
	return -1;
}

int profile_cli_duration(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("duration", arg, 0.05, 86400, &((struct cli_common *)ctx)->duration_s, msg, len);
}

int profile_cli_format(void *ctx, const char *arg, char *msg, size_t len)
{
	if (profile_format_parse(arg, &((struct profile_cli *)ctx)->fmt) == 0)
		return 0;
	snprintf(msg, len, "unknown format '%s': expected " PROFILE_FORMAT_LIST, arg);
	return -1;
}

int profile_cli_output(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	((struct profile_cli *)ctx)->out = arg;
	return 0;
}

int profile_cli_record(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	((struct profile_cli *)ctx)->record = arg;
	return 0;
}


int profile_cli_threads(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)arg, (void)msg, (void)len;
	((struct profile_cli *)ctx)->threads = 1;
	return 0;
}
