/*
 * loop_truth — uninstrumented event loops whose synchronous waits use the
 * loop's own syscalls, each measuring its own idle and blocked time: the
 * ground truth for bench/idle_truth and tests/test_probe_loop.
 *
 *   loop_truth --case CASE [--block B] [--work W] [--seconds S] [--period-ms P]
 *
 * Every period (10 ms) the loop spins W of it ("work"), spends B of it in a
 * synchronous wait, and waits in its loop's poll for the rest, woken by a
 * timerfd at the period's end. CASE:
 *   sync_poll   loop: epoll_wait; sync: poll() with a timeout on a TCP
 *               socket to a local upstream (a child process) that answers
 *               after B*P (a blocking client call with a timeout)
 *   em_select   loop: select() on the epoll fd, then epoll_wait(0) (the
 *               EventMachine shape); sync: select(0, NULL, NULL, NULL, &tv)
 *   ppoll       loop: ppoll on the epoll fd and a wake-up eventfd;
 *               sync: ppoll on a private pipe nobody writes, with a timeout
 *   nested      loop: epoll_wait; sync: a private epoll fd created, waited
 *               on (its own timerfd) and closed
 *   plain       poll() over a timerfd and a socketpair, no epoll anywhere;
 *               B must be 0 (its poll is the loop's)
 * With --spans SPEC (and --idle-ms I, default 20) it runs known busy spans
 * instead: SPEC is a list of LENxCOUNT (e.g. 1x49,40x1: 49 spans of 1 ms,
 * then one of 40 ms, over and over), each span spinning, then I ms in the
 * loop's wait (B must be 0). LEN is MS (fixed), uLO-HI (uniform between
 * LO and HI ms) or eMEAN (exponential of that mean, ms). It then also prints its own measure of its
 * spans (the end of one loop wait to the start of the next), in ms:
 *   spans n N p50 X p99 Y max Z
 * the ground truth for bench/lag_truth and tests/test_lag.
 * It prints, once its time is up (or on SIGTERM):
 *   self idle_pct X blocked_pct Y wall_s Z
 * idle = time inside the loop's wait, blocked = time inside the synchronous
 * wait, both over wall time. "ready" is printed once the loop runs.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum kase { SYNC_POLL, EM_SELECT, PPOLL, NESTED, PLAIN };

struct loop {
	enum kase kase;
	double block, work, period;
	int ep, tfd, evfd, up, pipefd[2], sp[2], ntfd;
};

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct timespec ts_of(double s)
{
	return (struct timespec){ (time_t)s, (long)((s - (time_t)s) * 1e9) };
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* The upstream: a child that answers each 4-byte request (a delay in us)
 * with one byte, that late. */
static int start_upstream(void)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (ls < 0 || bind(ls, (void *)&a, sizeof(a)) < 0 || listen(ls, 1) < 0 || getsockname(ls, (void *)&a, &al) < 0)
		die("loop_truth: upstream socket");
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		die("loop_truth: fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		int c = accept(ls, NULL, NULL);
		uint32_t us;
		while (c >= 0 && recv(c, &us, sizeof(us), MSG_WAITALL) == sizeof(us)) {
			struct timespec d = ts_of(us / 1e6);
			nanosleep(&d, NULL);
			if (send(c, "a", 1, 0) != 1)
				break;
		}
		_exit(0);
	}
	close(ls);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (void *)&a, sizeof(a)) < 0)
		die("loop_truth: connect");
	return s;
}

/* The synchronous wait of one period, about d seconds long. */
static void sync_wait(struct loop *l, double d)
{
	switch (l->kase) {
	case SYNC_POLL: {
		uint32_t us = (uint32_t)(d * 1e6);
		char b;
		struct pollfd p = { .fd = l->up, .events = POLLIN };
		if (send(l->up, &us, sizeof(us), 0) != sizeof(us) || poll(&p, 1, 5000) != 1 || read(l->up, &b, 1) != 1)
			die("loop_truth: upstream call");
		break;
	}
	case EM_SELECT: {
		struct timeval tv = { (time_t)d, (long)((d - (time_t)d) * 1e6) };
		select(0, NULL, NULL, NULL, &tv);
		break;
	}
	case PPOLL: {
		struct pollfd p = { .fd = l->pipefd[0], .events = POLLIN };
		struct timespec t = ts_of(d);
		ppoll(&p, 1, &t, NULL);
		break;
	}
	case NESTED: {
		int nep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN };
		struct itimerspec its = { .it_value = ts_of(d) };
		uint64_t ticks;
		if (nep < 0 || epoll_ctl(nep, EPOLL_CTL_ADD, l->ntfd, &ev) < 0)
			die("loop_truth: nested epoll");
		timerfd_settime(l->ntfd, 0, &its, NULL);
		while (epoll_wait(nep, &ev, 1, -1) != 1)
			;
		(void)!read(l->ntfd, &ticks, sizeof(ticks));
		close(nep);
		break;
	}
	case PLAIN:
		break;
	}
}

