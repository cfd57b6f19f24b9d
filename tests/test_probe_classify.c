/* Classification: real children parked in epoll_wait, io_uring, select, poll, read, nanosleep or a busy loop. */
#include <criterion/criterion.h>

#include <liburing.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe_classify.h"
#include "support/probe_child.h"

/* The fds a child waits on are created before fork, so the parent knows
 * their numbers (the child inherits the same numbers). */
static int epfd = -1, ringfd = -1, pipefd[2] = { -1, -1 };
static struct io_uring ring;

static void park_uring(void *arg, int ready_fd)
{
	(void)arg;
	struct io_uring_cqe *cqe;
	tchild_ready(ready_fd);
	for (;;)
		io_uring_wait_cqe(&ring, &cqe);
}

static void park_uring_registered(void *arg, int ready_fd)
{
	(void)arg;
	struct io_uring_cqe *cqe;
	if (io_uring_register_ring_fd(&ring) != 1)
		_exit(4);
	tchild_ready(ready_fd);
	for (;;)
		io_uring_wait_cqe(&ring, &cqe);
}

static void park_select_epoll(void *arg, int ready_fd)
{
	(void)arg;
	tchild_ready(ready_fd);
	for (;;) {
		/* EventMachine's shape: select() on the epoll fd */
		fd_set rd;
		FD_ZERO(&rd);
		FD_SET(epfd, &rd);
		select(epfd + 1, &rd, NULL, NULL, NULL);
	}
}

static void park_poll(void *arg, int ready_fd)
{
	(void)arg;
	struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
	tchild_ready(ready_fd);
	for (;;)
		poll(&p, 1, -1);
}

static void setup_fds(void)
{
	epfd = epoll_create1(0);
	cr_assert_geq(epfd, 0);
	cr_assert_eq(pipe(pipefd), 0);
	cr_assert_eq(io_uring_queue_init(4, &ring, 0), 0);
	ringfd = ring.ring_fd;
}

static void teardown_fds(void)
{
	io_uring_queue_exit(&ring);
	close(epfd);
	close(pipefd[0]);
	close(pipefd[1]);
}

TestSuite(probe_classify, .init = setup_fds, .fini = teardown_fds);

/* Forks a parked child, waits until it is inside a syscall, classifies. */
static pid_t park_and_sample(tchild_park_fn fn, void *arg, struct probe_syscall *p, struct probe_sc_sample *s)
{
	pid_t pid = tchild_fork(fn, arg);
	cr_assert_gt(pid, 0);
	cr_assert_eq(probe_syscall_open(p, pid, pid), 0);
	cr_assert_eq(tchild_wait_state(p, PROBE_SC_IN_SYSCALL, 5000, s), 0, "state %d", s->state);
	return pid;
}

static void done(pid_t pid, struct probe_syscall *p)
{
	probe_syscall_close(p);
	tchild_reap(pid);
}

Test(probe_classify, epoll_wait_is_poll, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	pid_t pid = park_and_sample(tchild_park_epoll_wait, TCHILD_FD(epfd), &p, &s);
	cr_assert(s.nr == SYS_epoll_wait || s.nr == SYS_epoll_pwait, "nr %ld", s.nr);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_POLL, "class %s", probe_class_name(v.cls));
	cr_assert_eq(v.fd, epfd);
	cr_assert_eq(v.nr, s.nr);
	/* the instrumented rule: poll only on the published wait fd */
	probe_classify(&s, epfd, &v);
	cr_assert_eq(v.cls, PROBE_POLL);
	probe_classify(&s, epfd + 100, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED, "class %s", probe_class_name(v.cls));
	cr_assert_eq(v.fd, epfd);
	done(pid, &p);
}

Test(probe_classify, io_uring_wait_cqe_is_poll, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	pid_t pid = park_and_sample(park_uring, NULL, &p, &s);
	cr_assert_eq(s.nr, SYS_io_uring_enter, "nr %ld", s.nr);
	cr_assert((s.args[3] & IORING_ENTER_GETEVENTS) && (uint32_t)s.args[2] > 0);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_POLL, "class %s", probe_class_name(v.cls));
	cr_assert_eq(v.fd, ringfd);
	probe_classify(&s, ringfd, &v);
	cr_assert_eq(v.cls, PROBE_POLL);
	probe_classify(&s, epfd, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED);
	done(pid, &p);
}

