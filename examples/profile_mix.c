/*
 * profile_mix — workers whose time splits in a known way, measured by
 * their own clocks, for `loopstat profile`'s tests and demos.
 *
 *   profile_mix split [SECONDS]
 *       one thread, 100 ms cycles: 50 ms blocked in read(2) on a pipe (a
 *       helper thread answers late), 30 ms on the CPU, 20 ms in
 *       epoll_wait on an empty epoll fd. At the end (or SIGTERM) prints
 *       "share blocked|cpu|idle PCT" from its own clock.
 *   profile_mix share PCT [SECONDS]
 *       one thread, 50 ms cycles: PCT% of each blocked in read(2) inside
 *       lookup_slowly (a helper answers late), the rest in epoll_wait; for
 *       diff's differential profile (one function's share, set per run).
 *   profile_mix targets FILE PORT
 *       three threads blocked until killed: flock(2) on FILE (the caller
 *       holds the lock), recv(2) on a TCP connection to 127.0.0.1:PORT,
 *       read(2) on a pipe — each inside a function of its own name.
 *   profile_mix fibers [SECONDS]
 *       a libfiberloop worker with two tagged fibers: "alpha" busy 30 ms
 *       and "beta" busy 15 ms of every 100 ms; prints "share alpha|beta PCT".
 *
 * Prints "ready" once its threads are in place. Default SECONDS: until SIGTERM.
 */
#include "fiberloop.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void spin_until(double t)
{
	while (now_s() < t)
		__asm__ volatile("" ::: "memory");
}

/* ---- split ---- */

static int req_pipe[2], ans_pipe[2];
static long answer_ns = 50 * 1000 * 1000;   /* how late the helper answers */

static void *late_answer(void *arg)
{
	(void)arg;
	char b;
	struct timespec d = { 0, answer_ns };
	while (read(req_pipe[0], &b, 1) == 1) {
		nanosleep(&d, NULL);
		if (write(ans_pipe[1], &b, 1) != 1)
			break;
	}
	return NULL;
}

__attribute__((noinline)) static int read_answer(void)
{
	char b = 'x';
	int ok = write(req_pipe[1], &b, 1) == 1 && read(ans_pipe[0], &b, 1) == 1;
	__asm__ volatile("" ::: "memory");
	return ok ? 0 : -1;
}

static int run_split(double seconds)
{
	pthread_t th;
	int ep = epoll_create1(0);
	if (ep < 0 || pipe(req_pipe) < 0 || pipe(ans_pipe) < 0 || pthread_create(&th, NULL, late_answer, NULL))
		return 1;
	puts("ready");
	fflush(stdout);
	double t0 = now_s(), blocked = 0, cpu = 0, idle = 0;
	while (!stop && (seconds <= 0 || now_s() - t0 < seconds)) {
		double a = now_s();
		if (read_answer() < 0)
			return 1;
		double b = now_s();
		spin_until(b + 0.030);
		double c = now_s();
		struct epoll_event ev;
		epoll_wait(ep, &ev, 1, 20);
		double d = now_s();
		blocked += b - a, cpu += c - b, idle += d - c;
	}
	double wall = now_s() - t0;
	printf("share blocked %.2f\nshare cpu %.2f\nshare idle %.2f\n", 100 * blocked / wall, 100 * cpu / wall,
	       100 * idle / wall);
	return 0;
}

/* ---- share ---- */

__attribute__((noinline)) static int lookup_slowly(void)
{
	int rc = read_answer();
	__asm__ volatile("" ::: "memory");
	return rc;
}

static int run_share(double pct, double seconds)
{
	pthread_t th;
	answer_ns = (long)(pct / 100 * 0.050 * 1e9);
	int ep = epoll_create1(0);
	if (pct <= 0 || pct >= 100 || ep < 0 || pipe(req_pipe) < 0 || pipe(ans_pipe) < 0 ||
	    pthread_create(&th, NULL, late_answer, NULL))
		return 1;
	puts("ready");
	fflush(stdout);
	double t0 = now_s(), blocked = 0;
	while (!stop && (seconds <= 0 || now_s() - t0 < seconds)) {
		double a = now_s();
		if (lookup_slowly() < 0)
			return 1;
		double b = now_s();
		blocked += b - a;
		/* the rest of the 50 ms cycle in the loop's poll */
		double left = a + 0.050 - now_s();
		struct epoll_event ev;
		if (left > 0)
			epoll_wait(ep, &ev, 1, (int)(left * 1000 + 0.5));
	}
	printf("share blocked %.2f\n", 100 * blocked / (now_s() - t0));
	return 0;
}

