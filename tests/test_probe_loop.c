/* The loop's poll, identified: real loops whose synchronous waits use poll/select/ppoll/epoll against their own clock, the fallback, hostile fd sets. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <liburing.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "probe_loop.h"
#include "support/loop_child.h"
#include "support/probe_child.h"

/* ---- the scenarios against their own clock -------------------------------- */

#define MEASURE_S  2.5
#define PERIOD_US  1000
/* Points: the bound, plus the loop's wait for a CPU, which its own
 * clock counts as waiting and schedstat (rightly) as runnable; on a quiet
 * machine that is ~0, on this shared one it is not. */
#define TOLERANCE  (3.0 + r->m.cpu_wait_pct)
#define TOLERANCE_R (3.0 + r.m.cpu_wait_pct)

struct run {
	pid_t pid;
	FILE *out;
	struct tloop_measure m;
	double self_idle, self_blocked;
};

/* Runs kase for MEASURE_S + 1 s; `during` is called while it still runs. */
static void run_case(const char *kase, double block, double work, struct run *r,
		     void (*during)(struct run *r))
{
	r->pid = tloop_spawn(kase, block, work, MEASURE_S + 1.0, &r->out);
	cr_assert_gt(r->pid, 0, "loop_truth --case %s did not start", kase);
	usleep(200000); /* its steady state only */
	int err = tloop_measure(r->pid, MEASURE_S, PERIOD_US, &r->m);
	cr_assert_eq(err, 0, "measure: %d", err);
	if (during)
		during(r);
	cr_assert_eq(tloop_result(r->pid, r->out, &r->self_idle, &r->self_blocked), 0);
	char basis[96];
	cr_log_info("%s: sampled idle %.2f blocked %.2f, self idle %.2f blocked %.2f, cpu wait %.2f, basis %s, %ld samples",
		    kase, r->m.idle_pct, r->m.blocked_pct, r->self_idle, r->self_blocked, r->m.cpu_wait_pct,
		    probe_loop_basis_text(r->m.basis, r->m.loop_fd, basis, sizeof(basis)), r->m.samples);
	cr_expect_leq(fabs(r->m.idle_pct - r->self_idle), TOLERANCE, "%s: idle %.2f vs own clock %.2f", kase,
		      r->m.idle_pct, r->self_idle);
}

static int is_select(long nr)
{
#ifdef SYS_select
	if (nr == SYS_select)
		return 1;
#endif
	return nr == SYS_pselect6;
}

static int is_poll(long nr)
{
#ifdef SYS_poll
	if (nr == SYS_poll)
		return 1;
#endif
	return nr == SYS_ppoll;
}

static int is_epoll(long nr)
{
#ifdef SYS_epoll_wait
	if (nr == SYS_epoll_wait)
		return 1;
#endif
	return nr == SYS_epoll_pwait || nr == SYS_epoll_pwait2;
}

/* The largest (cls, wait) key, or NULL. */
static const struct tloop_key *top(const struct tloop_measure *m, enum probe_class cls, enum probe_wait_kind w)
{
	for (int i = 0; i < m->nkeys; i++)
		if (m->keys[i].cls == cls && m->keys[i].wait == w)
			return &m->keys[i];
	return NULL;
}

static void peer_of_blocker(struct run *r)
{
	const struct tloop_key *k = top(&r->m, PROBE_BLOCKED, PROBE_WAIT_FDS);
	cr_assert(k, "no blocked poll");
	struct probe_fd_cache *c = probe_fd_cache_new(16);
	const struct probe_fd_target *t;
	cr_assert_eq(probe_fd_cache_get_ino(c, r->pid, k->fd, k->fd_ino, &t), 0);
	cr_expect_eq(t->kind, PROBE_FD_SOCKET);
	cr_expect(strncmp(t->text, "tcp 127.0.0.1:", 14) == 0 && strstr(t->text, "-> 127.0.0.1:"),
		  "target %s", t->text);
	cr_expect_eq(t->inode, k->fd_ino);
	probe_fd_cache_delete(c);
}

