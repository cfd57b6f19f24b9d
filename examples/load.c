/*
 * load — a load generator for echo servers, on libfiberloop.
 *
 *   load --port N --connections C --size B --rate R --duration S
 *
 * C connections to 127.0.0.1:N, each a fiber sending B-byte messages and
 * reading the echo back, verifying every byte. --rate R is the total
 * messages/s over all connections on a fixed schedule (0: as fast as
 * possible, one message in flight per connection). Latency is measured
 * from the message's scheduled send time, so a slow server is not hidden
 * by a generator that waits for it. Prints messages/s and p50/p99 latency;
 * exits 1 on any connection or verification error.
 */
#include "fiberloop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

struct config {
	int    port, connections;
	size_t size;
	double rate, duration;
};

struct lat {
	uint32_t *us;  /* owned: latencies in microseconds */
	size_t    n, cap;
};

static struct config cfg = { .port = -1, .connections = 1, .size = 64, .rate = 0, .duration = 5 };
static volatile int stop;
static long errors, connect_errors;
static uint64_t messages;
static struct lat lat;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(uint64_t ns)
{
	if (lat.n == lat.cap) {
		size_t cap = lat.cap ? lat.cap * 2 : 1 << 16;
		uint32_t *n = realloc(lat.us, cap * sizeof(*n));
		if (!n)
			return;
		lat.us = n;
		lat.cap = cap;
	}
	uint64_t us = ns / 1000;
	lat.us[lat.n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

/* Message content depends on connection and sequence, so a reply sent to
 * the wrong connection or out of order is caught. */
static void fill(char *buf, size_t len, int conn, uint64_t seq)
{
	uint64_t x = ((uint64_t)conn << 40) ^ seq ^ 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (char)x;
	}
}

static int connect_one(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cfg.port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int err = fl_connect(fd, (struct sockaddr *)&a, sizeof(a));
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static void *client(void *arg)
{
	int id = (int)(intptr_t)arg;
	char *out = malloc(cfg.size), *in = malloc(cfg.size);
	int fd = connect_one();
	if (fd < 0) {
		connect_errors++;
		goto out;
	}
	/* per-connection schedule, phase-shifted so connections interleave */
	uint64_t step = cfg.rate > 0 ? (uint64_t)(1e9 * cfg.connections / cfg.rate) : 0;
	uint64_t next = now_ns() + (step ? step * (uint64_t)id / (uint64_t)cfg.connections : 0);
	for (uint64_t seq = 0; !stop; seq++) {
		uint64_t t = now_ns();
		if (step) {
			if (next > t && fl_sleep((double)(next - t) / 1e9) < 0)
				break;
			if (stop)
				break;
		} else {
			next = t;
		}
		fill(out, cfg.size, id, seq);
		if (fl_send(fd, out, cfg.size, 0) != (ssize_t)cfg.size ||
		    fl_read_full(fd, in, cfg.size) != (ssize_t)cfg.size) {
			errors++;
			break;
		}
		if (memcmp(in, out, cfg.size) != 0) {
			errors++;
			break;
		}
		record(now_ns() - next);
		messages++;
		next += step;
	}
	close(fd);
out:
	free(out);
	free(in);
	return NULL;
}

static void *load_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < cfg.connections; i++)
		fl_spin(client, (void *)(intptr_t)i, "client");
	fl_sleep(cfg.duration);
	stop = 1;
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(double p)
{
	if (!lat.n)
		return 0;
	size_t i = (size_t)(p * (double)(lat.n - 1) + 0.5);
	return lat.us[i];
}

static void usage(void)
{
	fprintf(stderr, "usage: load --port N [--connections C] [--size B] [--rate R] [--duration S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		if (strcmp(k, "--port") == 0)
			cfg.port = atoi(v);
		else if (strcmp(k, "--connections") == 0)
			cfg.connections = atoi(v);
		else if (strcmp(k, "--size") == 0)
			cfg.size = (size_t)strtoull(v, NULL, 10);
		else if (strcmp(k, "--rate") == 0)
			cfg.rate = atof(v);
		else if (strcmp(k, "--duration") == 0)
			cfg.duration = atof(v);
		else
			usage();
		i++;
	}
	if (cfg.port <= 0 || cfg.port > 65535 || cfg.connections < 1 || cfg.size < 1 || cfg.rate < 0 ||
	    cfg.duration <= 0)
		usage();
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
	signal(SIGPIPE, SIG_IGN);
	struct fl_options o = { .stack_size = 64 * 1024, .tag = "load" };
	uint64_t t0 = now_ns();
	int err = fl_run(load_main, NULL, &o, NULL);
	double secs = (double)(now_ns() - t0) / 1e9;
	if (err) {
		fprintf(stderr, "load: fl_run: %s\n", strerror(-err));
		return 1;
	}
	if (lat.n)
		qsort(lat.us, lat.n, sizeof(*lat.us), cmp_u32);
	printf("connections %d\nsize %zu\nrate %.0f\nseconds %.3f\nmessages %lu\n", cfg.connections, cfg.size,
	       cfg.rate, secs, (unsigned long)messages);
	printf("messages_per_sec %.0f\np50_us %.0f\np99_us %.0f\n", (double)messages / cfg.duration, pct(0.50),
	       pct(0.99));
	printf("errors %ld\nconnect_errors %ld\n", errors, connect_errors);
	free(lat.us);
	return errors || connect_errors ? 1 : 0;
}