/* ---- targets ---- */

__attribute__((noinline)) static void *wait_for_lock(void *arg)
{
	flock(*(int *)arg, LOCK_EX);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) static void *wait_for_peer(void *arg)
{
	char b;
	recv(*(int *)arg, &b, 1, 0);
	__asm__ volatile("" ::: "memory");
	return NULL;
}

__attribute__((noinline)) static void *wait_for_pipe(void *arg)
{
	char b;
	if (read(*(int *)arg, &b, 1) < 0)
		return NULL;
	__asm__ volatile("" ::: "memory");
	return NULL;
}

static int run_targets(const char *path, int port)
{
	static int file_fd, sock, fds[2];
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	pthread_t t[3];
	if ((file_fd = open(path, O_RDWR)) < 0 || (sock = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    connect(sock, (struct sockaddr *)&a, sizeof(a)) < 0 || pipe(fds) < 0)
		return 1;
	if (pthread_create(&t[0], NULL, wait_for_lock, &file_fd) || pthread_create(&t[1], NULL, wait_for_peer, &sock) ||
	    pthread_create(&t[2], NULL, wait_for_pipe, &fds[0]))
		return 1;
	puts("ready");
	fflush(stdout);
	while (!stop)
		pause();
	return 0;
}

/* ---- fibers ---- */

struct fiber_cfg {
	double busy, seconds, t0, busy_total;
};

static void *busy_fiber(void *arg)
{
	struct fiber_cfg *c = arg;
	while (!stop && (c->seconds <= 0 || now_s() - c->t0 < c->seconds)) {
		double a = now_s();
		spin_until(a + c->busy);
		c->busy_total += now_s() - a;
		/* sleep to the next 100 ms boundary of this fiber's own schedule */
		fl_sleep(0.100 - c->busy);
	}
	return NULL;
}

static void *fibers_main(void *arg)
{
	struct fiber_cfg *c = arg;
	fl_fiber *a = fl_spin(busy_fiber, &c[0], "alpha"), *b = fl_spin(busy_fiber, &c[1], "beta");
	/* held, so that awaiting one that has already finished is safe */
	fl_fiber_ref(a);
	fl_fiber_ref(b);
	puts("ready");
	fflush(stdout);
	fl_await(a, NULL);
	fl_await(b, NULL);
	fl_fiber_unref(a);
	fl_fiber_unref(b);
	return NULL;
}

static int run_fibers(double seconds)
{
	double t0 = now_s();
	struct fiber_cfg c[2] = { { 0.030, seconds, t0, 0 }, { 0.015, seconds, t0, 0 } };
	if (fl_run(fibers_main, c, NULL, NULL) < 0)
		return 1;
	double wall = now_s() - t0;
	printf("share alpha %.2f\nshare beta %.2f\n", 100 * c[0].busy_total / wall, 100 * c[1].busy_total / wall);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && strcmp(argv[1], "split") == 0)
		return run_split(argc > 2 ? atof(argv[2]) : 0);
	if (argc >= 3 && strcmp(argv[1], "share") == 0)
		return run_share(atof(argv[2]), argc > 3 ? atof(argv[3]) : 0);
	if (argc >= 4 && strcmp(argv[1], "targets") == 0)
		return run_targets(argv[2], atoi(argv[3]));
	if (argc >= 2 && strcmp(argv[1], "fibers") == 0)
		return run_fibers(argc > 2 ? atof(argv[2]) : 0);
	fprintf(stderr, "usage: profile_mix split [SECONDS] | share PCT [SECONDS] | targets FILE PORT | fibers [SECONDS]\n");
	return 2;
}
