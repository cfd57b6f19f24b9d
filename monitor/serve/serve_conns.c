/*
 * serve_conns.c — who may hold serve's connections, and for how long.
 *
 * libmicrohttpd's own limits are an idle timeout (a byte every few seconds
 * renews it: slowloris) and a total past which it stops accepting (10,000
 * idle sockets and no scrape gets in). So every connection is known here
 * from the moment it is accepted (MHD's connection notifications):
 * - a request must be complete and answered within the deadline from
 *   accept or from the last answer, or the connection is shut down;
 * - one client address holds at most per_addr connections: past it, the
 *   one of them that has gone longest without finishing anything is shut
 *   down: since it was accepted or last answered when not being answered,
 *   since its answer began when being answered (a scraper may share the
 *   attacker's address, and its connection is the fresh one; a client
 *   that reads nothing holds its answer open forever, a reader's is gone
 *   in ms, and a slowloris's request never ends);
 * - at the total cap a new connection shuts down the oldest one not being
 *   answered, so a scraper's fresh connection always finds room while the
 *   descriptors stay below the process's limit (MHD's own cap is set a
 *   reserve above ours, so it never stops accepting).
 * A connection is shut down (shutdown(2) on its socket, under the lock that
 * its close notification takes, so never a socket MHD has closed) and MHD
 * closes it as it would a client's hang-up.
 */
#include "serve/serve_conns.h"
#include "util/clock.h"
#include "util/idmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#define REAP_MS       200    /* how often deadlines are looked at */
#define EVICT_LOOK    64     /* connections past the oldest looked at for one not being answered */
#define PRESSURE_S    60.0   /* /healthz says degraded this long after a connection was turned away */

struct serve_conn {
	struct serve_conn *prev, *next; /* by since, oldest first; unlinked once shut down */
	int      fd;
	uint64_t addr;                  /* hash of the client address */
	double   since;                 /* accept or last answer (monotonic s) */
	int      busy;                  /* a response is being sent */
	double   answer_at;             /* when it began (monotonic s) */
	int      linked;
};

struct serve_conns {
	pthread_mutex_t lock;
	pthread_cond_t  wake;
	pthread_t reaper;
	int      stop;
	struct serve_conn head;         /* sentinel of the list */
	struct idmap by_addr;           /* addr → connections open */
	unsigned n, cap, per_addr;
	double   deadline_s;
	unsigned long evicted, refused, expired;
	double   pressure_at;           /* last turn-away, 0 never */
};

static double now_s(void)
{
	return (double)mono_ns() / 1e9;
}

static void link_tail(struct serve_conns *cs, struct serve_conn *c)
{
	c->prev = cs->head.prev;
	c->next = &cs->head;
	cs->head.prev->next = c;
	cs->head.prev = c;
	c->linked = 1;
}

static void unlink_conn(struct serve_conn *c)
{
	if (!c->linked)
		return;
	c->prev->next = c->next;
	c->next->prev = c->prev;
	c->linked = 0;
}

/* Shuts c down; it stays counted until MHD reports it closed. */
static void shut(struct serve_conns *cs, struct serve_conn *c, unsigned long *why)
{
	unlink_conn(c);
	shutdown(c->fd, SHUT_RDWR);
	++*why;
	cs->pressure_at = now_s();
}

