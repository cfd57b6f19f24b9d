/*
 * thread_flood.c — the parked threads of thread_flood.h, in one child.
 */
#include "thread_flood.h"
#include "children.h"

#include <criterion/criterion.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TFLOOD_STACK (64 * 1024)

static int tflood_word;   /* the pool's condition: never signalled */

static void *park_epoll(void *arg)
{
	int ep = *(int *)arg;
	struct epoll_event ev;
	for (;;)
		epoll_wait(ep, &ev, 1, -1);
	return NULL;
}

static void *park_futex(void *arg)
{
	(void)arg;
	for (;;)
		syscall(SYS_futex, &tflood_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	return NULL;
}

/* In the child: makes the threads, says how many, parks for good. */
static void tflood_run(unsigned loops, unsigned pool, int ready)
{
	static int ep;
	ep = epoll_create1(EPOLL_CLOEXEC);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, TFLOOD_STACK);
	unsigned made = 0;
	for (unsigned i = 0; i < loops + pool; i++) {
		pthread_t t;
		made += pthread_create(&t, &a, i < loops ? park_epoll : park_futex, &ep) == 0;
	}
	dprintf(ready, "%u\n", made);
	close(ready);
	for (;;)
		pause();
}

pid_t tflood_start(unsigned loops, unsigned pool, int (*become)(void *arg), void *arg)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = tc_fork();
	if (pid == 0) {
		close(p[0]);
		if (become && become(arg) < 0)
			_exit(120);
		if (become)   /* a change of credentials cleared it */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
		tflood_run(loops, pool, p[1]);
		_exit(0);
	}
	close(p[1]);
	char buf[32] = "";
	ssize_t n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	unsigned made = n > 0 ? (unsigned)strtoul(buf, NULL, 10) : 0;
	if (made < loops + pool) {
		tc_kill(pid);
		cr_assert_fail("thread flood: %u of %u threads made", made, loops + pool);
	}
	return pid;
}
