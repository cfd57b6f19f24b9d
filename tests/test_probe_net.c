/* Socket resolution on fixture trees: IPv4 and IPv6 tables, unix sockets (named, abstract, unnamed), malformed tables. */
#include <criterion/criterion.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe_fd.h"
#include "probe_proc.h"
#include "support/probe_child.h"

static char root[PATH_MAX];

static void fixture_init(void)
{
	cr_assert_eq(tchild_fixture_dir(root, sizeof(root)), 0);
	setenv(PROBE_PROC_ROOT_ENV, root, 1);
}

static void fixture_fini(void)
{
	unsetenv(PROBE_PROC_ROOT_ENV);
	tchild_fixture_remove(root);
}

TestSuite(probe_net, .init = fixture_init, .fini = fixture_fini);

#define INET_HDR "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
#define INET6_HDR "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
#define UNIX_HDR "Num       RefCount Protocol Flags    Type St Inode Path\n"

static void write_tables(void)
{
	cr_assert_eq(tchild_fixture_write(root, "7/net/tcp", INET_HDR
		"   0: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0\n"
		"   1: 0100007F:18EB 0100007F:C822 01 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 20 4 30 10 -1\n"
		"   2: 0A00000A:0050 0B00000A:D431 06 00000000:00000000 03:00000D1D 00000000     0        0 1003 1\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "7/net/tcp6", INET6_HDR
		"   0: 00000000000000000000000001000000:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2001 1 0000000000000000 100 0 0 10 0\n"
		"   1: 00000000000000000000000001000000:0050 00000000000000000000000001000000:E1F2 01 00000000:00000000 00:00000000 00000000  1000        0 2002 1 0000000000000000 20 4 30 10 -1\n"
		"   2: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:9C40 08 00000000:00000000 00:00000000 00000000     0        0 2003 1\n"
		"   3: B80D0120000000000000000001000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2004 1\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "7/net/udp", INET_HDR
		"  10: 00000000:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 3001 2 0000000000000000 0\n"
		"  11: 0100007F:E000 0100007F:0035 01 00000000:00000000 00:00000000 00000000     0        0 3002 2 0000000000000000 0\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "7/net/udp6", INET6_HDR
		"  12: 00000000000000000000000000000000:0202 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4001 2 0000000000000000 0\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "7/net/unix", UNIX_HDR
		"0000000000000000: 00000002 00000000 00010000 0001 01 5001 /run/app.sock\n"
		"0000000000000000: 00000002 00000000 00010000 0001 01 5002 @/tmp/.X11-unix/X0\n"
		"0000000000000000: 00000003 00000000 00000000 0001 03  5003\n"
		"0000000000000000: 00000003 00000000 00000000 0002 03 5004 /var/run/with space.sock\n"), 0);
}

static void expect(uint64_t inode, const char *want)
{
	char buf[PROBE_TARGET_LEN];
	int r = probe_net_describe(7, inode, buf, sizeof(buf));
	cr_assert_eq(r, 0, "inode %llu: %d", (unsigned long long)inode, r);
	cr_assert_str_eq(buf, want);
}

Test(probe_net, ipv4_tables, .timeout = PROBE_TEST_TIMEOUT)
{
	write_tables();
	expect(1001, "tcp 127.0.0.1:6379 LISTEN");
	expect(1002, "tcp 127.0.0.1:6379 -> 127.0.0.1:51234 ESTABLISHED");
	expect(1003, "tcp 10.0.0.10:80 -> 10.0.0.11:54321 TIME_WAIT");
	expect(3001, "udp 0.0.0.0:53");
	expect(3002, "udp 127.0.0.1:57344 -> 127.0.0.1:53");
}

Test(probe_net, ipv6_tables, .timeout = PROBE_TEST_TIMEOUT)
{
	write_tables();
	expect(2001, "tcp6 [::1]:80 LISTEN");
	expect(2002, "tcp6 [::1]:80 -> [::1]:57842 ESTABLISHED");
	expect(2003, "tcp6 [::ffff:127.0.0.1]:8080 -> [::ffff:127.0.0.1]:40000 CLOSE_WAIT");
	expect(2004, "tcp6 [2001:db8::1]:443 LISTEN");
	expect(4001, "udp6 [::]:514");
}

Test(probe_net, unix_sockets, .timeout = PROBE_TEST_TIMEOUT)
{
	write_tables();
	expect(5001, "unix /run/app.sock");
	expect(5002, "unix @/tmp/.X11-unix/X0");
	expect(5003, "unix [5003]");
	expect(5004, "unix /var/run/with space.sock");
	char buf[64];
	cr_assert_eq(probe_net_describe(7, 999999, buf, sizeof(buf)), -ENOENT);
	cr_assert_str_eq(buf, "");
}