Test(probe_loop, sync_poll_on_slow_upstream_is_blocked_on_its_socket, .timeout = PROBE_TEST_TIMEOUT)
{
	struct run r;
	run_case("sync_poll", 0.3, 0.1, &r, peer_of_blocker);
	cr_expect_eq(r.m.basis, PROBE_BASIS_EPOLL_FD);
	const struct tloop_key *idle = top(&r.m, PROBE_POLL, PROBE_WAIT_LOOP);
	const struct tloop_key *blk = top(&r.m, PROBE_BLOCKED, PROBE_WAIT_FDS);
	cr_assert(idle && blk);
	cr_expect(is_epoll(idle->nr), "idle in %ld", idle->nr);
	cr_expect(is_poll(blk->nr), "blocked in %ld", blk->nr);
	cr_expect_eq(idle->fd, r.m.loop_fd);
	cr_expect_leq(fabs(r.m.blocked_pct - r.self_blocked), TOLERANCE_R, "blocked %.2f vs %.2f", r.m.blocked_pct,
		      r.self_blocked);
}

Test(probe_loop, select_on_epoll_fd_is_idle_select_sleep_is_blocked, .timeout = PROBE_TEST_TIMEOUT)
{
	struct run r;
	run_case("em_select", 0.3, 0.1, &r, NULL);
	cr_expect_eq(r.m.basis, PROBE_BASIS_EPOLL_FD);
	const struct tloop_key *idle = top(&r.m, PROBE_POLL, PROBE_WAIT_LOOP);
	const struct tloop_key *slp = top(&r.m, PROBE_BLOCKED, PROBE_WAIT_SLEEP);
	cr_assert(idle && slp);
	cr_expect(is_select(idle->nr) && is_select(slp->nr), "idle in %ld, sleep in %ld", idle->nr, slp->nr);
	cr_expect_eq(slp->fd, -1);
	cr_expect_leq(fabs(r.m.blocked_pct - r.self_blocked), TOLERANCE_R);
}

Test(probe_loop, ppoll_on_epoll_and_eventfd_is_idle_on_private_pipe_blocked, .timeout = PROBE_TEST_TIMEOUT)
{
	struct run r;
	run_case("ppoll", 0.3, 0.1, &r, NULL);
	cr_expect_eq(r.m.basis, PROBE_BASIS_EPOLL_FD);
	const struct tloop_key *idle = top(&r.m, PROBE_POLL, PROBE_WAIT_LOOP);
	const struct tloop_key *blk = top(&r.m, PROBE_BLOCKED, PROBE_WAIT_FDS);
	cr_assert(idle && blk);
	cr_expect(idle->nr == SYS_ppoll && blk->nr == SYS_ppoll);
	cr_expect_neq(blk->fd, r.m.loop_fd);
	cr_expect_gt(blk->fd_ino, 0, "a pipe has an inode");
	cr_expect_leq(fabs(r.m.blocked_pct - r.self_blocked), TOLERANCE_R);
}

Test(probe_loop, nested_epoll_loop_is_blocked_main_loop_idle, .timeout = PROBE_TEST_TIMEOUT)
{
	struct run r;
	/* the nested wait is longer than the main one: counts alone would pick it */
	run_case("nested", 0.5, 0.1, &r, NULL);
	cr_expect_eq(r.m.basis, PROBE_BASIS_EPOLL_FD);
	const struct tloop_key *idle = top(&r.m, PROBE_POLL, PROBE_WAIT_LOOP);
	const struct tloop_key *nst = top(&r.m, PROBE_BLOCKED, PROBE_WAIT_NESTED);
	cr_assert(idle && nst);
	cr_expect(is_epoll(idle->nr) && is_epoll(nst->nr));
	cr_expect_neq(nst->fd, idle->fd);
	cr_expect_eq(idle->fd, r.m.loop_fd);
	cr_expect_leq(fabs(r.m.blocked_pct - r.self_blocked), TOLERANCE_R);
}

Test(probe_loop, plain_poll_loop_counts_any_poll_and_says_so, .timeout = PROBE_TEST_TIMEOUT)
{
	struct run r;
	run_case("plain", 0, 0.4, &r, NULL);
	cr_expect_eq(r.m.basis, PROBE_BASIS_PLAIN);
	cr_expect_eq(r.m.loop_fd, -1);
	const struct tloop_key *idle = top(&r.m, PROBE_POLL, PROBE_WAIT_FDS);
	cr_assert(idle);
	cr_expect(is_poll(idle->nr));
	char b[96];
	cr_expect_str_eq(probe_loop_basis_text(r.m.basis, r.m.loop_fd, b, sizeof(b)), "plain poll loop (any poll counts)");
}

