/*
 * sampler_roles.c — what each loop is for (snapshot.h's enum snap_role),
 * so that the default views show the host's servers and not the shells,
 * the load generators and a runtime's idle secondary loops beside them.
 *
 * The rules, in order, for a loop:
 *   instrumented                                              server
 *   a secondary thread whose loop waits only for wake-ups from its own
 *   process (pipes, eventfds), that has used almost no CPU, while another
 *   loop of its process waits on sockets or a terminal or used CPU:
 *   node's second libuv loop                                   helper
 *   its process holds a listening TCP socket                   server
 *   it waits on a terminal (bash, tmux)                        interactive
 *   its process runs in a systemd unit or a container          server
 *   otherwise: only connections it opened (curl, ab)           client
 * What a loop waits on is read from its epoll fd's watch list or its poll
 * set (probe_waitset.h), each time it is judged: a loop is judged at its
 * first pass, a second after each of its first judgements, then every
 * ROLE_REJUDGE_NS.
 */
#include "collect/sampler_roles.h"
#include "collect/sampler_int.h"
#include "collect/sampler_limits.h"
#include "probe_waitset.h"

#define ROLE_REJUDGE_NS (10 * NS)
/* A helper loop's whole CPU time stays under this: it only ever woke up
 * to find nothing to do (node's: ~0 ms over hours). */
#define HELPER_CPU_NS (20 * 1000000ull)

/* The epoll fd w waits on: its loop fd, or while that is being learnt
 * the candidate it waited on most (its first second is enough to judge). */
static int epoll_fd_of(const struct sworker *w)
{
	if (w->basis == PROBE_BASIS_EPOLL_FD)
		return w->loop_fd;
	if (w->basis != PROBE_BASIS_LEARNING)
		return -1;
	const struct probe_loop_cand *best = NULL;
	for (int i = 0; i < w->loop.ncand; i++)
		if (w->loop.cand[i].kind == PROBE_FD_EVENTPOLL && (!best || w->loop.cand[i].waits > best->waits))
			best = &w->loop.cand[i];
	return best ? best->fd : -1;
}

/* What w's loop waits on, 0 while its loop fd or poll set is unknown. */
static unsigned waits_of(const struct sworker *w)
{
	unsigned kinds = 0;
	int epfd = epoll_fd_of(w);
	const int *fds = w->basis == PROBE_BASIS_PLAIN ? w->poll_fds : NULL;
	int n = fds ? w->npoll_fds : 0;
	if (epfd < 0 && n == 0)
		return 0;
	if (probe_waitset_kinds(w->pid, epfd, fds, n, &kinds) < 0)
		return 0;
	return kinds;
}

/* Another loop of w's process does the work: it is instrumented, waits
 * on sockets or a terminal, or has used CPU (node's main loop beside its
 * threadpool waits only on its own eventfds). */
static int has_main_loop(const struct sampler *s, const struct sworker *w)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct sworker *o = s->w[i];
		if (o != w && o->pid == w->pid && !o->gone_ns && (o->instrumented || o->worked))
			return 1;
	}
	return 0;
}

/* A role is judged again a second after each of its first ROLE_EARLY
 * judgements (a loop just found has little CPU time and a half-learnt loop
 * fd), then every ROLE_REJUDGE_NS. */
#define ROLE_EARLY 3

static int due(const struct sworker *w, uint64_t now)
{
	if (w->role == SNAP_ROLE_UNKNOWN)
		return 1;
	return now - w->role_at >= (w->role_n < ROLE_EARLY ? NS : ROLE_REJUDGE_NS);
}

static enum snap_role judge(struct sampler *s, struct sworker *w)
{
	if (w->instrumented)
		return SNAP_ROLE_SERVER;
	if (!w->worked && w->tid != w->pid && w->waits == PROBE_WAITS_INTERNAL && has_main_loop(s, w))
		return SNAP_ROLE_HELPER;
	if (sampler_listens(s, w->pid) > 0)
		return SNAP_ROLE_SERVER;
	if (w->waits & PROBE_WAITS_TERMINAL)
		return SNAP_ROLE_INTERACTIVE;
	if (w->in_unit)
		return SNAP_ROLE_SERVER;
	/* a loop whose poll is known to wait on nothing it can tell (an empty
	 * epoll set, a ring) is a client too; one still being learnt, not yet */
	return w->waits || (w->basis != PROBE_BASIS_LEARNING && w->basis != PROBE_BASIS_NONE) ? SNAP_ROLE_CLIENT
											   : SNAP_ROLE_UNKNOWN;
}

