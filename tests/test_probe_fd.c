/* fd targets on real processes: pipes, epoll and io_uring fds, files, TCP/UDP (v4, v6) and unix sockets, the window cache. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "probe_classify.h"
#include "probe_fd.h"
#include "probe_proc.h"
#include "support/probe_child.h"

static int pipefd[2];

Test(probe_fd, blocked_pipe_read_has_pipe_target, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	cr_assert_eq(pipe(pipefd), 0);
	pid_t pid = tchild_fork(tchild_park_read, TCHILD_FD(pipefd[0]));
	cr_assert_gt(pid, 0);
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	cr_assert_eq(probe_syscall_open(&p, pid, pid), 0);
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_IN_SYSCALL, 5000, &s), 0);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED);
	cr_assert_eq(v.nr, SYS_read);
	cr_assert_eq(v.fd, pipefd[0]);

	struct probe_fd_target t;
	cr_assert_eq(probe_fd_target(pid, v.fd, &t), 0);
	struct stat st;
	cr_assert_eq(fstat(pipefd[0], &st), 0);
	char want[64];
	snprintf(want, sizeof(want), "pipe:[%llu]", (unsigned long long)st.st_ino);
	cr_assert_eq(t.kind, PROBE_FD_PIPE);
	cr_assert_eq(t.inode, st.st_ino);
	cr_assert_str_eq(t.text, want);
	probe_syscall_close(&p);
	tchild_reap(pid);

	/* the process is gone: the fd cannot be resolved any more */
	cr_assert_eq(probe_fd_target(pid, v.fd, &t), -ESRCH);
	cr_assert_eq(t.kind, PROBE_FD_UNKNOWN);
	close(pipefd[0]);
	close(pipefd[1]);
}

Test(probe_fd, anon_inodes_and_files, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	struct probe_fd_target t;
	int ep = epoll_create1(0);
	cr_assert_eq(probe_fd_target(getpid(), ep, &t), 0);
	cr_assert_eq(t.kind, PROBE_FD_EVENTPOLL, "%s", t.text);
	cr_assert_str_eq(t.text, "anon_inode:[eventpoll]");

	struct io_uring ring;
	cr_assert_eq(io_uring_queue_init(2, &ring, 0), 0);
	cr_assert_eq(probe_fd_target(getpid(), ring.ring_fd, &t), 0);
	cr_assert_eq(t.kind, PROBE_FD_IO_URING, "%s", t.text);
	io_uring_queue_exit(&ring);

	int f = open("/dev/null", O_RDONLY);
	cr_assert_eq(probe_fd_target(getpid(), f, &t), 0);
	cr_assert_eq(t.kind, PROBE_FD_FILE);
	cr_assert_str_eq(t.text, "/dev/null");
	close(f);
	close(ep);

	/* a closed fd */
	cr_assert_eq(probe_fd_target(getpid(), ep, &t), -EBADF);
	cr_assert_eq(t.kind, PROBE_FD_UNKNOWN);

	uint64_t ino;
	cr_assert_eq(probe_fd_kind_of("anon_inode:[eventfd]", &ino), PROBE_FD_ANON);
	cr_assert_eq(probe_fd_kind_of("socket:[12]", &ino), PROBE_FD_SOCKET);
	cr_assert_eq(ino, 12);
	cr_assert_eq(probe_fd_kind_of("socket:[12", &ino), PROBE_FD_OTHER);
	cr_assert_eq(probe_fd_kind_of("socket:[x]", &ino), PROBE_FD_OTHER);
	cr_assert_eq(probe_fd_kind_of("net:[4026531840]", &ino), PROBE_FD_OTHER);
	cr_assert_eq(ino, 0);
}

/* A listening socket and a connected pair on the loopback of `family`. */
static void tcp_pair(int family, int *lfd, int *cfd, int *afd, unsigned *lport, unsigned *cport)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	if (family == AF_INET) {
		struct sockaddr_in *a = (void *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sl = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (void *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		sl = sizeof(*a);
	}
	*lfd = socket(family, SOCK_STREAM, 0);
	cr_assert_geq(*lfd, 0);
	cr_assert_eq(bind(*lfd, (void *)&ss, sl), 0);
	cr_assert_eq(listen(*lfd, 4), 0);
	socklen_t l = sizeof(ss);
	cr_assert_eq(getsockname(*lfd, (void *)&ss, &l), 0);
	*cfd = socket(family, SOCK_STREAM, 0);
	cr_assert_eq(connect(*cfd, (void *)&ss, l), 0);
	*afd = accept(*lfd, NULL, NULL);
	cr_assert_geq(*afd, 0);
	struct sockaddr_storage cs;
	l = sizeof(cs);
	cr_assert_eq(getsockname(*cfd, (void *)&cs, &l), 0);
	*lport = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					 : ((struct sockaddr_in6 *)&ss)->sin6_port);
	*cport = ntohs(family == AF_INET ? ((struct sockaddr_in *)&cs)->sin_port
					 : ((struct sockaddr_in6 *)&cs)->sin6_port);
}

