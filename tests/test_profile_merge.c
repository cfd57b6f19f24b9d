/* profile's text and svg show identical threads once ("3 threads: ..."), --threads keeps them apart, JSON always does; C++ frames are demangled. */
#include <criterion/criterion.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/support.h"

#define TIMEOUT_S 60

static int pipe_rd;

/* A C function under a C++ name, so the unwinder meets a mangled symbol
 * without a C++ compiler in the build: loopstat::test::park(). */
void park(void) __asm__("_ZN8loopstat4test4parkEv");
__attribute__((noinline, used)) void park(void)
{
	char c;
	/* syscall(2), not read(3): ASan's read interceptor unwinds unevenly */
	while (syscall(SYS_read, pipe_rd, &c, 1) != 0)
		;
	__asm__ volatile("" ::: "memory"); /* not a tail call: park stays on the stack */
}

static void *bio(void *name)
{
	pthread_setname_np(pthread_self(), name);
	park();
	return NULL;
}

static void *lonely(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "lonely");
	for (;;)
		nanosleep(&(struct timespec){ 10, 0 }, NULL);
	return NULL;
}

/* Three threads named bio_a..bio_c blocked in park()'s read of one pipe,
 * a fourth asleep elsewhere, the main thread in pause(). */
static pid_t spawn_bio(int *write_end)
{
	int p[2], ready[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		close(ready[0]);
		pipe_rd = p[0];
		static char *names[] = { "bio_a", "bio_b", "bio_c" };
		pthread_t t;
		for (int i = 0; i < 3; i++)
			pthread_create(&t, NULL, bio, names[i]);
		pthread_create(&t, NULL, lonely, NULL);
		(void)!write(ready[1], "r", 1);
		for (;;)
			pause();
	}
	close(p[0]);
	close(ready[1]);
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	usleep(200 * 1000); /* the threads reach their reads */
	*write_end = p[1];
	return pid;
}

static char *profile(pid_t pid, const char *fmt, int threads)
{
	char spid[16];
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	char *argv[] = { (char *)ts_loopstat_bin(), "profile", "-p", spid, "--duration", "1", "-f", (char *)fmt,
			 threads ? "--threads" : NULL, NULL };
	char *out = NULL;
	int rc = ts_run(argv, &out, 20000);
	cr_assert_eq(rc, 0, "profile -f %s exited %d: %s", fmt, rc, out ? out : "");
	return out;
}

static int count_of(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void stop(pid_t pid, int write_end)
{
	close(write_end);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(profile_merge, identical_threads_print_once_in_text_and_svg, .timeout = TIMEOUT_S)
{
	int w;
	pid_t pid = spawn_bio(&w);
	char *text = profile(pid, "text", 0);
	cr_expect(strstr(text, "3 threads: bio_a, bio_b, bio_c ("), "no merged thread in:\n%s", text);
	cr_expect_eq(count_of(text, " bio_b:"), 0, "bio_b still has its own tree:\n%s", text);
	cr_expect_eq(count_of(text, " lonely:"), 1, "the different thread stays apart:\n%s", text);
	/* the merged tree is one tree: its blocked read is 100% of its samples */
	const char *m = strstr(text, "3 threads:");
	cr_assert(m);
	cr_expect(strstr(m, "100.0%") && strstr(m, "read"), "merged tree:\n%s", m);

	char *svg = profile(pid, "svg", 0);
	cr_expect(strstr(svg, "3 threads: bio_a, bio_b, bio_c"), "svg has no merged thread");

	char *apart = profile(pid, "text", 1);
	cr_expect(strstr(apart, " bio_a:") && strstr(apart, " bio_b:") && strstr(apart, " bio_c:"),
		  "--threads shows each:\n%s", apart);
	cr_expect_null(strstr(apart, "threads:"), "--threads merged anyway:\n%s", apart);

	char *json = profile(pid, "json", 0);
	cr_expect(strstr(json, " bio_a\"") && strstr(json, " bio_c\"") && !strstr(json, "3 threads"),
		  "json keeps every thread");
	free(text);
	free(svg);
	free(apart);
	free(json);
	stop(pid, w);
}

Test(profile_merge, cxx_frames_are_demangled, .timeout = TIMEOUT_S)
{
	int w;
	pid_t pid = spawn_bio(&w);
	char *folded = profile(pid, "folded", 0);
	cr_expect(strstr(folded, "loopstat::test::park()"), "no demangled frame in:\n%s", folded);
	cr_expect_null(strstr(folded, "_ZN8loopstat"), "a mangled name is left:\n%s", folded);
	free(folded);
	stop(pid, w);
}
