/*
 * cmd_serve.c — `loopstat serve`: sample for good and serve the figures to
 * Prometheus. Every --interval the model over the last --window seconds is
 * built and published (serve.h); a scrape reads what was published. The
 * main thread waits for SIGTERM, SIGINT or SIGHUP with sigtimedwait, so a
 * signal ends the wait at once and the exit is clean (status 0).
 */
#include "cli.h"
#include "export/export_config.h"
#include "model/feed.h"
#include "serve/serve.h"
#include "serve/serve_flight.h"
#include "util/clock.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct serve_ctx {
	struct cli_common c;        /* first: the shared setters work on it */
	const char *listen;         /* borrowed from argv */
	const char *host;
	double window_s, interval_s, timeout_s;
	double max_connections;
	const char *flight_dir;     /* --flight-recorder, borrowed */
	struct flight_opts fo;
};

#define CTX(ctx) ((struct serve_ctx *)(ctx))

static int set_listen(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	CTX(ctx)->listen = arg;
	return 0;
}

static int set_host(void *ctx, const char *arg, char *msg, size_t len)
{
	if (!arg[0]) {
		snprintf(msg, len, "--host: empty");
		return -1;
	}
	CTX(ctx)->host = arg;
	return 0;
}

static int set_window(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("window", arg, 1, 3600, &CTX(ctx)->window_s, msg, len);
}

static int set_interval(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("interval", arg, 0.1, 3600, &CTX(ctx)->interval_s, msg, len);
}

static int set_timeout(void *ctx, const char *arg, char *msg, size_t len)
{
	return cli_set_duration("timeout", arg, 1, 3600, &CTX(ctx)->timeout_s, msg, len);
}

static int set_max_connections(void *ctx, const char *arg, char *msg, size_t len)
{
	if (cli_parse_number(arg, 1, 65536, &CTX(ctx)->max_connections) < 0 ||
	    CTX(ctx)->max_connections != floor(CTX(ctx)->max_connections)) {
		snprintf(msg, len, "invalid max-connections '%s': expected a whole number from 1 to 65536", arg);
		return -1;
	}
	return 0;
}

static int set_flight_dir(void *ctx, const char *arg, char *msg, size_t len)
{
	(void)msg, (void)len;
	CTX(ctx)->flight_dir = arg;
	return 0;
}

FLIGHT_CLI_SETTERS(struct serve_ctx, fo)

static const struct cli_option options[] = {
	CLI_OPT_TARGETS,
	CLI_OPT_RATE,
	CLI_OPT_SOURCE,
	CLI_OPT_PRECISION,
	CLI_OPT_MAX_WORKERS,
	{ 'l', "listen", "ADDR:PORT", "where to serve /metrics and /healthz (default " SERVE_DEFAULT_LISTEN
	  "; :PORT for every address)", set_listen },
	{ 0, "window", "DURATION", "the span each publication's figures cover (default 10 s)", set_window },
	{ 0, "interval", "DURATION", "how often the figures are computed and published (default 1 s)", set_interval },
	{ 0, "host", "NAME", "the host label (default: the host name up to its first dot)", set_host },
	{ 0, "max-connections", "N", "connections at once; more are closed on accept (default 4096)",
	  set_max_connections },
	{ 0, "timeout", "DURATION", "close a connection idle this long (default 10 s)", set_timeout },
	CLI_OPT_STALL_MS,
	{ 0, "flight-recorder", "DIR", "keep the last --ring of every worker in memory and write a recording into "
	  "DIR on each --trigger or SIGUSR2 (record --ring's recorder)", set_flight_dir },
	FLIGHT_CLI_OPTIONS("with --flight-recorder: the span the ring keeps (default 120s)"),
	{ 0 },
};

/* Room for every connection, the sampler's /proc files and the rest: the
 * soft limit goes up to the hard one if need be. The probes keep at most
 * a quarter of the limit open (libprobes' fd budget: past it they recycle
 * their files), so connections get the rest but 512. Returns the
 * connections that fit. */
static unsigned fit_fd_limit(unsigned want)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return want;
	rlim_t spare = 512 + (rl.rlim_cur == RLIM_INFINITY ? 1024 : rl.rlim_cur / 4);
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want + spare) {
		rlim_t need = (want + 512) * 4 / 3 + 1;
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > need ? need : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
		spare = 512 + (rl.rlim_cur == RLIM_INFINITY ? 1024 : rl.rlim_cur / 4);
	}
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want + spare) {
		unsigned fit = rl.rlim_cur > spare + 16 ? (unsigned)(rl.rlim_cur - spare) : 16;
		cli_error("--max-connections %u: the open-file limit is %llu; serving at most %u at once", want,
		          (unsigned long long)rl.rlim_cur, fit);
		return fit;
	}
	return want;
}

struct publisher {
	struct serve_ctx *x;
	struct feed *f;
	struct serve *sv;
	struct flight *fl;               /* NULL: no flight recorder */
};

/* The model of the last window, and the recorder's gauges, published. */
static void publish(void *arg)
{
	struct publisher *p = arg;
	struct model m;
	int err = feed_now(p->f, p->x->window_s, 0, &m);
	if (err < 0) {
		cli_error("building the model: %s", strerror(-err));
		return;   /* the last figures stay; /healthz goes stale if this lasts */
	}
	struct serve_gauge g[SERVE_FLIGHT_GAUGES];
	size_t ng = p->fl ? serve_flight_gauges(p->fl, g) : 0;
	if (serve_publish_with(p->sv, &m, (int64_t)time(NULL), g, ng) < 0)
		cli_error("out of memory: the last figures stay");
	model_done(&m);
}

