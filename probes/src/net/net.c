/*
 * net.c — socket inodes to addresses, through /proc/PID/net/{tcp,tcp6,udp,
 * udp6,unix}. PID's view is used, not /proc/net, so a worker in another
 * network namespace is resolved against its own tables.
 *
 * This reads whole tables and is only called on a cache miss (probe_fd_cache),
 * never per sample. Lines that do not parse are skipped: a malformed table
 * yields "not found", never a crash.
 */
#include "probe_fd.h"
#include "probe_proc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>

/* TCP states as /proc prints them (hex), named after <netinet/tcp.h>. */
static const char *const tcp_state_names[] = {
	[TCP_ESTABLISHED] = "ESTABLISHED", [TCP_SYN_SENT] = "SYN_SENT",
	[TCP_SYN_RECV] = "SYN_RECV",       [TCP_FIN_WAIT1] = "FIN_WAIT1",
	[TCP_FIN_WAIT2] = "FIN_WAIT2",     [TCP_TIME_WAIT] = "TIME_WAIT",
	[TCP_CLOSE] = "CLOSE",             [TCP_CLOSE_WAIT] = "CLOSE_WAIT",
	[TCP_LAST_ACK] = "LAST_ACK",       [TCP_LISTEN] = "LISTEN",
	[TCP_CLOSING] = "CLOSING",
};

static const char *tcp_state_name(unsigned st)
{
	if (st < sizeof(tcp_state_names) / sizeof(tcp_state_names[0]) && tcp_state_names[st])
		return tcp_state_names[st];
	return "?";
}

/* "0100007F" (v4) or 32 hex digits (v6), each 32-bit word printed by the
 * kernel as a host-order integer of network-order bytes; then ":PORT" in
 * hex. Writes "127.0.0.1:6379" or "[::1]:80". Returns 0 or -EINVAL. */
static int format_endpoint(const char *hex, int v6, char *buf, size_t len)
{
	int words = v6 ? 4 : 1;
	uint32_t w[4];
	for (int i = 0; i < words; i++) {
		uint32_t v = 0;
		for (int j = 0; j < 8; j++) {
			char c = hex[i * 8 + j];
			int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
				: c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (d < 0)
				return -EINVAL;
			v = v << 4 | (uint32_t)d;
		}
		w[i] = v;
	}
	const char *p = hex + words * 8;
	unsigned port;
	int used;
	if (*p != ':' || sscanf(p + 1, "%4x%n", &port, &used) != 1 || used != 4)
		return -EINVAL;
	char addr[INET6_ADDRSTRLEN];
	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, w, addr, sizeof(addr)))
		return -EINVAL;
	int n = v6 ? snprintf(buf, len, "[%s]:%u", addr, port) : snprintf(buf, len, "%s:%u", addr, port);
	return n < 0 ? -EINVAL : 0;
}

/* One line of tcp/tcp6/udp/udp6. Returns 1 and fills buf if it is inode,
 * 0 if it is another socket or does not parse. */
static int inet_line(const char *line, const char *proto, int v6, uint64_t inode, char *buf, size_t len)
{
	char local[40], remote[40];
	unsigned st;
	unsigned long long ino;
	/* sl: local remote st tx:rx tr:when retrnsmt uid timeout inode */
	if (sscanf(line, " %*u: %39s %39s %x %*s %*s %*s %*u %*u %llu", local, remote, &st, &ino) != 4)
		return 0;
	if (ino != inode)
		return 0;
	size_t alen = v6 ? 32 + 5 : 8 + 5;
	if (strlen(local) != alen || strlen(remote) != alen)
		return 0;
	char l[64], r[64];
	if (format_endpoint(local, v6, l, sizeof(l)) < 0 || format_endpoint(remote, v6, r, sizeof(r)) < 0)
		return 0;
	int is_tcp = proto[0] == 't';
	/* unconnected: an all-zero remote (LISTEN, or an unconnected udp socket) */
	int connected = strspn(remote, "0:") != strlen(remote);
	if (is_tcp && connected)
		snprintf(buf, len, "%s %s -> %s %s", proto, l, r, tcp_state_name(st));
	else if (is_tcp)
		snprintf(buf, len, "%s %s %s", proto, l, tcp_state_name(st));
	else if (connected)
		snprintf(buf, len, "%s %s -> %s", proto, l, r);
	else
		snprintf(buf, len, "%s %s", proto, l);
	return 1;
}

/* One line of unix: "Num: RefCount Protocol Flags Type St Inode [Path]". */
static int unix_line(const char *line, uint64_t inode, char *buf, size_t len)
{
	unsigned long long ino;
	int off = -1;
	if (sscanf(line, "%*s %*x %*x %*x %*x %*x %llu%n", &ino, &off) != 1 || off < 0 || ino != inode)
		return 0;
	const char *path = line + off;
	while (*path == ' ')
		path++;
	size_t plen = strcspn(path, "\n");
	if (plen == 0)
		snprintf(buf, len, "unix [%llu]", ino);
	else
		snprintf(buf, len, "unix %.*s", (int)plen, path);
	return 1;
}

/* Scans one table. Returns 1 when found, 0 when not, -errno when the table
 * cannot be opened (missing tables, e.g. without IPv6, count as empty). */
static int scan_table(pid_t pid, const char *name, uint64_t inode, char *buf, size_t len)
{
	char path[PATH_MAX], line[512];
	int err = probe_proc_path(path, sizeof(path), "%d/net/%s", (int)pid, name);
	if (err < 0)
		return err;
	FILE *f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	int found = 0, first = 1, is_unix = strcmp(name, "unix") == 0;
	int v6 = strchr(name, '6') != NULL;
	char proto[8];
	snprintf(proto, sizeof(proto), "%s", name);
	while (!found && fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		int whole = n > 0 && line[n - 1] == '\n';
		if (first) {
			first = 0; /* the header */
		} else if (is_unix) {
			found = unix_line(line, inode, buf, len);
		} else {
			found = inet_line(line, proto, v6, inode, buf, len);
		}
		/* a line longer than the buffer: skip its rest */
		while (!whole && fgets(line, sizeof(line), f)) {
			n = strlen(line);
			whole = n > 0 && line[n - 1] == '\n';
		}
	}
	fclose(f);
	return found;
}

int probe_net_describe(pid_t pid, uint64_t inode, char *buf, size_t len)
{
	static const char *const tables[] = { "tcp", "tcp6", "udp", "udp6", "unix" };
	int last_err = 0;
	if (len == 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		int r = scan_table(pid, tables[i], inode, buf, len);
		if (r == 1)
			return 0;
		if (r < 0)
			last_err = r;
	}
	buf[0] = '\0';
	return last_err == -ESRCH || last_err == -EACCES || last_err == -EPERM ? last_err : -ENOENT;
}