Test(probe_fd, tcp_v4_sockets, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	int lfd, cfd, afd;
	unsigned lport, cport;
	tcp_pair(AF_INET, &lfd, &cfd, &afd, &lport, &cport);
	struct probe_fd_target t;
	char want[128];

	cr_assert_eq(probe_fd_target(getpid(), lfd, &t), 0);
	snprintf(want, sizeof(want), "tcp 127.0.0.1:%u LISTEN", lport);
	cr_assert_eq(t.kind, PROBE_FD_SOCKET);
	cr_assert_str_eq(t.text, want);

	cr_assert_eq(probe_fd_target(getpid(), afd, &t), 0);
	snprintf(want, sizeof(want), "tcp 127.0.0.1:%u -> 127.0.0.1:%u ESTABLISHED", lport, cport);
	cr_assert_str_eq(t.text, want);

	cr_assert_eq(probe_fd_target(getpid(), cfd, &t), 0);
	snprintf(want, sizeof(want), "tcp 127.0.0.1:%u -> 127.0.0.1:%u ESTABLISHED", cport, lport);
	cr_assert_str_eq(t.text, want);
	close(afd);
	close(cfd);
	close(lfd);
}

Test(probe_fd, tcp_v6_sockets, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = in6addr_loopback };
	if (probe < 0 || bind(probe, (void *)&a, sizeof(a)) < 0)
		cr_skip_test("no IPv6 loopback");
	close(probe);
	int lfd, cfd, afd;
	unsigned lport, cport;
	tcp_pair(AF_INET6, &lfd, &cfd, &afd, &lport, &cport);
	struct probe_fd_target t;
	char want[128];
	cr_assert_eq(probe_fd_target(getpid(), lfd, &t), 0);
	snprintf(want, sizeof(want), "tcp6 [::1]:%u LISTEN", lport);
	cr_assert_str_eq(t.text, want);
	cr_assert_eq(probe_fd_target(getpid(), cfd, &t), 0);
	snprintf(want, sizeof(want), "tcp6 [::1]:%u -> [::1]:%u ESTABLISHED", cport, lport);
	cr_assert_str_eq(t.text, want);
	close(afd);
	close(cfd);
	close(lfd);
}

Test(probe_fd, udp_and_unix_sockets, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	struct probe_fd_target t;
	char want[160];

	int u = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	cr_assert_eq(bind(u, (void *)&a, sizeof(a)), 0);
	socklen_t l = sizeof(a);
	cr_assert_eq(getsockname(u, (void *)&a, &l), 0);
	cr_assert_eq(probe_fd_target(getpid(), u, &t), 0);
	snprintf(want, sizeof(want), "udp 127.0.0.1:%u", ntohs(a.sin_port));
	cr_assert_str_eq(t.text, want);
	close(u);

	char dir[64];
	cr_assert_eq(tchild_fixture_dir(dir, sizeof(dir)), 0);
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/app sock", dir);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(s, (void *)&un, sizeof(un)), 0);
	cr_assert_eq(listen(s, 1), 0);
	cr_assert_eq(probe_fd_target(getpid(), s, &t), 0);
	snprintf(want, sizeof(want), "unix %s", un.sun_path);
	cr_assert_str_eq(t.text, want);
	close(s);

	int sp[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	cr_assert_eq(probe_fd_target(getpid(), sp[0], &t), 0);
	snprintf(want, sizeof(want), "unix [%llu]", (unsigned long long)t.inode);
	cr_assert_str_eq(t.text, want);
	cr_assert_gt(t.inode, 0);
	close(sp[0]);
	close(sp[1]);
	tchild_fixture_remove(dir);
}

Test(probe_fd, cache_holds_for_a_window, .timeout = PROBE_TEST_TIMEOUT)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	struct probe_fd_cache *c = probe_fd_cache_new(64);
	cr_assert_not_null(c);
	int fd = open("/dev/null", O_RDONLY);
	const struct probe_fd_target *t;
	uint64_t lookups, resolved;

	cr_assert_eq(probe_fd_cache_get(c, getpid(), fd, &t), 0);
	cr_assert_str_eq(t->text, "/dev/null");
	/* the fd now points elsewhere; within the window the cache answers */
	int ep = epoll_create1(0);
	cr_assert_eq(dup2(ep, fd), fd);
	cr_assert_eq(probe_fd_cache_get(c, getpid(), fd, &t), 0);
	cr_assert_str_eq(t->text, "/dev/null");
	probe_fd_cache_stats(c, &lookups, &resolved);
	cr_assert_eq(lookups, 2);
	cr_assert_eq(resolved, 1);

	probe_fd_cache_begin_window(c);
	cr_assert_eq(probe_fd_cache_get(c, getpid(), fd, &t), 0);
	cr_assert_eq(t->kind, PROBE_FD_EVENTPOLL);
	probe_fd_cache_stats(c, &lookups, &resolved);
	cr_assert_eq(resolved, 2);

	/* errors are cached too, and many fds evict without failing */
	close(fd);
	probe_fd_cache_begin_window(c);
	cr_assert_eq(probe_fd_cache_get(c, getpid(), fd, &t), -EBADF);
	cr_assert_eq(probe_fd_cache_get(c, getpid(), fd, &t), -EBADF);
	for (int i = 0; i < 1000; i++)
		probe_fd_cache_get(c, getpid(), 100000 + i, &t);
	cr_assert_eq(probe_fd_cache_get(c, getpid(), 0, &t) <= 0, 1);
	probe_fd_cache_delete(c);
	close(ep);
}
