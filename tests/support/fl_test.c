/*
 * fl_test.c — see fl_test.h.
 */
#include "fl_test.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

const char *fl_test_backend;

const char *const *fl_test_backends(void)
{
	static const char *all[] = { "io_uring", "libev", NULL };
	static const char *list[3];
	const char *only = getenv("FL_TEST_BACKEND");
	int n = 0;
	for (int i = 0; all[i]; i++) {
		if (only && *only && strcmp(only, all[i]) != 0)
			continue;
		if (fl_backend_available(all[i]))
			list[n++] = all[i];
	}
	list[n] = NULL;
	return list;
}

void fl_test_die_with(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
}

int fl_test_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *e;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

void fl_test_assert_no_leaks(void)
{
	struct fl_debug_counters c;
	fl_debug_counters(&c);
	cr_assert_eq(c.fibers, 0, "leaked fibers: %ld", (long)c.fibers);
	cr_assert_eq(c.stacks, 0, "leaked stacks: %ld", (long)c.stacks);
	cr_assert_eq(c.op_ctx, 0, "leaked op contexts: %ld", (long)c.op_ctx);
	cr_assert_eq(c.loops, 0, "loops still running: %ld", (long)c.loops);
}

void fl_test_run_opts(fl_fn main, void *arg, struct fl_options *opts)
{
	const char *const *b = fl_test_backends();
	cr_assert(b[0] != NULL, "no backend available");
	/* a write to a closed peer must return -EPIPE, not kill the test */
	signal(SIGPIPE, SIG_IGN);
	/* never leave segments in /dev/shm, even if the test dies */
	int own_shm = !getenv("LOOPSTAT_SHM_DIR");
	if (own_shm)
		fl_test_shm_setup();
	for (; *b; b++) {
		struct fl_options o = opts ? *opts : (struct fl_options){ 0 };
		o.backend = *b;
		fl_test_backend = *b;
		int fds = fl_test_fd_count();
		int err = fl_run(main, arg, &o, NULL);
		cr_assert_eq(err, 0, "fl_run(%s): %s", *b, strerror(-err));
		fl_test_assert_no_leaks();
		cr_assert_eq(fl_test_fd_count(), fds, "fd leak on %s", *b);
	}
	if (own_shm) {
		fl_test_shm_done();
		unsetenv("LOOPSTAT_SHM_DIR");
	}
}

void fl_test_run(fl_fn main, void *arg)
{
	fl_test_run_opts(main, arg, NULL);
}

static char shm_dir[64];

void fl_test_shm_setup(void)
{
	snprintf(shm_dir, sizeof(shm_dir), "/tmp/fltest.XXXXXX");
	cr_assert_not_null(mkdtemp(shm_dir));
	setenv("LOOPSTAT_SHM_DIR", shm_dir, 1);
}

void fl_test_shm_done(void)
{
	fl_stats_close();
	if (shm_dir[0])
		rmdir(shm_dir);
}

struct sockaddr_in fl_test_addr(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

int fl_test_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0);
	return fd;
}

int fl_test_listen(uint16_t *port)
{
	int fd = fl_test_socket(), one = 1;
	struct sockaddr_in a = fl_test_addr(0);
	socklen_t len = sizeof(a);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(fd, 4096), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}
