/* serve's per-address cap makes room for the newest connection: of its
 * address's, the one that has gone longest without finishing anything
 * goes: one not being answered since its accept or last answer, one being
 * answered since its answer began (deaf clients hold their answers open). */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "serve/serve_conns.h"

TestSuite(serve_conns, .timeout = 10);

enum { CAP = 64, PER_ADDR = 16, N = PER_ADDR + 1 };

struct pair {
	int ours, peer;   /* serve's end, the client's */
	struct serve_conn *c;
};

static void open_all(struct serve_conns *cs, struct pair *p, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	for (int i = 0; i < n; i++) {
		int sv[2];
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
		p[i].ours = sv[0];
		p[i].peer = sv[1];
		p[i].c = serve_conns_opened(cs, sv[0], (struct sockaddr *)&a);
		cr_assert(p[i].c);
	}
}

/* A fresh serve_conns holding n connections of one address in p. */
static struct serve_conns *holding(struct pair *p, int n)
{
	struct serve_conns *cs;
	cr_assert_eq(serve_conns_new(CAP, 60, &cs), 0);
	open_all(cs, p, n);
	return cs;
}

/* 1 when serve's end was shut down: the client reads end of file. */
static int is_shut(const struct pair *p)
{
	char b;
	return recv(p->peer, &b, 1, 0) == 0;
}

/* Only connection `which` of p[0..n) was shut down (-1: none). */
static void expect_shut_only(const struct pair *p, int n, int which)
{
	for (int i = 0; i < n; i++) {
		int shut = is_shut(&p[i]);
		cr_expect_eq(shut, i == which, "connection %d %s", i, shut ? "shut down" : "left open");
	}
}

static void close_all(struct serve_conns *cs, struct pair *p, int n)
{
	for (int i = 0; i < n; i++) {
		serve_conns_closed(cs, p[i].c);
		close(p[i].ours);
		close(p[i].peer);
	}
	serve_conns_delete(cs);
}

Test(serve_conns, all_answering_the_one_answered_longest_goes)
{
	struct pair p[N];
	struct serve_conns *cs = holding(p, PER_ADDR);
	/* answered in an order that is not the accept order */
	for (int i = PER_ADDR - 1; i >= 0; i--) {
		serve_conns_answering(cs, p[(i + 5) % PER_ADDR].c);
		usleep(1000);
	}
	open_all(cs, p + PER_ADDR, 1);
	expect_shut_only(p, N, (PER_ADDR - 1 + 5) % PER_ADDR);
	char buf[256];
	cr_expect_eq(serve_conns_health(cs, buf, sizeof(buf)), 1);
	cr_expect(strstr(buf, "1 over 16 per address"), "%s", buf);
	close_all(cs, p, N);
}

Test(serve_conns, one_not_answering_goes_before_any_answer)
{
	struct pair p[N];
	struct serve_conns *cs = holding(p, PER_ADDR);
	for (int i = 0; i < PER_ADDR; i++)
		if (i != 9)
			serve_conns_answering(cs, p[i].c);
	open_all(cs, p + PER_ADDR, 1);
	expect_shut_only(p, N, 9);
	close_all(cs, p, N);
}

Test(serve_conns, under_the_cap_nothing_goes)
{
	struct pair p[PER_ADDR];
	struct serve_conns *cs = holding(p, PER_ADDR);
	expect_shut_only(p, PER_ADDR, -1);
	char buf[256];
	cr_expect_eq(serve_conns_health(cs, buf, sizeof(buf)), 0, "%s", buf);
	close_all(cs, p, PER_ADDR);
}

/* A slowloris accepted after the deaf clients' answers began stays; the
 * deaf one answered longest goes (ci46: the slowloris went, and serve
 * kept 500 answers no one read). */
Test(serve_conns, a_stuck_answer_goes_before_a_later_idle_one)
{
	struct pair p[N];
	struct serve_conns *cs;
	cr_assert_eq(serve_conns_new(CAP, 60, &cs), 0);
	open_all(cs, p, PER_ADDR - 1);
	for (int i = 0; i < PER_ADDR - 1; i++) {
		serve_conns_answering(cs, p[(i + 3) % (PER_ADDR - 1)].c);
		usleep(1000);
	}
	usleep(1000);
	open_all(cs, p + PER_ADDR - 1, 1);   /* the slowloris: accepted, never a whole request */
	usleep(1000);
	open_all(cs, p + PER_ADDR, 1);       /* a scraper */
	expect_shut_only(p, N, 3);
	close_all(cs, p, N);
}