/* ---- parked children: instrumented rule, fallback, hostile sets ----------- */

static int pipefd[2] = { -1, -1 };
static struct pollfd *big;
#define BIG_NFDS 5000

static void park_poll_pipe(void *arg, int ready_fd)
{
	(void)arg;
	struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
	tchild_ready(ready_fd);
	for (;;)
		poll(&p, 1, -1);
}

static void park_poll_big(void *arg, int ready_fd)
{
	int first_pipe = (int)(intptr_t)arg;
	tchild_ready(ready_fd);
	for (;;)
		if (poll(big, BIG_NFDS, -1) < 0 && first_pipe)
			_exit(3);
}

static pid_t park(tchild_park_fn fn, void *arg, struct probe_syscall *p, struct probe_sc_sample *s)
{
	pid_t pid = tchild_fork(fn, arg);
	cr_assert_gt(pid, 0);
	cr_assert_eq(probe_syscall_open(p, pid, pid), 0);
	cr_assert_eq(tchild_wait_state(p, PROBE_SC_IN_SYSCALL, 5000, s), 0);
	return pid;
}

static void setup_pipe(void)
{
	cr_assert_eq(pipe(pipefd), 0);
}

static void close_pipe(void)
{
	close(pipefd[0]);
	close(pipefd[1]);
}

TestSuite(probe_loop_parked, .init = setup_pipe, .fini = close_pipe);

Test(probe_loop_parked, instrumented_poll_counts_only_on_the_published_fd, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	struct probe_loop l;
	pid_t pid = park(park_poll_pipe, NULL, &p, &s);
	cr_assert(is_poll(s.nr));
	probe_loop_init(&l, pid, pid);
	cr_assert_eq(probe_loop_classify(&l, &s, pipefd[0], &v), 0);
	cr_expect_eq(v.cls, PROBE_POLL);
	cr_expect_eq(v.wait, PROBE_WAIT_LOOP);
	cr_expect_eq(v.basis, PROBE_BASIS_PUBLISHED);
	cr_expect_eq(v.loop_fd, pipefd[0]);
	cr_expect_eq(v.sp, s.sp);
	cr_expect_eq(v.pc, s.pc);
	cr_assert_eq(probe_loop_classify(&l, &s, pipefd[0] + 50, &v), 0);
	cr_expect_eq(v.cls, PROBE_BLOCKED);
	cr_expect_eq(v.wait, PROBE_WAIT_FDS);
	cr_expect_eq(v.fd, pipefd[0]);
	cr_expect_eq(v.nfds, 1);
	probe_loop_done(&l);
	probe_syscall_close(&p);
	tchild_reap(pid);
}

Test(probe_loop_parked, unreadable_memory_falls_back_and_says_so, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	struct probe_loop l;
	pid_t pid = park(park_poll_pipe, NULL, &p, &s);
	/* this test's process only (Criterion forks per test): a seccomp
	 * profile that refuses process_vm_readv, as some containers do */
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	cr_assert(ctx);
	cr_assert_eq(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(process_vm_readv), 0), 0);
	cr_assert_eq(seccomp_load(ctx), 0);
	seccomp_release(ctx);
	probe_loop_init(&l, pid, pid);
	cr_assert_eq(probe_loop_classify(&l, &s, -1, &v), 0);
	cr_expect_eq(v.cls, PROBE_POLL, "today's rule");
	cr_expect_eq(v.wait, PROBE_WAIT_UNREAD);
	cr_expect_eq(v.basis, PROBE_BASIS_UNREADABLE);
	char b[96];
	cr_expect_str_eq(probe_loop_basis_text(v.basis, v.loop_fd, b, sizeof(b)),
			 "fd set unreadable: any poll counts as idle");
	/* remembered: no read is tried again */
	uint64_t reads = l.key_reads;
	cr_assert_eq(probe_loop_classify(&l, &s, -1, &v), 0);
	cr_expect_eq(v.basis, PROBE_BASIS_UNREADABLE);
	cr_expect_eq(l.key_reads, reads);
	probe_loop_done(&l);
	probe_syscall_close(&p);
	tchild_reap(pid);
}