Test(probe_net, fd_links_resolve_through_tables, .timeout = PROBE_TEST_TIMEOUT)
{
	write_tables();
	cr_assert_eq(tchild_fixture_symlink(root, "7/fd/5", "socket:[1002]"), 0);
	cr_assert_eq(tchild_fixture_symlink(root, "7/fd/6", "socket:[777]"), 0);
	cr_assert_eq(tchild_fixture_symlink(root, "7/fd/7", "pipe:[4242]"), 0);
	struct probe_fd_target t;
	cr_assert_eq(probe_fd_target(7, 5, &t), 0);
	cr_assert_eq(t.kind, PROBE_FD_SOCKET);
	cr_assert_eq(t.inode, 1002);
	cr_assert_str_eq(t.text, "tcp 127.0.0.1:6379 -> 127.0.0.1:51234 ESTABLISHED");
	/* a socket in no table (netlink, another family) keeps its link text */
	cr_assert_eq(probe_fd_target(7, 6, &t), 0);
	cr_assert_eq(t.kind, PROBE_FD_SOCKET);
	cr_assert_str_eq(t.text, "socket:[777]");
	cr_assert_eq(probe_fd_target(7, 7, &t), 0);
	cr_assert_eq(t.kind, PROBE_FD_PIPE);
	cr_assert_eq(t.inode, 4242);
	cr_assert_eq(probe_fd_target(7, 8, &t), -EBADF);
	cr_assert_eq(probe_fd_target(8, 5, &t), -ESRCH);

	/* a small text buffer truncates instead of overflowing */
	char small[12];
	cr_assert_eq(probe_net_describe(7, 1002, small, sizeof(small)), 0);
	cr_assert_str_eq(small, "tcp 127.0.0");
}

Test(probe_net, malformed_tables, .timeout = PROBE_TEST_TIMEOUT)
{
	char longline[2000];
	memset(longline, 'x', sizeof(longline) - 1);
	longline[sizeof(longline) - 1] = '\0';
	char tcp[4096];
	snprintf(tcp, sizeof(tcp), INET_HDR
		"   0: 0100007F:18EB\n"                                               /* truncated */
		"   1: 0100007G:18EB 00000000:0000 0A 0 0 0 0 0 6001\n"               /* bad hex */
		"   2: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:0 0 0 0 x\n" /* inode not a number */
		"   3: 0100007F:18E 00000000:0000 0A 00000000:00000000 00:0 0 0 0 6003\n" /* short port */
		"   4: 0100007F18EB0 00000000:0000 0A 00000000:00000000 00:0 0 0 0 6004\n" /* no colon */
		"%s 6005\n"                                                            /* longer than a line buffer */
		"   5: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 6006 1\n"
		"   6: 0100007F:18EB 00000000:0000 FF 00000000:00000000 00:00000000 00000000 0 0 6007 1\n"
		"   7: 0100007F:18EB", longline);
	cr_assert_eq(tchild_fixture_write(root, "9/net/tcp", tcp), 0);
	cr_assert_eq(tchild_fixture_write(root, "9/net/tcp6", INET6_HDR "   0: 0000:0050 0000:0000 0A 0 0 0 0 0 6008\n"), 0);
	cr_assert_eq(tchild_fixture_write(root, "9/net/udp", ""), 0);
	cr_assert_eq(tchild_fixture_write(root, "9/net/unix", UNIX_HDR "garbage\n0: 1 2 3 4 5\n0: 1 2 3 4 5 notanumber /x\n"), 0);
	/* udp6 missing entirely: a kernel without IPv6 */

	char buf[PROBE_TARGET_LEN];
	static const uint64_t bad[] = { 6001, 6002, 6003, 6004, 6005, 6008 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(probe_net_describe(9, bad[i], buf, sizeof(buf)), -ENOENT, "inode %llu: %s",
			     (unsigned long long)bad[i], buf);
	/* good lines among bad ones still resolve; an unknown state is shown as ? */
	cr_assert_eq(probe_net_describe(9, 6006, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "tcp 127.0.0.1:6379 LISTEN");
	cr_assert_eq(probe_net_describe(9, 6007, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "tcp 127.0.0.1:6379 ?");
	/* no net directory at all */
	cr_assert_eq(probe_net_describe(10, 6006, buf, sizeof(buf)), -ENOENT);
}