/* Publishes the model of the last window on a fixed schedule, every
 * interval from the start (building a model does not make it drift; a
 * schedule missed altogether restarts from now), until a signal comes;
 * returns it. */
static int publish_until_signal(struct publisher *p, const sigset_t *stop)
{
	double next = mono_s() + p->x->interval_s;
	for (;;) {
		double left = next - mono_s();
		left = left > 0 ? left : 0;
		struct timespec wait = { (time_t)left, (long)((left - floor(left)) * 1e9) };
		int sig = sigtimedwait(stop, NULL, &wait);
		if (sig > 0)
			return sig;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return SIGTERM;
		next = serve_next_at(next, p->x->interval_s, mono_s());
		publish(p);
	}
}

static int serve_run(struct serve_ctx *x)
{
	char err[512], host[256];
	int port, rc;
	struct export_opts eo;
	export_opts_init(&eo);
	if (x->host)
		snprintf(eo.host, sizeof(eo.host), "%s", x->host);
	export_opts_host(&eo, host, sizeof(host));
	const char *spec = x->listen ? x->listen : SERVE_DEFAULT_LISTEN;
	int fd = serve_listen(spec, &port, err, sizeof(err));
	if (fd == -EINVAL)
		return cli_usage_error("serve", "--listen %s", err);
	if (fd < 0) {
		cli_error("--listen: %s", err);
		return fd == -EACCES ? EXIT_ACCESS : EXIT_FAIL;
	}
	/* every thread started from here on inherits the mask: only sigtimedwait takes them */
	sigset_t stop, old;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stop, &old);
	signal(SIGPIPE, SIG_IGN);
	/* the limit raised before the sampler opens a file: its budget is a quarter of it */
	unsigned max_connections = fit_fd_limit((unsigned)x->max_connections);
	struct feed_opts how = { 0 };
	struct flight *fl = NULL;
	double rate_hz = x->c.rate_hz ? x->c.rate_hz : MODEL_FEED_DEFAULT_HZ;
	if (x->flight_dir && !(fl = serve_flight_open(&x->fo, x->flight_dir, rate_hz, &how, &rc))) {
		close(fd);
		return rc;
	}
	struct feed *f;
	if ((rc = cli_feed_open(&x->c, &how, &f)) >= 0) {
		flight_delete(fl);
		close(fd);
		return rc;
	}
	struct serve_opts o = { .listen_fd = fd, .max_connections = max_connections,
	                        .timeout_s = (unsigned)ceil(x->timeout_s), .threads = 2, .prefix = "loopstat",
	                        .host = host, .stale_s = 3 * x->interval_s + 2 };
	struct serve *sv;
	if ((rc = serve_start(&o, &sv, err, sizeof(err))) < 0) {
		cli_error("%s", err);
		feed_close(f);
		flight_delete(fl);
		return EXIT_FAIL;
	}
	cli_log(stderr, "listening on %s (port %d): /metrics, the figures of the last %g s every %g s", spec, port,
	        x->window_s, x->interval_s);
	struct publisher p = { x, f, sv, fl };
	struct serve_flight_loop loop = { f, fl, &stop, x->interval_s, publish, &p };
	int sig = fl ? serve_flight_follow(&loop) : publish_until_signal(&p, &stop);
	serve_stop(sv);
	feed_stop(f);   /* no sample reaches the ring after this: its recording is ended */
	int lost = flight_delete(fl) < 0;
	feed_close(f);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	cli_log(stderr, "%s: stopped", sigabbrev_np(sig) ? sigabbrev_np(sig) : "signal");
	return lost ? EXIT_FAIL : EXIT_OK;
}

/* Bytes from which serve's allocations are mapped on their own. */
#define SERVE_MMAP_THRESHOLD (64 * 1024)

static int run(int argc, char **argv)
{
	struct serve_ctx x = { .window_s = 10, .interval_s = 1, .timeout_s = 10, .max_connections = 4096,
			       .fo = FLIGHT_OPTS_INIT };
	cli_common_init(&x.c);
	int rc = cli_parse(&cmd_serve, argc, argv, &x);
	/* serve runs for good: a flood's workers (~90 KB each), snapshots and
	 * models (as much a worker) are mapped on their own and unmapped when
	 * freed, so its memory comes back once the flood ends; glibc would
	 * otherwise raise this threshold after the first large free and keep
	 * what the flood took in its heaps */
	mallopt(M_MMAP_THRESHOLD, SERVE_MMAP_THRESHOLD);
	if (rc < 0)
		rc = serve_flight_usage(&x.fo, x.flight_dir);
	if (rc < 0 && (rc = cli_check_pids(&x.c.targets)) < 0 && (rc = cli_check_access(&x.c.targets)) < 0)
		rc = serve_run(&x);
	cli_common_done(&x.c);
	return rc;
}

const struct cli_command cmd_serve = {
	"serve", "sample for good and serve the figures to Prometheus (/metrics)", "[--listen ADDR:PORT] [OPTIONS]",
	"Samples every worker for good and, every --interval, publishes the figures of the last --window\n"
	"at http://ADDR:PORT/metrics in Prometheus' text format (OpenMetrics when Accept asks for it);\n"
	"a scrape reads what was published and never samples. /healthz says 200 while the figures are\n"
	"fresh. SIGTERM or SIGINT stops it (exit 0). See docs/export.md.\n"
	"With --flight-recorder DIR it is also record --ring's flight recorder: the last --ring of every\n"
	"worker stays in a bounded ring in memory (its bound printed at the start and served as\n"
	"loopstat_flight_ring_bytes), and each --trigger met, or SIGUSR2, writes a recording into DIR\n"
	"(loopstat_flight_recordings_written counts them).",
	options, run,
};