static uint64_t addr_hash(const struct sockaddr *sa)
{
	const unsigned char *p = NULL;
	size_t len = 0;
	if (sa && sa->sa_family == AF_INET) {
		p = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
		len = 4;
	} else if (sa && sa->sa_family == AF_INET6) {
		p = (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		len = 16;
	}
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return (h >> 1) | 1;   /* never 0 or all ones: idmap's */
}

static size_t addr_count(struct serve_conns *cs, uint64_t addr)
{
	size_t v = 0;
	idmap_get(&cs->by_addr, addr, &v);
	return v;
}

/* The addresses anew from the live connections: the map keeps every
 * address it ever saw, and a local user has 2^24 loopback ones. */
static void recount(struct serve_conns *cs)
{
	idmap_clear(&cs->by_addr);
	for (struct serve_conn *c = cs->head.next; c != &cs->head; c = c->next)
		idmap_put(&cs->by_addr, c->addr, addr_count(cs, c->addr) + 1);
}

static void *reap(void *arg)
{
	struct serve_conns *cs = arg;
	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += REAP_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
		double now = now_s();
		struct serve_conn *c = cs->head.next;
		while (c != &cs->head && now - c->since > cs->deadline_s) {
			struct serve_conn *next = c->next;
			shut(cs, c, &cs->expired);
			c = next;
		}
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

int serve_conns_new(unsigned cap, double deadline_s, struct serve_conns **out)
{
	struct serve_conns *cs = calloc(1, sizeof(*cs));
	if (!cs)
		return -ENOMEM;
	cs->cap = cap;
	cs->per_addr = cap / 16 > 16 ? cap / 16 : 16;
	cs->deadline_s = deadline_s;
	cs->head.prev = cs->head.next = &cs->head;
	idmap_init(&cs->by_addr);
	pthread_mutex_init(&cs->lock, NULL);
	pthread_cond_init(&cs->wake, NULL);
	int err = pthread_create(&cs->reaper, NULL, reap, cs);
	if (err) {
		pthread_cond_destroy(&cs->wake);
		pthread_mutex_destroy(&cs->lock);
		free(cs);
		return -err;
	}
	*out = cs;
	return 0;
}

void serve_conns_delete(struct serve_conns *cs)
{
	if (!cs)
		return;
	pthread_mutex_lock(&cs->lock);
	cs->stop = 1;
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->lock);
	pthread_join(cs->reaper, NULL);
	idmap_done(&cs->by_addr);
	pthread_cond_destroy(&cs->wake);
	pthread_mutex_destroy(&cs->lock);
	free(cs);
}

/* Since when c has finished nothing: its answer's start while it is being
 * answered, else its accept or last answer. */
static double held_since(const struct serve_conn *c)
{
	return c->busy ? c->answer_at : c->since;
}

struct serve_conn *serve_conns_opened(struct serve_conns *cs, int fd, const struct sockaddr *addr)
{
	struct serve_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		shutdown(fd, SHUT_RDWR);
		return NULL;
	}
	c->fd = fd;
	c->addr = addr_hash(addr);
	c->since = now_s();
	pthread_mutex_lock(&cs->lock);
	cs->n++;
	if (cs->by_addr.n > 4 * (size_t)cs->cap)
		recount(cs);
	size_t mine = addr_count(cs, c->addr);
	idmap_put(&cs->by_addr, c->addr, mine + 1);
	if (mine >= cs->per_addr) {
		struct serve_conn *pick = NULL;
		for (struct serve_conn *v = cs->head.next; v != &cs->head; v = v->next)
			if (v->addr == c->addr && (!pick || held_since(v) < held_since(pick)))
				pick = v;
		if (pick)
			shut(cs, pick, &cs->refused);
	} else if (cs->n > cs->cap) {
		/* room for this one: the oldest not being answered goes */
		struct serve_conn *v = cs->head.next, *pick = NULL;
		for (int k = 0; v != &cs->head && k < EVICT_LOOK && !pick; v = v->next, k++)
			if (!v->busy)
				pick = v;
		if (!pick && cs->head.next != &cs->head)
			pick = cs->head.next;
		if (pick)
			shut(cs, pick, &cs->evicted);
	}
	link_tail(cs, c);
	pthread_mutex_unlock(&cs->lock);
	return c;
}

void serve_conns_closed(struct serve_conns *cs, struct serve_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	unlink_conn(c);
	cs->n--;
	size_t mine = addr_count(cs, c->addr);
	if (mine)
		idmap_put(&cs->by_addr, c->addr, mine - 1);
	pthread_mutex_unlock(&cs->lock);
	free(c);
}

void serve_conns_answering(struct serve_conns *cs, struct serve_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	c->busy = 1;
	c->answer_at = now_s();
	pthread_mutex_unlock(&cs->lock);
}

void serve_conns_answered(struct serve_conns *cs, struct serve_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	c->busy = 0;
	if (c->linked) {   /* the next request's deadline counts from here */
		unlink_conn(c);
		c->since = now_s();
		link_tail(cs, c);
	}
	pthread_mutex_unlock(&cs->lock);
}

int serve_conns_health(struct serve_conns *cs, char *buf, size_t len)
{
	pthread_mutex_lock(&cs->lock);
	double ago = cs->pressure_at ? now_s() - cs->pressure_at : -1;
	int degraded = ago >= 0 && ago < PRESSURE_S;
	if (degraded)
		snprintf(buf, len,
			 "connections turned away %.0f s ago: %lu over the cap of %u, %lu over %u per address, "
			 "%lu past the %.0f-s request deadline (%u open)",
			 ago, cs->evicted, cs->cap, cs->refused, cs->per_addr, cs->expired, cs->deadline_s, cs->n);
	else if (len)
		buf[0] = '\0';
	pthread_mutex_unlock(&cs->lock);
	return degraded;
}
