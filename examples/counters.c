/*
 * counters.c — a plain epoll loop (no fibers) that publishes loopstat
 * counters through the public stats API: any event loop can be monitored.
 *
 *   counters [-s|--seconds S] [-b|--busy-pct P]     (S 0: until SIGINT/SIGTERM; P default 30)
 *
 * Each 10 ms tick it spins P% of the tick ("work") and waits in epoll_wait
 * for the rest, counting polls, blocking-poll time and ops as it goes.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "fiberloop_stats.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	double seconds = 0;
	int busy_pct = 30;
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "busy-pct", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "s:b:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 's': seconds = atof(optarg); break;
		case 'b': busy_pct = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: counters [-s|--seconds S] [-b|--busy-pct P]\n");
			return 2;
		}
	}
	if (busy_pct < 0 || busy_pct > 100) {
		fprintf(stderr, "counters: busy percentage must be 0..100\n");
		return 2;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	struct itimerspec its = { .it_interval = { 0, 10000000 }, .it_value = { 0, 10000000 } };
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0 || tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev) < 0) {
		perror("counters: epoll/timerfd setup");
		return 1;
	}
	struct loopstat_shm_slot *s = fl_stats_slot_acquire("counters", LOOPSTAT_BACKEND_NONE, ep);
	if (!s) {
		fprintf(stderr, "counters: fl_stats_slot_acquire: %s\n", strerror(errno));
		return 1;
	}
	printf("pid %d publishing to %s\n", (int)getpid(), fl_stats_path());
	fflush(stdout);

	uint64_t end = seconds > 0 ? now_ns() + (uint64_t)(seconds * 1e9) : UINT64_MAX;
	while (!stop && now_ns() < end) {
		uint64_t t0 = now_ns();
		int n = epoll_wait(ep, &ev, 1, 100);
		fl_stat_add(&s->polls, 1);
		fl_stat_add(&s->polls_blocking, 1);
		fl_stat_add(&s->poll_time_ns, now_ns() - t0);
		if (n <= 0)
			continue;
		uint64_t expirations;
		if (read(tfd, &expirations, sizeof(expirations)) == sizeof(expirations))
			fl_stat_add(&s->completions, expirations);
		fl_stat_add(&s->ops, 1);
		uint64_t spin_until = now_ns() + (uint64_t)busy_pct * 100000u;
		while (now_ns() < spin_until)
			;
	}
	fl_stats_slot_release(s);
	return 0;
}
