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
#include "collect/session.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int profile_check_target(pid_t pid, pid_t tid)
{
	struct probe_syscall p;
	int err = probe_syscall_open(&p, pid, tid ? tid : pid);
	probe_syscall_close(&p);
	if (err == 0)
		return -1;
	if (err == -EACCES || err == -EPERM) {
		char why[PROBE_ACCESS_TEXT_LEN];
		probe_access_explain(pid, why, sizeof(why));
		fprintf(stderr, "loopstat: access to pid %d refused: %s\n", (int)pid, why);
		return EXIT_ACCESS;
	}
	if (tid && probe_stat_read(pid, 0, &(struct probe_stat){ 0 }) == 0)
		fprintf(stderr, "loopstat: no thread %d in process %d\n", (int)tid, (int)pid);
	else
		fprintf(stderr, "loopstat: no process %d: %s\n", (int)pid, strerror(-err));
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

int profile_run(const struct profile_run_opts *o, struct profile_run_result *res)
{
	memset(res, 0, sizeof(*res));
	struct profile_live_opts lo = { .pid = o->pid, .tid = o->tid, .acc = o->acc, .rec = o->rec };
	struct profile_live *l = profile_live_new(&lo);
	if (!l) {
		fprintf(stderr, "loopstat: starting the unwinder: %s\n", strerror(errno));
		return -errno;
	}
	struct session_opts so = { .targets = o->targets, .rate_hz = o->rate_hz, .all_threads = 1,
				   .on_sample = profile_live_on_sample, .on_sample_arg = l };
	struct session se;
	int err = session_start(&se, &so);
	if (err < 0) {
		fprintf(stderr, "loopstat: starting the sampler: %s\n", strerror(-err));
		profile_live_delete(l);
		return err;
	}
	res->gone = session_wait_unless(&se, o->duration_s, o->pid ? target_gone : NULL, (void *)o);
	session_stop(&se);
	res->elapsed_s = (double)mono_ns() / 1e9 - se.started_s;
	session_end(&se);
	profile_live_stats(l, &res->st);
	profile_live_delete(l);
	if (res->st.err < 0) {
		fprintf(stderr, "loopstat: keeping the samples: %s\n", strerror(-res->st.err));
		return res->st.err;
	}
	return 0;
}

int profile_run_verdict(const struct profile_run_opts *o, const struct profile_run_result *res)
{
	if (res->st.samples == 0 && res->st.no_access > 0) {
		char why[PROBE_ACCESS_TEXT_LEN];
		probe_access_explain(o->pid, why, sizeof(why));
		fprintf(stderr, "loopstat: every sample was refused: %s\n", why);
		return EXIT_ACCESS;
	}
	if (res->gone) {
		fprintf(stderr, "loopstat: %s %d exited after %.1f s; the report covers the %llu samples taken until then\n",
			o->tid ? "thread" : "process", (int)(o->tid ? o->tid : o->pid), res->elapsed_s,
			(unsigned long long)res->st.samples);
		return EXIT_NOTHING;
	}
	if (res->st.samples == 0) {
		fprintf(stderr, "loopstat: no samples: no target thread was seen\n");
		return EXIT_NOTHING;
	}
	return EXIT_OK;
}

static int to_stdout(const char *path)
{
	return !path || strcmp(path, "-") == 0;
}

FILE *profile_open_out(const char *path)
{
	if (to_stdout(path))
		return stdout;
	FILE *f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "loopstat: open(%s): %s\n", path, strerror(errno));
	return f;
}

int profile_close_out(FILE *f, const char *path, int write_err)
{
	if (to_stdout(path))
		return cli_finish_output(EXIT_OK);
	int bad = write_err < 0 || ferror(f);
	int err = bad ? (errno ? errno : EIO) : 0;
	if (fclose(f) != 0 && !bad) {
		bad = 1;
		err = errno;
	}
	if (!bad)
		return EXIT_OK;
	fprintf(stderr, "loopstat: writing %s: %s\n", path, strerror(err));
	return EXIT_FAIL;
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
		fprintf(stderr, "loopstat: writing the profile: %s\n", strerror(ENOMEM));
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
	struct cli_common *c = ctx;
	if (cli_parse_number(arg, 0.05, 86400, &c->duration_s) == 0)
		return 0;
	snprintf(msg, len, "invalid duration '%s': expected seconds (0.05 to 86400)", arg);
	return -1;
}

int profile_cli_format(void *ctx, const char *arg, char *msg, size_t len)
{
	if (profile_format_parse(arg, &((struct profile_cli *)ctx)->fmt) == 0)
		return 0;
	snprintf(msg, len, "unknown format '%s': expected text, folded, speedscope, svg or json", arg);
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

