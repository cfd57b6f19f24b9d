/* The examples: echo_server picks a port, serves load's connections with every byte verified, and its shm counters move; bad usage exits 2. */
#include "support/fl_test.h"
#include "support/support.h"

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char examples[PATH_MAX - 64]; /* leaves room for "/name" */

/* build/tests/test_examples -> build/examples */
static void find_examples(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert(n > 0);
	exe[n] = '\0';
	dirname(dirname(exe)); /* in place */
	cr_assert(strlen(exe) < 3900);
	snprintf(examples, sizeof(examples), "%.3900s/examples", exe);
}

/* Starts prog with stdout on a pipe; returns its pid, *out the pipe. */
static pid_t spawn(char *const argv[], FILE **out)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		close(p[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	*out = fdopen(p[0], "r");
	return pid;
}

static uint64_t segment_switches(const char *dir, pid_t pid)
{
	char path[PATH_MAX];
	if (ts_shm_segment(dir, pid, path, sizeof(path)) < 0)
		return 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	struct stat st;
	fstat(fd, &st);
	if ((size_t)st.st_size < sizeof(struct loopstat_shm_header)) {
		close(fd); /* being created: not sized yet */
		return 0;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert(m != MAP_FAILED);
	const struct loopstat_shm_header *h = m;
	uint64_t sw = 0;
	for (unsigned i = 0; i < h->slot_count; i++) {
		const struct loopstat_shm_slot *s = (const void *)((const char *)m + h->header_size + i * h->slot_size);
		if (s->state == LOOPSTAT_SLOT_ACTIVE) {
			cr_assert_str_eq(s->tag, "echo");
			cr_assert_eq(s->backend, LOOPSTAT_BACKEND_IO_URING);
			sw += __atomic_load_n(&s->switches, __ATOMIC_RELAXED);
		}
	}
	munmap(m, (size_t)st.st_size);
	return sw;
}

Test(examples, echo_server_serves_load_and_publishes_counters, .timeout = 30)
{
	find_examples();
	char dir[] = "/tmp/fltest-ex-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	setenv("LOOPSTAT_SHM_DIR", dir, 1);
	setenv("FL_BACKEND", "io_uring", 1);

	char srv[PATH_MAX], ld[PATH_MAX], portarg[16];
	snprintf(srv, sizeof(srv), "%s/echo_server", examples);
	snprintf(ld, sizeof(ld), "%s/load", examples);
	FILE *so, *lo;
	pid_t sp = spawn((char *[]){ srv, "--port", "0", NULL }, &so);
	int port = 0;
	cr_assert_eq(fscanf(so, "port %d", &port), 1, "first line is \"port N\"");
	cr_assert(port > 0 && port < 65536);
	uint64_t before = segment_switches(dir, sp);

	snprintf(portarg, sizeof(portarg), "%d", port);
	pid_t lp = spawn((char *[]){ ld, "--port", portarg, "--connections", "200", "--size", "100", "--rate",
				     "0", "--duration", "1", NULL },
			 &lo);
	char line[256], said[2048] = "";
	long messages = -1, errors = -1;
	while (fgets(line, sizeof(line), lo)) {
		sscanf(line, "messages %ld", &messages);
		sscanf(line, "errors %ld", &errors);
		strncat(said, line, sizeof(said) - strlen(said) - 1);
	}
	int st;
	cr_assert_eq(waitpid(lp, &st, 0), lp);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "load failed (status %d): %s", st, said);
	cr_assert(messages > 200, "messages %ld", messages);
	cr_assert_eq(errors, 0);
	uint64_t after = segment_switches(dir, sp);
	cr_assert(after > before + (uint64_t)messages, "switches %lu -> %lu", (unsigned long)before,
		  (unsigned long)after);

	kill(sp, SIGTERM);
	cr_assert_eq(waitpid(sp, &st, 0), sp);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char seg[PATH_MAX];
	cr_assert_neq(ts_shm_segment(dir, sp, seg, sizeof(seg)), 0, "segment unlinked at exit");
	fclose(so);
	fclose(lo);
	rmdir(dir);
}

Test(examples, bad_usage_exits_2, .timeout = 10)
{
	find_examples();
	char srv[PATH_MAX], ld[PATH_MAX];
	snprintf(srv, sizeof(srv), "%s/echo_server", examples);
	snprintf(ld, sizeof(ld), "%s/load", examples);
	char *const *cases[] = {
		(char *[]){ srv, "--bogus", NULL },
		(char *[]){ ld, "--port", "0", NULL },
		(char *[]){ ld, "--port", "80", "--size", "0", NULL },
	};
	for (size_t i = 0; i < 3; i++) {
		FILE *o;
		pid_t p = spawn(cases[i], &o);
		int st;
		cr_assert_eq(waitpid(p, &st, 0), p);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "case %zu: status %d", i, st);
		fclose(o);
	}
}

/* Every --option an example's header documents is one it parses (a
 * getopt_long row or a "--name" it compares), so the usage a reader copies
 * from the top of the file works. */
Test(examples, header_options_are_parsed, .timeout = 10)
{
	const char *files[] = { "examples/counters.c", "examples/duty_cycle.c", "examples/echo_server.c",
				"examples/load.c", "examples/loop_truth.c", "examples/pool.c" };
	int seen = 0;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *src = ts_read_file(files[i]);
		cr_assert(src, "%s", files[i]);
		char *end = strstr(src, "#include");
		cr_assert(end);
		for (char *p = src; (p = strstr(p, "--")) && p < end; p += 2) {
			size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
			if (n == 0)
				continue;
			char row[80], cmp[80];
			snprintf(row, sizeof(row), "{ \"%.*s\",", (int)n, p + 2);
			snprintf(cmp, sizeof(cmp), "\"--%.*s\"", (int)n, p + 2);
			cr_expect(strstr(end, row) || strstr(end, cmp), "%s documents --%.*s but does not parse it",
				  files[i], (int)n, p + 2);
			seen++;
		}
		free(src);
	}
	cr_assert_gt(seen, 15);
}
