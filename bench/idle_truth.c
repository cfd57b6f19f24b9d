/*
 * idle_truth — does a synchronous wait pass for spare capacity? Sampled
 * idle% against the loop's own clock for uninstrumented loops whose
 * synchronous waits use the loop's own syscalls (examples/loop_truth.c:
 * poll() on a socket to a slow upstream, select(0,...) sleeps, ppoll on a
 * private pipe, a nested epoll loop, and a plain poll loop), at three duty
 * cycles each, on a quiet machine and again with every CPU loaded by
 * same-priority busy processes.
 *
 *   idle_truth            through the real CLI: loopstat list --json -p PID
 *   idle_truth --probe    through probe_loop_classify directly (the rule
 *                         the sampler is to use), with the model's split:
 *                         schedstat's runnable share is "running", the
 *                         samples share the rest (tests/support/loop_child.c)
 *
 * Figures: truth_max_abs_err_pp (quiet) and truth_max_abs_err_pp_loaded,
 * the worst |sampled idle - own idle| in points; goals <= 3 and <= 5.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#include "../tests/support/loop_child.h"

#define SECONDS 3.0

static char build[512];
static int probe_mode;

struct kase {
	const char *name;
	double block, work;
};

static const struct kase cases[] = {
	{ "sync_poll", 0.1, 0.1 }, { "sync_poll", 0.3, 0.1 }, { "sync_poll", 0.5, 0.1 },
	{ "em_select", 0.1, 0.1 }, { "em_select", 0.3, 0.1 }, { "em_select", 0.5, 0.1 },
	{ "ppoll", 0.1, 0.1 },     { "ppoll", 0.3, 0.1 },     { "ppoll", 0.5, 0.1 },
	{ "nested", 0.1, 0.1 },    { "nested", 0.3, 0.1 },    { "nested", 0.5, 0.1 },
	{ "plain", 0, 0.2 },       { "plain", 0, 0.5 },       { "plain", 0, 0.8 },
};

/* The string value of key (no escapes: loopstat's basis texts have none), or "-". */
static void json_str(const char *doc, const char *key, char *out, size_t len)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(doc, pat);
	snprintf(out, len, "-");
	if (!p || !(p = strchr(p + strlen(pat), '"')))
		return;
	const char *end = strchr(++p, '"');
	if (end)
		snprintf(out, len, "%.*s", (int)(end - p), p);
}

/* loopstat list --json over the run; idle_pct or NaN, and the loop's basis */
static double via_cli(pid_t pid, double *cpu_wait, char *basis, size_t len)
{
	char prog[600], pid_s[16], dur[16];
	static char out[1 << 16];
	int p[2];
	snprintf(prog, sizeof(prog), "%s/loopstat", build);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)pid);
	snprintf(dur, sizeof(dur), "%.0f", SECONDS);
	if (pipe(p) < 0)
		return NAN;
	pid_t mon = fork();
	if (mon == 0) {
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		execl(prog, prog, "list", "--json", "--rate", "1000", "--duration", dur, "-p", pid_s, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t got = 0;
	ssize_t n;
	while (got < sizeof(out) - 1 && (n = read(p[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(p[0]);
	waitpid(mon, NULL, 0);
	*cpu_wait = bench_json_num(out, "cpu_wait_pct");
	json_str(out, "loop_basis", basis, len);
	return bench_json_num(out, "idle_pct");
}

/* One case; returns |sampled - own| in points, NaN on failure. */
static double one(const struct kase *k, const char *label)
{
	FILE *out;
	pid_t pid = tloop_spawn(k->name, k->block, k->work, SECONDS + 1.0, &out);
	if (pid < 0)
		return NAN;
	usleep(300000); /* its steady state only */
	double sampled, cpu_wait = NAN, self_idle, self_blocked;
	char basis[96] = "-";
	if (probe_mode) {
		struct tloop_measure m;
		if (tloop_measure(pid, SECONDS, 1000, &m) < 0) {
			kill(pid, SIGKILL);
			tloop_result(pid, out, &self_idle, &self_blocked);
			return NAN;
		}
		sampled = m.idle_pct;
		cpu_wait = m.cpu_wait_pct;
		probe_loop_basis_text(m.basis, m.loop_fd, basis, sizeof(basis));
	} else {
		sampled = via_cli(pid, &cpu_wait, basis, sizeof(basis));
	}
	if (tloop_result(pid, out, &self_idle, &self_blocked) < 0)
		return NAN;
	double err = fabs(sampled - self_idle);
	printf("%-6s %-9s block %2.0f%% work %2.0f%%: sampled idle %6.2f%%  own %6.2f%% (blocked %5.2f%%)  "
	       "error %5.2f pp  cpu wait %5.2f%%  basis %s\n",
	       label, k->name, k->block * 100, k->work * 100, sampled, self_idle, self_blocked, err, cpu_wait, basis);
	fflush(stdout);
	return err;
}

/* Same-priority busy processes, one per CPU. */
static int load_start(pid_t *pids, int max)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	int started = 0;
	for (long i = 0; i < n && started < max; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (volatile unsigned long x = 0;; x++)
				;
		}
		if (pid > 0)
			pids[started++] = pid;
	}
	return started;
}

static void load_stop(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

static double pass(const char *label, int *failed)
{
	double worst = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double e = one(&cases[i], label);
		if (isnan(e))
			(*failed)++;
		else if (e > worst)
			worst = e;
	}
	return worst;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
		probe_mode = 1;
	} else if (argc > 1) {
		fprintf(stderr, "usage: idle_truth [--probe]\n");
		return 2;
	}
	bench_build_dir(argv[0], build, sizeof(build));
	printf("sampling through %s\n", probe_mode ? "probe_loop_classify (--probe)" : "loopstat list --json");
	int failed = 0;
	double quiet = pass("quiet", &failed);
	pid_t load[64];
	int nload = load_start(load, 64);
	double loaded = pass("loaded", &failed);
	load_stop(load, nload);
	if (failed)
		printf("%d case(s) gave no figure\n", failed);
	printf("figure truth_max_abs_err_pp %.2f pp\n", quiet);
	printf("figure truth_max_abs_err_pp_loaded %.2f pp\n", loaded);
	return failed ? 1 : 0;
}
