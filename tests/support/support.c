/*
 * support.c — helpers shared by the Criterion suites.
 */
#include "support.h"
#include "model/model.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *ts_tmpdir(const char *tag)
{
	char tmpl[128];
	snprintf(tmpl, sizeof(tmpl), "/tmp/loopstat-test-%s-XXXXXX", tag);
	char *dir = mkdtemp(tmpl);
	cr_assert(dir, "mkdtemp(%s): %s", tmpl, strerror(errno));
	return strdup(dir);
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st; (void)type; (void)ftw;
	remove(path);
	return 0;
}

void ts_rmtree_free(char *dir)
{
	if (!dir)
		return;
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

uint64_t ts_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

long long ts_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int ts_idle_agrees(double sampled, double own, double cpu_wait, double err)
{
	return sampled <= own + err && sampled >= own - err - fmax(cpu_wait, 0);
}

const char *ts_loopstat_bin(void)
{
	const char *bin = getenv("LOOPSTAT_BIN");
	return bin && *bin ? bin : "build/loopstat";
}

int ts_write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, buf, len);
	int err = n == (ssize_t)len ? 0 : -EIO;
	close(fd);
	return err;
}

int ts_run(char *const argv[], char **out, int timeout_ms)
{
	char *const *argvs[] = { argv };
	char *outs[1];
	int rc;
	ts_run_all(1, argvs, outs, &rc, timeout_ms);
	if (out)
		*out = outs[0];
	else
		free(outs[0]);
	return rc;
}

void ts_run_all(int n, char *const *const argvs[], char **outs, int *rcs, int timeout_ms)
{
	struct ts_job {
		pid_t pid;
		int fd;
		size_t len, cap;
	} *j = calloc((size_t)n, sizeof(*j));
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	cr_assert(j && p);
	for (int i = 0; i < n; i++) {
		int pfd[2];
		cr_assert(pipe2(pfd, O_CLOEXEC) == 0);
		j[i].pid = fork();
		cr_assert(j[i].pid >= 0);
		if (j[i].pid == 0) {
			dup2(pfd[1], STDOUT_FILENO);
			execv(argvs[i][0], argvs[i]);
			_exit(127);
		}
		close(pfd[1]);
		j[i].fd = pfd[0];
		outs[i] = malloc(j[i].cap = 4096);
	}

	long long deadline = ts_now_ms() + timeout_ms;
	int open_fds = n, timed_out = 0;
	while (open_fds > 0) {
		long long left = deadline - ts_now_ms();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = j[i].fd, .events = POLLIN };
		if (poll(p, (nfds_t)n, (int)left) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (j[i].fd < 0 || !p[i].revents)
				continue;
			if (j[i].len + 1024 > j[i].cap)
				outs[i] = realloc(outs[i], j[i].cap *= 2);
			ssize_t r = read(j[i].fd, outs[i] + j[i].len, j[i].cap - j[i].len - 1);
			if (r > 0) {
				j[i].len += (size_t)r;
				continue;
			}
			close(j[i].fd);
			j[i].fd = -1;   /* poll skips negative fds */
			open_fds--;
		}
	}
	for (int i = 0; i < n; i++) {
		if (j[i].fd >= 0) {
			close(j[i].fd);
			kill(j[i].pid, SIGKILL);
		}
		outs[i][j[i].len] = '\0';
		int status;
		waitpid(j[i].pid, &status, 0);
		rcs[i] = timed_out && j[i].fd >= 0 ? -1 : !WIFEXITED(status) ? -1 : WEXITSTATUS(status);
	}
	free(p);
	free(j);
}

void ts_sh_all(int n, const char *const cmds[], char **outs, int *rcs, int timeout_ms)
{
	char *(*argv)[4] = calloc((size_t)n, sizeof(*argv));
	char *const **argvs = calloc((size_t)n, sizeof(*argvs));
	cr_assert(argv && argvs);
	for (int i = 0; i < n; i++) {
		argv[i][0] = "/bin/sh";
		argv[i][1] = "-c";
		argv[i][2] = (char *)cmds[i];
		argvs[i] = argv[i];
	}
	ts_run_all(n, argvs, outs, rcs, timeout_ms);
	free(argvs);
	free(argv);
}

int ts_shm_segment(const char *dir, pid_t pid, char *buf, size_t len)
{
	char legacy[64], prefix[64];
	snprintf(legacy, sizeof(legacy), "loopstat.%d", (int)pid);
	snprintf(prefix, sizeof(prefix), "loopstat.%d.", (int)pid);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	int err = -ENOENT;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, legacy) == 0 || strncmp(de->d_name, prefix, strlen(prefix)) == 0) {
			snprintf(buf, len, "%s/%s", dir, de->d_name);
			err = 0;
			break;
		}
	closedir(d);
	return err;
}

const char *ts_stat_fields(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	size_t n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *close = strrchr(buf, ')');
	return close && close[1] == ' ' && close[2] ? close + 2 : NULL;
}

char *ts_read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	cr_assert(f, "open(%s): %s (tests run from the source tree)", path, strerror(errno));
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

const struct worker_view *ts_find_tid(const struct model *m, pid_t tid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->workers[i].tid == tid)
			return &m->workers[i];
	return NULL;
}

/* read(2)-family calls this thread has made ("syscr" of /proc/thread-self/io,
 * pread included), less the one read of that file itself. */
long ts_read_calls(void)
{
	char buf[512];
	int fd = open("/proc/thread-self/io", O_RDONLY);
	cr_assert_geq(fd, 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	const char *p = strstr(buf, "syscr:");
	cr_assert(p);
	return strtol(p + 6, NULL, 10);
}

int ts_loopstat(char **out, int timeout_ms, const char *a0, ...)
{
	char *argv[24] = { (char *)ts_loopstat_bin() };
	int n = 1;
	va_list ap;
	va_start(ap, a0);
	for (const char *a = a0; a && n < 23; a = va_arg(ap, const char *))
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n] = NULL;
	char *tmp = NULL;
	int rc = ts_run(argv, out ? out : &tmp, timeout_ms);
	free(tmp);
	return rc;
}

char *ts_path_in(const char *dir, const char *name)
{
	char *p = NULL;
	cr_assert(asprintf(&p, "%s/%s", dir, name) > 0);
	return p;
}