Test(probe_loop_parked, huge_nfds_is_capped_never_allocated, .timeout = PROBE_TEST_TIMEOUT)
{
	struct rlimit rl;
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max < BIG_NFDS)
		cr_skip_test("RLIMIT_NOFILE hard limit %lu < %d", (unsigned long)rl.rlim_max, BIG_NFDS);
	rl.rlim_cur = rl.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	big = calloc(BIG_NFDS, sizeof(*big));
	cr_assert(big);
	for (int i = 0; i < BIG_NFDS; i++)
		big[i].fd = -1;
	big[BIG_NFDS - 1] = (struct pollfd){ .fd = pipefd[0], .events = POLLIN }; /* past the cap */

	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	struct probe_wait_fds w;
	struct probe_loop l;
	pid_t pid = park(park_poll_big, NULL, &p, &s);
	cr_assert(is_poll(s.nr));
	cr_assert_eq((uint32_t)s.args[1], BIG_NFDS);
	cr_assert_eq(probe_wait_fds_read(pid, &s, &w), 0);
	cr_expect_eq(w.n, 0);
	cr_expect_eq(w.truncated, 1);
	probe_loop_init(&l, pid, pid);
	cr_assert_eq(probe_loop_classify(&l, &s, -1, &v), 0);
	cr_expect_neq(v.wait, PROBE_WAIT_SLEEP, "unread fds are not a sleep");
	probe_loop_done(&l);
	probe_syscall_close(&p);
	tchild_reap(pid);
	free(big);
}

Test(probe_loop_parked, garbage_pointers_and_sizes_mean_resample, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s, fake;
	struct probe_verdict v;
	struct probe_wait_fds w;
	struct probe_loop l;
	/* a page with an unmapped page after it, at the same address in the child */
	long pg = sysconf(_SC_PAGESIZE);
	char *two = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(two, MAP_FAILED);
	cr_assert_eq(munmap(two + pg, (size_t)pg), 0);
	pid_t pid = park(park_poll_pipe, NULL, &p, &s);
	probe_loop_init(&l, pid, pid);

	fake = s;
	fake.args[0] = 0x10; /* unmapped */
	fake.args[1] = 3;
	cr_expect_eq(probe_wait_fds_read(pid, &fake, &w), -EAGAIN);
	cr_expect_eq(probe_loop_classify(&l, &fake, -1, &v), -EAGAIN);
	fake.args[0] = (uint64_t)(uintptr_t)(two + pg - 16); /* two entries, then the hole */
	fake.args[1] = 0xffffffffu;
	cr_expect_eq(probe_wait_fds_read(pid, &fake, &w), -EAGAIN, "a short read");
	fake.pc++; /* another key */
	cr_expect_eq(probe_loop_classify(&l, &fake, -1, &v), -EAGAIN);

	fake = s;
	fake.nr = SYS_pselect6;
	fake.args[0] = 0x7fffffff; /* huge n, capped */
	fake.args[1] = (uint64_t)(uintptr_t)(two + pg - 8);
	fake.args[2] = fake.args[3] = 0;
	cr_expect_eq(probe_wait_fds_read(pid, &fake, &w), -EAGAIN);
	fake.args[0] = (uint64_t)-5; /* negative n: nothing to read, a sleep */
	cr_expect_eq(probe_wait_fds_read(pid, &fake, &w), 0);
	cr_expect_eq(w.n, 0);
	fake.state = PROBE_SC_RUNNING;
	cr_expect_eq(probe_wait_fds_read(pid, &fake, &w), -EINVAL);
	cr_expect_eq(l.key_hits, 0);
	probe_loop_done(&l);
	probe_syscall_close(&p);
	tchild_reap(pid);
	munmap(two, (size_t)pg);
}

/* A poll set rewritten by another thread while the main one waits on it. */
static struct pollfd churn[64];
static void *scribble(void *arg)
{
	(void)arg;
	/* only fds poll blocks on (the pipe's ends) or ignores (negative): the
	 * wait lasts, and the set the reader sees changes under it */
	const int vals[4] = { pipefd[0], pipefd[1], -1, -7 };
	for (unsigned x = 1;; x = x * 1103515245 + 12345)
		churn[(x >> 4) % 64].fd = vals[(x >> 12) % 4];
	return NULL;
}

