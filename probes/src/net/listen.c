/*
 * listen.c — accept queues of a process's listening sockets (probe_listen.h).
 */
#include "probe_listen.h"
#include "probe_proc.h"

#include <dirent.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The inode of the network namespace at path ("net:[4026531992]"), 0 unknown. */
static uint64_t netns_at(const char *path)
{
	char link[64];
	ssize_t l = readlink(path, link, sizeof(link) - 1);
	unsigned long long ns = 0;
	if (l > 0) {
		link[l] = '\0';
		sscanf(link, "net:[%llu]", &ns);
	}
	return ns;
}

int probe_listen_scan(pid_t pid, struct probe_listen_set *set)
{
	char path[64], link[64];
	int err = probe_proc_path(path, sizeof(path), "%d/ns/net", (int)pid);
	if (err < 0)
		return err;
	set->netns = netns_at(path);
	if ((err = probe_proc_path(path, sizeof(path), "%d/fd", (int)pid)) < 0)
		return err;
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	set->n = 0;
	set->eventpolls = 0;
	struct dirent *e;
	while ((e = readdir(d)) && set->n < PROBE_LISTEN_MAX_SOCKETS) {
		ssize_t l = readlinkat(dfd, e->d_name, link, sizeof(link) - 1);
		if (l <= 0)
			continue;
		link[l] = '\0';
		unsigned long long ino;
		if (sscanf(link, "socket:[%llu]", &ino) == 1)
			set->ino[set->n++] = ino;
		else if (strcmp(link, "anon_inode:[eventpoll]") == 0)
			set->eventpolls++;
	}
	closedir(d);
	return 0;
}

/* One table: "sl local rem st tx_queue:rx_queue tr:when retrnsmt uid timeout inode ...". */
static int read_table(pid_t pid, const char *name, struct probe_listen_row *rows, int cap, int *n)
{
	char path[64];
	int err = probe_proc_path(path, sizeof(path), "%d/net/%s", (int)pid, name);
	if (err < 0)
		return err;
	FILE *f = fopen(path, "re");
	if (!f)
		return -errno;
	char line[512];
	while (*n < cap && fgets(line, sizeof(line), f)) {
		unsigned st, tx, rx;
		unsigned long long ino;
		if (sscanf(line, " %*s %*s %*s %x %x:%x %*s %*s %*s %*s %llu", &st, &tx, &rx, &ino) == 4 && st == 0x0A)
			rows[(*n)++] = (struct probe_listen_row){ ino, rx, 0 };   /* tx_queue is 0 there: the backlog is unknown */
		(void)tx;
	}
	fclose(f);
	return 0;
}

/* LISTEN sockets of family af in our own namespace, by sock_diag: the only
 * place the backlog (idiag_wqueue) shows; /proc's tx_queue of a LISTEN row
 * is 0. */
static int diag_family(int af, struct probe_listen_row *rows, int cap, int *n)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = (uint8_t)af, .sdiag_protocol = IPPROTO_TCP, .idiag_states = 1u << 10 /* LISTEN */ },
	};
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	int err = 0;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0)
		err = -errno;
	static __thread char buf[16384];
	for (int done = 0; !err && !done;) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0) {
			err = errno == EINTR ? 0 : -errno;
			continue;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				err = e->error < 0 ? e->error : -EIO;
				break;
			}
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(*m)) && *n < cap)
				rows[(*n)++] = (struct probe_listen_row){ m->idiag_inode, m->idiag_rqueue, m->idiag_wqueue };
		}
	}
	close(fd);
	return err;
}

int probe_listen_table(pid_t pid, uint64_t netns, struct probe_listen_row *rows, int cap)
{
	int n = 0;
	/* our namespace: sock_diag, with the backlog; another: its /proc tables, without */
	if (netns && netns == netns_at("/proc/self/ns/net") && diag_family(AF_INET, rows, cap, &n) == 0 &&
	    diag_family(AF_INET6, rows, cap, &n) == 0)
		return n;
	n = 0;
	int e4 = read_table(pid, "tcp", rows, cap, &n), e6 = read_table(pid, "tcp6", rows, cap, &n);
	return e4 < 0 && e6 < 0 ? e4 : n;   /* a host without IPv6 has no tcp6 */
}

void probe_listen_match(const struct probe_listen_set *set, const struct probe_listen_row *rows, int n,
			struct probe_listen *out)
{
	*out = (struct probe_listen){ 0 };
	for (int i = 0; i < n; i++) {
		int mine = 0;
		for (int k = 0; k < set->n && !mine; k++)
			mine = set->ino[k] == rows[i].ino;
		if (!mine)
			continue;
		uint64_t q = rows[i].queue, l = rows[i].limit ? rows[i].limit : 1;
		if (++out->sockets == 1 || q * (out->limit ? out->limit : 1) > (uint64_t)out->queue * l) {
			out->queue = rows[i].queue;
			out->limit = rows[i].limit;
		}
	}
}
