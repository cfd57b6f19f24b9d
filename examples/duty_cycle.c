/*
 * duty_cycle — an event-loop worker that is idle a known fraction of the
 * time: each period it works (spins) for (1 - idle) of the period, then
 * waits in its loop's poll for the rest. Used by the accuracy tests and
 * benchmark, and by `make demo`.
 *
 *   duty_cycle --idle F [--seconds S] [--period-ms P] [--plain] [--wave S]
 *              [--block B]
 *
 * By default it runs on libfiberloop (backend from FL_BACKEND) and so
 * publishes counters; --plain runs a bare epoll_wait loop instead, an
 * uninstrumented worker. --wave S swings the idle fraction between F and
 * 1 - (1 - F) / 4 over a period of S seconds (a varying load). --block B
 * (plain only) spends B of each period blocked in a synchronous read(2) on
 * a pipe that a helper thread fills late: the "worker stuck in a blocking
 * call" that CPU% cannot see.
 * On exit it prints "self_idle_pct X": its own measure of time spent
 * waiting, over wall time.
 */
#include "fiberloop.h"

#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct cfg {
	double idle;       /* fraction of each period spent waiting */
	double seconds;    /* run time; 0: until SIGTERM/SIGINT */
	double period;     /* seconds */
	double wave;       /* seconds per load swing; 0: constant */
	double block;      /* fraction of each period blocked in read(2), plain only */
	int    plain;
};

/* --block: the worker writes a request, then blocks reading the answer,
 * which a helper thread sends block*period later (a slow synchronous call) */
static int req_pipe[2], ans_pipe[2];

static void *slow_peer(void *arg)
{
	const struct cfg *c = arg;
	char b;
	struct timespec d = { 0, (long)(c->block * c->period * 1e9) };
	while (read(req_pipe[0], &b, 1) == 1) {
		nanosleep(&d, NULL);
		if (write(ans_pipe[1], &b, 1) != 1)
			break;
	}
	return NULL;
}

static int blocking_call(void)
{
	char b = 'x';
	return write(req_pipe[1], &b, 1) == 1 && read(ans_pipe[0], &b, 1) == 1 ? 0 : -1;
}

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static double idle_at(const struct cfg *c, double t)
{
	if (c->wave <= 0)
		return c->idle;
	double hi = 1 - (1 - c->idle) / 4;
	return c->idle + (hi - c->idle) * (0.5 + 0.5 * sin(2 * M_PI * t / c->wave));
}

/* Spins until `until`: the "work" of a period. */
static void work_until(double until)
{
	while (now_s() < until)
		;
}

/* The wait of one period, in the loop's own poll; returns seconds waited. */
typedef double (*wait_fn)(double until, void *ctx);

static double run(const struct cfg *c, wait_fn wait, void *ctx)
{
	double start = now_s(), next = start, waited = 0;
	double end = c->seconds > 0 ? start + c->seconds : INFINITY;
	while (!stop && now_s() < end) {
		double idle = idle_at(c, next - start);
		work_until(next + (1 - idle - c->block) * c->period);
		if (c->block > 0 && blocking_call() < 0)
			break;
		next += c->period;
		waited += wait(next, ctx);
	}
	return waited / (now_s() - start);
}

/* The plain loop waits as an EventMachine-style server does: in epoll_wait
 * with no timeout, woken by a timerfd in the set, once per period. */
struct plain {
	int ep, tfd;
};

static double wait_epoll(double until, void *ctx)
{
	struct plain *p = ctx;
	double t0 = now_s();
	struct itimerspec its = { .it_value = { (time_t)until, (long)((until - (time_t)until) * 1e9) } };
	timerfd_settime(p->tfd, TFD_TIMER_ABSTIME, &its, NULL);
	struct epoll_event ev;
	uint64_t ticks;
	while (now_s() < until)
		if (epoll_wait(p->ep, &ev, 1, -1) == 1)
			(void)!read(p->tfd, &ticks, sizeof(ticks));
	return now_s() - t0;
}

static double wait_fiber(double until, void *ctx)
{
	(void)ctx;
	double t0 = now_s();
	if (until > t0)
		fl_sleep(until - t0);
	return now_s() - t0;
}

static double result;

static void *fiber_main(void *arg)
{
	result = run(arg, wait_fiber, NULL);
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: duty_cycle --idle F [--seconds S] [--period-ms P] [--plain] [--wave S] [--block B]\n"
			"  (--block needs --plain and B <= 1 - F)\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "idle", required_argument, NULL, 'i' },   { "seconds", required_argument, NULL, 's' },
		{ "period-ms", required_argument, NULL, 'p' }, { "wave", required_argument, NULL, 'w' },
		{ "plain", no_argument, NULL, 'P' },        { "block", required_argument, NULL, 'b' },
		{ 0 },
	};
	struct cfg c = { .idle = -1, .period = 0.010 };
	int opt;
	while ((opt = getopt_long(argc, argv, "i:s:p:w:Pb:", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': c.idle = atof(optarg); break;
		case 's': c.seconds = atof(optarg); break;
		case 'p': c.period = atof(optarg) / 1000; break;
		case 'w': c.wave = atof(optarg); break;
		case 'P': c.plain = 1; break;
		case 'b': c.block = atof(optarg); break;
		default: return usage();
		}
	}
	if (c.idle < 0 || c.idle > 1 || c.period <= 0 || c.seconds < 0 || c.wave < 0 || c.block < 0 ||
	    c.block > 1 - c.idle || (c.block > 0 && !c.plain))
		return usage();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	if (c.block > 0) {
		pthread_t peer;
		if (pipe(req_pipe) < 0 || pipe(ans_pipe) < 0 || pthread_create(&peer, NULL, slow_peer, &c) != 0) {
			perror("duty_cycle: slow peer");
			return 1;
		}
	}
	if (c.plain) {
		struct plain p = { epoll_create1(EPOLL_CLOEXEC), timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) };
		struct epoll_event ev = { .events = EPOLLIN };
		if (p.ep < 0 || p.tfd < 0 || epoll_ctl(p.ep, EPOLL_CTL_ADD, p.tfd, &ev) < 0) {
			perror("duty_cycle: epoll/timerfd");
			return 1;
		}
		result = run(&c, wait_epoll, &p);
	} else {
		struct fl_options o = { .tag = "duty" };
		int err = fl_run(fiber_main, &c, &o, NULL);
		if (err < 0) {
			fprintf(stderr, "duty_cycle: fl_run: %s\n", strerror(-err));
			return 1;
		}
	}
	printf("self_idle_pct %.3f\n", 100 * result);
	return 0;
}