Test(probe_classify, io_uring_registered_ring_is_poll, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	pid_t pid = park_and_sample(park_uring_registered, NULL, &p, &s);
	cr_assert_eq(s.nr, SYS_io_uring_enter, "nr %ld", s.nr);
	cr_assert(s.args[3] & IORING_ENTER_REGISTERED_RING, "flags %#llx", (unsigned long long)s.args[3]);
	/* the first argument is a ring index, not the ring fd */
	probe_classify(&s, ringfd, &v);
	cr_assert_eq(v.cls, PROBE_POLL, "class %s", probe_class_name(v.cls));
	cr_assert_eq(v.fd, -1);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_POLL);
	done(pid, &p);
}

Test(probe_classify, select_on_epoll_fd_is_poll, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	pid_t pid = park_and_sample(park_select_epoll, NULL, &p, &s);
#ifdef SYS_select
	cr_assert(s.nr == SYS_select || s.nr == SYS_pselect6, "nr %ld", s.nr);
#else
	cr_assert_eq(s.nr, SYS_pselect6);
#endif
	cr_assert_eq(s.args[0], (uint64_t)epfd + 1); /* nfds, not an fd */
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_POLL, "class %s", probe_class_name(v.cls));
	cr_assert_eq(v.fd, -1);
	/* the fd set lives in the target's memory: for an instrumented worker
	 * (whose runtime never selects) it is somebody else's wait */
	probe_classify(&s, epfd, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED);
	done(pid, &p);
}

Test(probe_classify, poll_is_poll, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	pid_t pid = park_and_sample(park_poll, NULL, &p, &s);
#ifdef SYS_poll
	cr_assert(s.nr == SYS_poll || s.nr == SYS_ppoll, "nr %ld", s.nr);
#else
	cr_assert_eq(s.nr, SYS_ppoll);
#endif
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_POLL, "class %s", probe_class_name(v.cls));
	cr_assert_eq(v.fd, -1);
	done(pid, &p);
}

Test(probe_classify, pipe_read_is_blocked_with_fd, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	pid_t pid = park_and_sample(tchild_park_read, TCHILD_FD(pipefd[0]), &p, &s);
	cr_assert_eq(s.nr, SYS_read, "nr %ld", s.nr);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED, "class %s", probe_class_name(v.cls));
	cr_assert_eq(v.nr, SYS_read);
	cr_assert_eq(v.fd, pipefd[0]);
	cr_assert_str_eq(probe_syscall_name(v.nr), "read");
	done(pid, &p);
}

Test(probe_classify, clock_nanosleep_is_blocked, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	pid_t pid = park_and_sample(tchild_park_sleep, NULL, &p, &s);
	cr_assert_eq(s.nr, SYS_clock_nanosleep, "nr %ld", s.nr);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED, "class %s", probe_class_name(v.cls));
	cr_assert_eq(v.fd, -1); /* a clock id is not an fd */
	cr_assert_str_eq(probe_syscall_name(v.nr), "clock_nanosleep");
	done(pid, &p);
}

Test(probe_classify, busy_loop_is_running, .timeout = PROBE_TEST_TIMEOUT)
{
	pid_t pid = tchild_fork(tchild_park_busy, NULL);
	cr_assert_gt(pid, 0);
	struct probe_syscall p;
	struct probe_sc_sample s;
	struct probe_verdict v;
	cr_assert_eq(probe_syscall_open(&p, pid, pid), 0);
	cr_assert_eq(tchild_wait_state(&p, PROBE_SC_RUNNING, 5000, &s), 0);
	for (int i = 0; i < 50; i++) {
		cr_assert_eq(probe_syscall_sample(&p, &s), 0);
		probe_classify(&s, -1, &v);
		cr_assert_eq(v.cls, PROBE_RUNNING, "sample %d: %s", i, probe_class_name(v.cls));
	}
	done(pid, &p);
}

static struct probe_sc_sample uring_sample(uint32_t to_submit, uint32_t min_complete, uint32_t flags)
{
	struct probe_sc_sample s = { .state = PROBE_SC_IN_SYSCALL, .nr = SYS_io_uring_enter };
	s.args[0] = 7;
	s.args[1] = to_submit;
	s.args[2] = min_complete;
	s.args[3] = flags;
	return s;
}

