/*
 * pool — an epoll loop beside a helper pool: N pthreads that wait on one
 * condition variable for jobs the loop hands them, as libuv's threadpool
 * does. Used by the pool tests and bench/pool_cost.
 *
 *   pool [--threads N] [--busy PCT] [--period-ms P] [--work sleep|spin]
 *        [--saturated] [--seconds S]
 *
 * Every period the loop (a timerfd in epoll_wait) posts one job per pool
 * thread, each taking PCT% of the period, so each thread is out of its
 * condvar wait about PCT% of the time. --work sleep makes a job sleep (a
 * blocking call, as a pool doing file I/O; no CPU needed, so a loaded host
 * does not change the shares), spin burns the CPU until the job's wall
 * time is up. --saturated fills the queue without end from the start: the
 * threads never wait, and the loop waits with no timer at all.
 * On start it prints "pool PID loop TID threads TID,TID,..." and flushes.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct cfg {
	int    threads;
	double busy;       /* share of each period a job takes, 0..1 */
	double period;     /* seconds */
	double seconds;    /* run time; 0: until killed */
	int    spin;       /* a job burns the CPU, else it sleeps */
	int    saturated;  /* the queue never empties */
};

static struct cfg cfg = { .threads = 4, .busy = 0.5, .period = 0.02 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER;
static uint64_t queued;          /* jobs waiting; UINT64_MAX: without end */
static pid_t *tids;
static pthread_mutex_t tid_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tid_cond = PTHREAD_COND_INITIALIZER;
static int ntids;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void job(void)
{
	uint64_t ns = (uint64_t)(cfg.busy * cfg.period * 1e9);
	if (!cfg.spin) {
		struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		return;
	}
	uint64_t end = now_ns() + ns;
	volatile uint64_t x = 0;
	while (now_ns() < end)
		for (int i = 0; i < 1000; i++)
			x += (uint64_t)i;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&tid_lock);
	tids[ntids++] = gettid();
	pthread_cond_signal(&tid_cond);
	pthread_mutex_unlock(&tid_lock);
	for (;;) {
		pthread_mutex_lock(&lock);
		while (!queued)
			pthread_cond_wait(&more, &lock);
		if (queued != UINT64_MAX)
			queued--;
		pthread_mutex_unlock(&lock);
		job();
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: pool [--threads N] [--busy PCT] [--period-ms P] [--work sleep|spin] "
			"[--saturated] [--seconds S]\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' }, { "busy", required_argument, NULL, 'b' },
		{ "period-ms", required_argument, NULL, 'p' }, { "work", required_argument, NULL, 'w' },
		{ "saturated", no_argument, NULL, 'S' }, { "seconds", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': cfg.threads = atoi(optarg); break;
		case 'b': cfg.busy = atof(optarg) / 100; break;
		case 'p': cfg.period = atof(optarg) / 1000; break;
		case 'w':
			if (strcmp(optarg, "spin") && strcmp(optarg, "sleep"))
				usage();
			cfg.spin = !strcmp(optarg, "spin");
			break;
		case 'S': cfg.saturated = 1; break;
		case 's': cfg.seconds = atof(optarg); break;
		default: usage();
		}
	}
	if (cfg.threads < 1 || cfg.threads > 4096 || !(cfg.busy >= 0 && cfg.busy <= 1) || !(cfg.period > 0))
		usage();
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	if (cfg.saturated)
		queued = UINT64_MAX;
	tids = calloc((size_t)cfg.threads, sizeof(*tids));
	if (!tids)
		return 1;
	for (int i = 0; i < cfg.threads; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
		pthread_detach(t);
	}
	pthread_mutex_lock(&tid_lock);
	while (ntids < cfg.threads)
		pthread_cond_wait(&tid_cond, &tid_lock);
	pthread_mutex_unlock(&tid_lock);
	printf("pool %d loop %d threads ", (int)getpid(), (int)gettid());
	for (int i = 0; i < cfg.threads; i++)
		printf("%s%d", i ? "," : "", (int)tids[i]);
	printf("\n");
	fflush(stdout);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (ep < 0 || tfd < 0)
		return 1;
	long ns = (long)(cfg.period * 1e9);
	struct itimerspec it = { { ns / 1000000000, ns % 1000000000 }, { ns / 1000000000, ns % 1000000000 } };
	if (!cfg.saturated && timerfd_settime(tfd, 0, &it, NULL) < 0)
		return 1;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = tfd };
	epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
	uint64_t end = cfg.seconds > 0 ? now_ns() + (uint64_t)(cfg.seconds * 1e9) : 0;
	for (;;) {
		int timeout = end ? (int)((end - now_ns()) / 1000000) + 1 : -1;
		if (end && now_ns() >= end)
			break;
		struct epoll_event got;
		int n = epoll_wait(ep, &got, 1, timeout);
		if (n <= 0)
			continue;
		uint64_t ticks;
		if (read(tfd, &ticks, sizeof(ticks)) != sizeof(ticks))
			continue;
		/* one job per thread per period: a thread late to take its job
		 * leaves it for the next one, as a real queue would */
		pthread_mutex_lock(&lock);
		if (queued < (uint64_t)cfg.threads * 2)
			queued += (uint64_t)cfg.threads;
		pthread_cond_broadcast(&more);
		pthread_mutex_unlock(&lock);
	}
	return 0;
}