static void park_churn(void *arg, int ready_fd)
{
	(void)arg;
	pthread_t t;
	for (int i = 0; i < 64; i++)
		churn[i] = (struct pollfd){ .fd = pipefd[1], .events = POLLIN };
	if (pthread_create(&t, NULL, scribble, NULL) != 0)
		_exit(3);
	tchild_ready(ready_fd);
	for (;;)
		poll(churn, 64, 1);
}

static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

Test(probe_loop_parked, fd_set_changing_under_the_read, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	struct probe_loop l;
	int fds_before = open_fds();
	pid_t pid = park(park_churn, NULL, &p, &s);
	probe_loop_init(&l, pid, pid);
	int classified = 0;
	for (int i = 0; i < 3000; i++) {
		if (probe_syscall_sample(&p, &s) < 0)
			continue;
		int r = probe_loop_classify(&l, &s, -1, &v);
		cr_assert(r == 0 || r == -EAGAIN, "r %d", r);
		if (r == 0 && is_poll(s.nr)) {
			classified++;
			cr_assert(v.nfds >= 0 && v.nfds <= PROBE_WAIT_FDS_MAX);
			cr_assert(v.cls == PROBE_POLL || v.cls == PROBE_BLOCKED);
		}
	}
	cr_expect_gt(classified, 0);
	probe_loop_done(&l);
	probe_syscall_close(&p);
	tchild_reap(pid);
	cr_expect_eq(open_fds(), fds_before, "no fd leaked");
}

Test(probe_loop_parked, thread_gone_mid_read_is_resampled, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s, s2;
	struct probe_verdict v;
	struct probe_loop l;
	pid_t pid = park(park_poll_pipe, NULL, &p, &s);
	probe_loop_init(&l, pid, pid);
	tchild_reap(pid); /* exits between the sample and the read */
	cr_expect_eq(probe_loop_classify(&l, &s, -1, &v), -EAGAIN);
	cr_expect_eq(l.resamples, 1);
	/* the next sample says so */
	cr_assert_eq(probe_syscall_sample(&p, &s2), 0);
	cr_expect_eq(s2.state, PROBE_SC_GONE);
	cr_assert_eq(probe_loop_classify(&l, &s2, -1, &v), 0);
	cr_expect_eq(v.cls, PROBE_GONE);
	probe_loop_done(&l);
	probe_syscall_close(&p);
}

Test(probe_loop_parked, basis_texts_name_the_loop_fd, .timeout = PROBE_TEST_TIMEOUT)
{
	char b[96];
	cr_expect_str_eq(probe_loop_basis_text(PROBE_BASIS_EPOLL_FD, 7, b, sizeof(b)), "epoll fd 7");
	cr_expect_str_eq(probe_loop_basis_text(PROBE_BASIS_RING_FD, 5, b, sizeof(b)), "ring fd 5");
	cr_expect_str_eq(probe_loop_basis_text(PROBE_BASIS_PUBLISHED, 3, b, sizeof(b)), "published wait fd");
	cr_expect_str_eq(probe_loop_basis_text(PROBE_BASIS_LEARNING, -1, b, sizeof(b)), "learning");
	cr_expect_str_eq(probe_wait_kind_name(PROBE_WAIT_NESTED), "nested loop");
}

Test(probe_loop_parked, fd_cache_re_resolves_a_reused_number, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_fd_cache *c = probe_fd_cache_new(16);
	const struct probe_fd_target *t;
	int fd = pipefd[0];
	cr_assert_eq(probe_fd_cache_get(c, getpid(), fd, &t), 0);
	cr_assert_eq(t->kind, PROBE_FD_PIPE);
	uint64_t pipe_ino = t->inode;
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(dup2(sv[0], fd), fd); /* same number, another file */
	cr_assert_eq(probe_fd_cache_get(c, getpid(), fd, &t), 0);
	cr_expect_eq(t->kind, PROBE_FD_PIPE, "the window cache alone is stale");
	uint64_t sock_ino;
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	sock_ino = st.st_ino;
	cr_assert_neq(sock_ino, pipe_ino);
	cr_assert_eq(probe_fd_cache_get_ino(c, getpid(), fd, sock_ino, &t), 0);
	cr_expect_eq(t->kind, PROBE_FD_SOCKET);
	cr_expect_eq(t->inode, sock_ino);
	uint64_t now_ino;
	cr_assert_eq(probe_fd_inode(getpid(), fd, &now_ino), 0);
	cr_expect_eq(now_ino, sock_ino);
	close(sv[0]);
	close(sv[1]);
	probe_fd_cache_delete(c);
}