/* The loop's own wait, until the timerfd fires at `until`. */
static void loop_wait(struct loop *l, double until)
{
	struct itimerspec its = { .it_value = ts_of(until) };
	struct epoll_event ev;
	uint64_t ticks;
	timerfd_settime(l->tfd, TFD_TIMER_ABSTIME, &its, NULL);
	while (!stop && now_s() < until) {
		switch (l->kase) {
		case SYNC_POLL:
		case NESTED:
			epoll_wait(l->ep, &ev, 1, -1);
			break;
		case EM_SELECT: {
			fd_set rd;
			FD_ZERO(&rd);
			FD_SET(l->ep, &rd);
			if (select(l->ep + 1, &rd, NULL, NULL, NULL) == 1)
				epoll_wait(l->ep, &ev, 1, 0);
			break;
		}
		case PPOLL: {
			struct pollfd p[2] = { { .fd = l->ep, .events = POLLIN }, { .fd = l->evfd, .events = POLLIN } };
			ppoll(p, 2, NULL, NULL);
			break;
		}
		case PLAIN: {
			struct pollfd p[2] = { { .fd = l->tfd, .events = POLLIN }, { .fd = l->sp[0], .events = POLLIN } };
			poll(p, 2, -1);
			break;
		}
		}
		(void)!read(l->tfd, &ticks, sizeof(ticks));
	}
}

static void setup(struct loop *l)
{
	l->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	l->ntfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	l->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->tfd < 0 || l->ntfd < 0 || l->evfd < 0 || pipe(l->pipefd) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, l->sp) < 0)
		die("loop_truth: fds");
	if (l->kase == SYNC_POLL)
		l->up = start_upstream();
	if (l->kase == PLAIN) {
		l->ep = -1;
		return;
	}
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (l->ep < 0 || epoll_ctl(l->ep, EPOLL_CTL_ADD, l->tfd, &ev) < 0 ||
	    epoll_ctl(l->ep, EPOLL_CTL_ADD, l->evfd, &ev) < 0)
		die("loop_truth: epoll");
}

/* --spans: the schedule, and the spans measured */
#define MAX_STEPS 16
struct spans {
	int    nsteps;
	char   kind[MAX_STEPS];  /* 'f'ixed, 'u'niform, 'e'xponential */
	double ms[MAX_STEPS], hi[MAX_STEPS];
	int    count[MAX_STEPS];
	double idle;            /* seconds in the loop's wait after each span */
	double *seen;           /* measured spans, s */
	size_t n, cap;
};

static int parse_spans(struct spans *sp, const char *spec)
{
	const char *p = spec;
	while (*p && sp->nsteps < MAX_STEPS) {
		char *end, kind = *p == 'u' || *p == 'e' ? *p++ : 'f';
		double ms = strtod(p, &end), hi = ms;
		if (kind == 'u' && end > p && *end == '-')
			hi = strtod(end + 1, &end);
		if (end == p || *end != 'x' || !(ms > 0) || !(hi >= ms))
			return -1;
		sp->kind[sp->nsteps] = kind;
		sp->hi[sp->nsteps] = hi;
		long count = strtol(end + 1, &end, 10);
		if (count <= 0 || (*end && *end != ','))
			return -1;
		sp->ms[sp->nsteps] = ms;
		sp->count[sp->nsteps++] = (int)count;
		p = *end ? end + 1 : end;
	}
	return *p || !sp->nsteps ? -1 : 0;
}