/* A named thread never seen in its poll, busy in (nearly) every sample of
 * BUSY_LOOP_SAMPLES or more and running now and then (not parked in one
 * blocking call), whose process holds an epoll instance: a
 * loop saturated from the start, whose poll always has events and so
 * never blocks (a listener whose accept queue is never empty), in a
 * process none of whose threads was seen waiting in a poll. Sampled it
 * reads idle ~0; the limits' backlog and pool rules apply to it. */
#define BUSY_LOOP_SAMPLES 20
#define BUSY_LOOP_SHARE   0.9
#define BUSY_LOOP_CPU_NS  (5 * 1000000ull)   /* it ran: a thread parked in one read never does */

/* Whether another thread of w's process was seen in its poll (or publishes). */
static int process_polls(const struct sampler *s, const struct sworker *w)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct sworker *o = s->w[i];
		if (o != w && o->pid == w->pid && !o->gone_ns && (o->instrumented || o->series.polls_seen))
			return 1;
	}
	return 0;
}

static void judge_busy_loop(struct sampler *s, struct sworker *w)
{
	/* a process whose loop was seen waiting: its busy threads are its helpers (sampler_pools.c) */
	if (w->busy_loop && process_polls(s, w))
		w->busy_loop = 0;
	if (w->busy_loop || !w->kept || w->instrumented || w->member || w->sched || w->series.polls_seen)
		return;
	const uint32_t *n = w->series.total.n;
	const struct series_sched *a = &w->series.total.sched_first, *z = &w->series.sched_last;
	if (!a->valid || !z->valid || z->run_ns < a->run_ns + BUSY_LOOP_CPU_NS)
		return;
	double all = (double)n[SERIES_POLL] + n[SERIES_RUNNING] + n[SERIES_BLOCKED] + n[SERIES_OTHER];
	if (all >= BUSY_LOOP_SAMPLES && n[SERIES_RUNNING] + n[SERIES_BLOCKED] >= BUSY_LOOP_SHARE * all &&
	    sampler_holds_epoll(s, w->pid) > 0 && !process_polls(s, w))
		w->busy_loop = 1;
}

int sampler_judge_roles(struct sampler *s, uint64_t now)
{
	int pending = 0;
	/* what each due loop waits on first: a helper is told by its process's other loops */
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->gone_ns || !due(w, now))
			continue;
		struct probe_schedstat ss = w->judged;   /* the 4 Hz reading; a loop just found has none yet */
		if (!ss.run_ns && probe_schedstat_sample(&w->ss, &ss) < 0)
			ss.run_ns = 0;
		if (ss.run_ns >= HELPER_CPU_NS)
			w->worked = 1;
		judge_busy_loop(s, w);
		/* a listening process's loop that worked is a server whatever it
		 * waits on: its fds (a readlink each) are not read */
		if (!w->instrumented && w->series.polls_seen && !(w->worked && sampler_listens(s, w->pid) > 0))
			w->waits = waits_of(w);
		if (w->waits & ~PROBE_WAITS_INTERNAL)
			w->worked = 1;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->gone_ns || !due(w, now))
			continue;
		if (!w->instrumented && !sampler_is_loop(w)) {
			/* not sampled yet, or a thread listed by -p or 't' that
			 * never polled (no loop): only the first is waited for */
			pending |= s->servers_only && w->role_at == 0 && w->series.samples == 0;
			continue;
		}
		if (sampler_listens(s, w->pid) < 0) {
			pending |= s->servers_only;   /* its sockets are not read yet: at the next limits pass */
			continue;
		}
		w->role = judge(s, w);
		w->role_at = now ? now : 1;
		w->role_n++;
		pending |= s->servers_only && w->role == SNAP_ROLE_UNKNOWN;
	}
	return pending;
}

int sampler_role_shown(const struct sampler *s, const struct sworker *w)
{
	return !s->servers_only || w->role == SNAP_ROLE_SERVER;
}
