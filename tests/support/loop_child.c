/*
 * loop_child.c — loop_truth children and a model-like sampler over
 * probe_loop_classify (shared by tests/test_probe_loop.c and
 * bench/idle_truth.c; no Criterion in here).
 */
#include "loop_child.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe_schedstat.h"

/* build/{tests,bench}/NAME -> build/examples/loop_truth */
static int truth_path(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	char *dir = dirname(dirname(exe));
	return snprintf(buf, len, "%s/examples/loop_truth", dir) < (int)len ? 0 : -1;
}

pid_t tloop_spawn(const char *kase, double block, double work, double seconds, FILE **out)
{
	char prog[PATH_MAX], b[32], w[32], s[32];
	int p[2];
	if (truth_path(prog, sizeof(prog)) < 0 || pipe(p) < 0)
		return -1;
	snprintf(b, sizeof(b), "%.4f", block);
	snprintf(w, sizeof(w), "%.4f", work);
	snprintf(s, sizeof(s), "%.3f", seconds);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		dup2(p[1], STDOUT_FILENO);
		close(p[0]);
		close(p[1]);
		execl(prog, prog, "--case", kase, "--block", b, "--work", w, "--seconds", s, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out = fdopen(p[0], "r");
	char line[128];
	if (!*out || !fgets(line, sizeof(line), *out) || strncmp(line, "ready", 5) != 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		if (*out)
			fclose(*out);
		return -1;
	}
	return pid;
}

int tloop_result(pid_t pid, FILE *out, double *idle_pct, double *blocked_pct)
{
	char line[256];
	int ok = 0;
	while (fgets(line, sizeof(line), out))
		if (sscanf(line, "self idle_pct %lf blocked_pct %lf", idle_pct, blocked_pct) == 2)
			ok = 1;
	fclose(out);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return ok && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count(struct tloop_measure *m, const struct probe_verdict *v)
{
	int i;
	for (i = 0; i < m->nkeys; i++) {
		struct tloop_key *k = &m->keys[i];
		if (k->cls == v->cls && k->nr == v->nr && k->fd == v->fd && k->wait == v->wait)
			break;
	}
	if (i == m->nkeys) {
		if (m->nkeys == TLOOP_KEYS)
			return;
		m->keys[m->nkeys++] = (struct tloop_key){ v->nr, v->fd, v->cls, v->wait, v->fd_ino, 0 };
	}
	m->keys[i].n++;
	while (i > 0 && m->keys[i].n > m->keys[i - 1].n) {
		struct tloop_key t = m->keys[i];
		m->keys[i] = m->keys[i - 1];
		m->keys[--i] = t;
	}
}

/* As the model: running = schedstat's Δ(run + wait) / Δwall, exactly; the
 * samples off the CPU split the rest between poll, blocked and other. */
int tloop_measure(pid_t pid, double seconds, int period_us, struct tloop_measure *m)
{
	struct probe_syscall p;
	struct probe_schedstat_file f;
	struct probe_schedstat s0, s1;
	struct probe_loop loop;
	long poll = 0, blocked = 0, other = 0;
	memset(m, 0, sizeof(*m));
	m->loop_fd = -1;
	int err = probe_syscall_open(&p, pid, pid);
	if (err < 0)
		return err;
	if ((err = probe_schedstat_open(&f, pid, pid)) < 0 || (err = probe_schedstat_sample(&f, &s0)) < 0) {
		probe_syscall_close(&p);
		return err;
	}
	probe_loop_init(&loop, pid, pid);
	/* as the monitor's sampler: real-time when allowed, so that its wakeups
	 * do not wait out the loop's busy phases */
	struct sched_param sp0, rt = { .sched_priority = 1 };
	int policy0;
	pthread_getschedparam(pthread_self(), &policy0, &sp0);
	int realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt) == 0;
	uint64_t t0 = mono_ns(), end = t0 + (uint64_t)(seconds * 1e9);
	unsigned seed = (unsigned)pid;
	while (mono_ns() < end) {
		struct probe_sc_sample smp;
		struct probe_verdict v;
		if (probe_syscall_sample(&p, &smp) < 0 || smp.state == PROBE_SC_GONE)
			break;
		if (probe_loop_classify(&loop, &smp, -1, &v) == -EAGAIN) {
			m->resamples++;
			continue;
		}
		m->samples++;
		m->basis = v.basis;
		m->loop_fd = v.loop_fd;
		count(m, &v);
		if (v.cls == PROBE_POLL)
			poll++;
		else if (v.cls == PROBE_BLOCKED)
			blocked++;
		else if (v.cls != PROBE_RUNNING)
			other++;
		/* randomized intervals around the period: no aliasing with the loop */
		usleep((useconds_t)(period_us / 2 + rand_r(&seed) % (unsigned)period_us));
	}
	uint64_t t1 = mono_ns();
	err = probe_schedstat_sample(&f, &s1);
	if (realtime)
		pthread_setschedparam(pthread_self(), policy0, &sp0);
	probe_loop_done(&loop);
	probe_schedstat_close(&f);
	probe_syscall_close(&p);
	if (err < 0)
		return err;
	double running = (double)(s1.run_ns - s0.run_ns + s1.wait_ns - s0.wait_ns) / (double)(t1 - t0);
	if (running > 1)
		running = 1;
	m->cpu_wait_pct = 100.0 * (double)(s1.wait_ns - s0.wait_ns) / (double)(t1 - t0);
	long off = poll + blocked + other;
	if (off == 0)
		return -ENODATA;
	m->idle_pct = 100 * (1 - running) * (double)poll / (double)off;
	m->blocked_pct = 100 * (1 - running) * (double)blocked / (double)off;
	return 0;
}
