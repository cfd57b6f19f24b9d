/*
 * lag_truth — how well does sampling from outside measure a loop's busy
 * spans? loopstat list --json (default 100 Hz: a 10-ms sampling period)
 * against the spans an uninstrumented epoll loop measures itself
 * (examples/loop_truth.c --spans), for known span distributions whose 99th
 * percentile is 4 sampling periods or more, and one whose spans are all
 * one fixed length (the hardest shape for a percentile: every span's
 * error of about a period shows in its tail).
 *
 * Figures: lag_p99_err_pct, the worst |sampled p99 - own p99| / own p99
 * over the distributions (goal <= 15); lag_p99_err_pct_fixed, the same for
 * the fixed-length spans; lag_max_err_pct, the worst error of lag_max_ms.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define SECONDS 8

static char build[512];

struct kase {
	const char *spec;   /* loop_truth --spans */
	const char *what;
	int fixed;          /* all spans one length */
};

static const struct kase cases[] = {
	{ "1x49,40x1", "1-ms spans, one of 40 ms in 50 (the issue's loop)", 0 },
	{ "10x95,100x5", "10-ms spans, 5 % of 100 ms", 0 },
	{ "u40-120x1", "uniform 40..120 ms", 0 },
	{ "e80x1", "exponential, mean 80 ms", 0 },
	{ "40x1", "all 40 ms (4 periods)", 1 },
	{ "80x1", "all 80 ms (8 periods)", 1 },
};

static int one(const struct kase *k, double *err_p99, double *err_max)
{
	char truth_bin[600], mon[600], secs[16], dur[16], pid_s[16];
	static char out[1 << 16], own[4096];
	snprintf(truth_bin, sizeof(truth_bin), "%s/examples/loop_truth", build);
	snprintf(mon, sizeof(mon), "%s/loopstat", build);
	snprintf(secs, sizeof(secs), "%.1f", SECONDS + 0.6);
	snprintf(dur, sizeof(dur), "%d", SECONDS);
	char *targv[] = { truth_bin, "--case", "nested", "--spans", (char *)k->spec, "--idle-ms", "20", "--seconds",
			  secs, NULL };
	int fd, mfd;
	pid_t child = bench_spawn(targv, NULL, &fd);
	if (child < 0)
		return -1;
	usleep(300000);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)child);
	char *margv[] = { mon, "list", "--json", "--duration", dur, "-p", pid_s, NULL };
	pid_t monitor = bench_spawn(margv, NULL, &mfd);
	out[0] = '\0';
	if (monitor > 0) {
		bench_slurp(mfd, out, sizeof(out));
		waitpid(monitor, NULL, 0);
	}
	bench_slurp(fd, own, sizeof(own));
	waitpid(child, NULL, 0);
	unsigned long nspans;
	double o50, o99, omax;
	const char *l = strstr(own, "spans n ");
	if (!l || sscanf(l, "spans n %lu p50 %lf p99 %lf max %lf", &nspans, &o50, &o99, &omax) != 4)
		return -1;
	double s50 = bench_json_num(out, "lag_p50_ms"), s99 = bench_json_num(out, "lag_p99_ms");
	double smax = bench_json_num(out, "lag_max_ms");
	if (isnan(s99))
		return -1;
	*err_p99 = 100 * fabs(s99 - o99) / o99;
	*err_max = 100 * fabs(smax - omax) / omax;
	printf("%-12s %-48s spans %5lu  own p50 %7.2f p99 %7.2f max %7.2f  sampled p50 %7.2f p99 %7.2f max %7.2f"
	       "  p99 error %5.1f%%  max error %5.1f%%\n",
	       k->spec, k->what, nspans, o50, o99, omax, s50, s99, smax, *err_p99, *err_max);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	bench_build_dir(argv[0], build, sizeof(build));
	printf("loopstat list --json at 100 Hz (10-ms period) against loop_truth --spans, %d s each\n", SECONDS);
	double worst = 0, worst_fixed = 0, worst_max = 0;
	int failed = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double e99, emax;
		if (one(&cases[i], &e99, &emax) < 0) {
			printf("%-12s gave no figure\n", cases[i].spec);
			failed++;
			continue;
		}
		if (cases[i].fixed)
			worst_fixed = fmax(worst_fixed, e99);
		else
			worst = fmax(worst, e99);
		worst_max = fmax(worst_max, emax);
	}
	printf("figure lag_p99_err_pct %.1f %%\n", worst);
	printf("figure lag_p99_err_pct_fixed %.1f %%\n", worst_fixed);
	printf("figure lag_max_err_pct %.1f %%\n", worst_max);
	return failed ? 1 : 0;
}
