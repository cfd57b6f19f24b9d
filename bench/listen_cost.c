/*
 * listen_cost.c — reading the accept queues of 10,000 listening sockets:
 * netlink sock_diag (what probe_listen_table uses in our own network
 * namespace) against the /proc/PID/net/tcp{,6} tables (what it falls back
 * to in another), in the same run (make bench B=listen_cost).
 *
 *   figure listen_table_10k_diag_us   one read of every LISTEN row by sock_diag
 *   figure listen_table_10k_proc_us   the same from /proc/PID/net/tcp and tcp6
 *   figure listen_table_10k_proc_vs_diag
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe_listen.h"

#define SOCKETS 10000
#define ROUNDS  20

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median microseconds of one table read; netns 0 takes the /proc path. */
static double median_us(uint64_t netns, struct probe_listen_row *rows, int *n)
{
	double t[ROUNDS];
	for (int r = 0; r < ROUNDS; r++) {
		double t0 = now_us();
		*n = probe_listen_table(getpid(), netns, rows, SOCKETS * 2);
		t[r] = now_us() - t0;
	}
	qsort(t, ROUNDS, sizeof(t[0]), cmp);
	return t[ROUNDS / 2];
}

int main(void)
{
	struct rlimit rl = { SOCKETS + 256, SOCKETS + 256 };
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		perror("setrlimit (run as root, or raise the open-file limit to 10256)");
		return 1;
	}
	for (int i = 0; i < SOCKETS; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16 + i % 100) < 0) {
			perror("socket");
			return 1;
		}
	}
	struct probe_listen_set set;
	if (probe_listen_scan(getpid(), &set) < 0)
		return 1;
	struct probe_listen_row *rows = calloc(SOCKETS * 2, sizeof(*rows));
	int nd = 0, np = 0;
	double diag = median_us(set.netns, rows, &nd);
	double proc = median_us(0, rows, &np);
	printf("%d listening sockets: sock_diag read %d LISTEN rows in %.0f us (median of %d), "
	       "/proc/PID/net/tcp{,6} %d rows in %.0f us\n", SOCKETS, nd, diag, ROUNDS, np, proc);
	printf("figure listen_table_10k_diag_us %.0f us\n", diag);
	printf("figure listen_table_10k_proc_us %.0f us\n", proc);
	printf("figure listen_table_10k_proc_vs_diag %.2f x\n", proc / diag);
	free(rows);
	return nd >= SOCKETS && np >= SOCKETS ? 0 : 1;
}