Test(probe_classify, io_uring_flags, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_verdict v;
	struct probe_sc_sample s = uring_sample(0, 1, IORING_ENTER_GETEVENTS);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_POLL);
	/* submit-and-wait is still waiting for completions */
	s = uring_sample(4, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG);
	probe_classify(&s, 7, &v);
	cr_assert_eq(v.cls, PROBE_POLL);
	/* SQ_WAIT is back-pressure, not idle */
	s = uring_sample(0, 0, IORING_ENTER_SQ_WAIT);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED);
	cr_assert_eq(v.fd, 7);
	s = uring_sample(0, 1, IORING_ENTER_SQ_WAIT);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED);
	/* GETEVENTS with min_complete 0 does not wait */
	s = uring_sample(1, 0, IORING_ENTER_GETEVENTS);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED);
	/* a registered ring: the index is not an fd */
	s = uring_sample(0, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_REGISTERED_RING);
	probe_classify(&s, 3, &v);
	cr_assert_eq(v.cls, PROBE_POLL);
	cr_assert_eq(v.fd, -1);
	s = uring_sample(1, 0, IORING_ENTER_REGISTERED_RING);
	probe_classify(&s, 3, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED);
	cr_assert_eq(v.fd, -1);
	/* plain submission */
	s = uring_sample(1, 0, 0);
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_BLOCKED);
	/* the upper half of the flags register is ignored */
	s = uring_sample(0, 1, IORING_ENTER_GETEVENTS);
	s.args[3] |= 0xffffffff00000000ull;
	s.args[2] |= 0xffffffff00000000ull;
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_POLL);
}

Test(probe_classify, states_without_syscall, .timeout = PROBE_TEST_TIMEOUT)
{
	struct probe_verdict v;
	struct probe_sc_sample s = { .state = PROBE_SC_NOT_IN_SYSCALL, .nr = -1, .sp = 1, .pc = 2 };
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_OTHER);
	cr_assert_eq(v.nr, -1);
	s.state = PROBE_SC_GONE;
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_GONE);
	s.state = PROBE_SC_NO_ACCESS;
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_NO_ACCESS);
	s.state = PROBE_SC_RUNNING;
	probe_classify(&s, -1, &v);
	cr_assert_eq(v.cls, PROBE_RUNNING);
}

Test(probe_classify, event_wait_set_and_names, .timeout = PROBE_TEST_TIMEOUT)
{
	long waits[] = {
#ifdef SYS_epoll_wait
		SYS_epoll_wait,
#endif
#ifdef SYS_select
		SYS_select,
#endif
#ifdef SYS_poll
		SYS_poll,
#endif
		SYS_epoll_pwait, SYS_epoll_pwait2, SYS_pselect6, SYS_ppoll, SYS_io_uring_enter,
	};
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		cr_assert(probe_syscall_is_event_wait(waits[i]), "nr %ld", waits[i]);
	cr_assert_not(probe_syscall_is_event_wait(SYS_read));
	cr_assert_not(probe_syscall_is_event_wait(SYS_clock_nanosleep));
	cr_assert_not(probe_syscall_is_event_wait(-1));
	cr_assert_not(probe_syscall_is_event_wait(100000));
	cr_assert(probe_syscall_takes_fd(SYS_read));
	cr_assert(probe_syscall_takes_fd(SYS_epoll_pwait));
	cr_assert_not(probe_syscall_takes_fd(SYS_pselect6));
	cr_assert_str_eq(probe_syscall_name(SYS_epoll_pwait), "epoll_pwait");
	cr_assert_str_eq(probe_syscall_name(SYS_io_uring_enter), "io_uring_enter");
	cr_assert_null(probe_syscall_name(-1));
	cr_assert_null(probe_syscall_name(5000));
	/* same pointer every time: a table, not a fresh allocation */
	cr_assert_eq(probe_syscall_name(SYS_read), probe_syscall_name(SYS_read));
}

Test(probe_classify, syscall_numbers_by_name, .timeout = PROBE_TEST_TIMEOUT)
{
	cr_expect_eq(probe_syscall_nr("read"), SYS_read);
	cr_expect_eq(probe_syscall_nr("fsync"), SYS_fsync);
	cr_expect_eq(probe_syscall_nr("epoll_pwait"), SYS_epoll_pwait);
	cr_expect_eq(probe_syscall_nr("fsnyc"), -1);
	cr_expect_eq(probe_syscall_nr(""), -1);
	cr_expect_eq(probe_syscall_nr(NULL), -1);
	cr_expect_str_eq(probe_syscall_name(probe_syscall_nr("io_uring_enter")), "io_uring_enter");
}