static void note_span(struct spans *sp, double s)
{
	if (sp->n == sp->cap) {
		size_t cap = sp->cap ? 2 * sp->cap : 4096;
		double *v = realloc(sp->seen, cap * sizeof(*v));
		if (!v)
			return;
		sp->seen = v;
		sp->cap = cap;
	}
	sp->seen[sp->n++] = s;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The p-th percentile of the spans (the smallest with at least p % of them
 * at or below it), ms. */
static double span_pct(const struct spans *sp, double p)
{
	size_t k = (size_t)ceil(p / 100 * (double)sp->n);
	return sp->n ? 1e3 * sp->seen[k ? k - 1 : 0] : 0;
}

/* Known spans, each followed by the loop's wait, until `end`. */
static double run_spans(struct loop *l, struct spans *sp, double end)
{
	double idle = 0, left = 0;
	for (int step = 0, k = 0; !stop && now_s() < end;) {
		double t = now_s();
		if (left > 0)
			note_span(sp, t - left);   /* the last wait's end to this one's start */
		loop_wait(l, t + sp->idle);
		left = now_s();
		idle += left - t;
		double ms = sp->ms[step];
		if (sp->kind[step] == 'u')
			ms += drand48() * (sp->hi[step] - ms);
		else if (sp->kind[step] == 'e')
			ms = -ms * log(1 - drand48());
		double until = left + ms / 1e3;
		while (now_s() < until)
			; /* the span's work */
		if (++k == sp->count[step]) {
			k = 0;
			step = (step + 1) % sp->nsteps;
		}
	}
	qsort(sp->seen, sp->n, sizeof(*sp->seen), by_value);
	printf("spans n %zu p50 %.3f p99 %.3f max %.3f\n", sp->n, span_pct(sp, 50), span_pct(sp, 99),
	       span_pct(sp, 100));
	return idle;
}

static int usage(void)
{
	fprintf(stderr, "usage: loop_truth --case sync_poll|em_select|ppoll|nested|plain [--block B] [--work W]\n"
			"                  [--seconds S] [--period-ms P]   (B + W <= 1; plain: B = 0)\n"
			"       loop_truth --case CASE --spans MSxN[,MSxN...] [--idle-ms I] [--seconds S]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "case", required_argument, NULL, 'c' },  { "block", required_argument, NULL, 'b' },
		{ "work", required_argument, NULL, 'w' },  { "seconds", required_argument, NULL, 's' },
		{ "period-ms", required_argument, NULL, 'p' }, { "spans", required_argument, NULL, 'S' },
		{ "idle-ms", required_argument, NULL, 'I' }, { 0 },
	};
	static const char *const names[] = { "sync_poll", "em_select", "ppoll", "nested", "plain" };
	struct loop l = { .kase = (enum kase)-1, .work = 0.1, .period = 0.010 };
	struct spans sp = { .idle = 0.020 };
	const char *spans = NULL;
	double seconds = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "c:b:w:s:p:", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
				if (strcmp(optarg, names[i]) == 0)
					l.kase = (enum kase)i;
			break;
		case 'b': l.block = atof(optarg); break;
		case 'w': l.work = atof(optarg); break;
		case 's': seconds = atof(optarg); break;
		case 'p': l.period = atof(optarg) / 1000; break;
		case 'S': spans = optarg; break;
		case 'I': sp.idle = atof(optarg) / 1000; break;
		default: return usage();
		}
	}
	if ((int)l.kase < 0 || l.block < 0 || l.work < 0 || l.block + l.work > 1 || l.period <= 0 || seconds < 0 ||
	    (l.kase == PLAIN && l.block > 0) || (spans && (parse_spans(&sp, spans) < 0 || l.block > 0 || sp.idle < 0)))
		return usage();
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	setup(&l);
	printf("ready\n");
	fflush(stdout);

	double start = now_s(), next = start, idle = 0, blocked = 0;
	double end = seconds > 0 ? start + seconds : INFINITY;
	srand48((long)getpid());
	if (spans)
		idle = run_spans(&l, &sp, end);
	while (!spans && !stop && now_s() < end) {
		double t = now_s();
		while (now_s() < t + l.work * l.period)
			; /* work */
		if (l.block > 0) {
			t = now_s();
			sync_wait(&l, l.block * l.period);
			blocked += now_s() - t;
		}
		next += l.period;
		if (next < now_s())
			next = now_s(); /* overran: no catching up in a burst */
		t = now_s();
		loop_wait(&l, next);
		idle += now_s() - t;
	}
	double wall = now_s() - start;
	printf("self idle_pct %.3f blocked_pct %.3f wall_s %.3f\n", 100 * idle / wall, 100 * blocked / wall, wall);
	free(sp.seen);
	return 0;
}