static struct io_uring ring;

static void park_ring(void *arg, int ready_fd)
{
	(void)arg;
	struct io_uring_cqe *cqe;
	tchild_ready(ready_fd);
	for (;;)
		io_uring_wait_cqe(&ring, &cqe);
}

/* n classifications of one parked sample; returns the last verdict */
static void classify_n(struct probe_loop *l, const struct probe_sc_sample *s, int n, struct probe_verdict *v)
{
	for (int i = 0; i < n; i++)
		cr_assert_eq(probe_loop_classify(l, s, -1, v), 0);
}

Test(probe_loop_parked, epoll_loop_fd_is_learned_then_named, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	struct probe_loop l;
	int ep = epoll_create1(0);
	cr_assert_geq(ep, 0);
	pid_t pid = park(tchild_park_epoll_wait, TCHILD_FD(ep), &p, &s);
	probe_loop_init(&l, pid, pid);
	classify_n(&l, &s, 1, &v);
	cr_expect_eq(v.cls, PROBE_POLL);
	cr_expect_eq(v.wait, PROBE_WAIT_LOOP);
	cr_expect_eq(v.basis, PROBE_BASIS_LEARNING);
	cr_expect_eq(v.loop_fd, -1, "not named while learning");
	classify_n(&l, &s, PROBE_LOOP_LEARN_WAITS, &v);
	cr_expect_eq(v.basis, PROBE_BASIS_EPOLL_FD);
	cr_expect_eq(v.loop_fd, ep);
	cr_expect_eq(v.fd, ep);
	cr_expect_gt(l.key_hits, 0, "served from its key");
	probe_loop_done(&l);
	probe_syscall_close(&p);
	tchild_reap(pid);
	close(ep);
}

Test(probe_loop_parked, io_uring_loop_fd_is_a_ring_fd, .timeout = PROBE_TEST_TIMEOUT)
{
	int r = io_uring_queue_init(4, &ring, 0);
	if (r == -ENOSYS || r == -EPERM)
		cr_skip_test("io_uring unavailable here (%d)", r);
	cr_assert_eq(r, 0);
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	struct probe_loop l;
	pid_t pid = park(park_ring, NULL, &p, &s);
	cr_assert_eq(s.nr, SYS_io_uring_enter);
	probe_loop_init(&l, pid, pid);
	classify_n(&l, &s, PROBE_LOOP_LEARN_WAITS, &v);
	cr_expect_eq(v.cls, PROBE_POLL);
	cr_expect_eq(v.basis, PROBE_BASIS_RING_FD);
	cr_expect_eq(v.loop_fd, ring.ring_fd);
	char b[96], want[32];
	snprintf(want, sizeof(want), "ring fd %d", ring.ring_fd);
	cr_expect_str_eq(probe_loop_basis_text(v.basis, v.loop_fd, b, sizeof(b)), want);
	probe_loop_done(&l);
	probe_syscall_close(&p);
	tchild_reap(pid);
	io_uring_queue_exit(&ring);
}

Test(probe_loop_parked, loop_truth_bad_usage_exits_2, .timeout = PROBE_TEST_TIMEOUT)
{
	char exe[PATH_MAX], prog[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	snprintf(prog, sizeof(prog), "%s/examples/loop_truth", dirname(dirname(exe)));
	char *const *cases[] = {
		(char *[]){ prog, "--case", "bogus", NULL },
		(char *[]){ prog, "--case", "plain", "--block", "0.2", NULL },
		(char *[]){ prog, "--case", "ppoll", "--block", "0.8", "--work", "0.5", NULL },
	};
	for (size_t i = 0; i < 3; i++) {
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			int devnull = open("/dev/null", O_WRONLY);
			dup2(devnull, STDERR_FILENO);
			execv(prog, cases[i]);
			_exit(127);
		}
		int st;
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "case %zu: status %d", i, st);
	}
}
