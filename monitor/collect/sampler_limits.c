/*
 * sampler_limits.c — what may limit a worker besides its loop, read once a
 * second into every worker's series: its cgroup's CPU quota and throttling
 * (once per cgroup, however many workers share it: a pod's threads all
 * do), and its process's listening sockets' accept queues (the tables
 * once per network namespace, the process's socket inodes every 10 s).
 */
#include "collect/sampler_limits.h"
#include "collect/sampler_int.h"
#include "probe_cgroup.h"
#include "probe_listen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Groups a sampler keeps at most: a worker of a further one has no quota
 * figures (container churn must not grow a long run without bound). */
#define SAMPLER_MAX_CGROUPS 1024

/* A group with a quota: who spends it. Its processes' CPU time is read
 * each second (up to CG_PROCS of them) and summed with a decay of CG_DECAY
 * a second (the last ~4 s: clock ticks are too coarse for one second of a
 * small quota); one that spent CG_SPENDER_SHARE of the group's CPU spends
 * the quota, the others only share it. */
#define CG_PROCS         256
#define CG_SPENDER_SHARE 0.2
#define CG_DECAY         0.75

struct cg_proc {
	pid_t    pid;
	uint64_t ticks;             /* utime + stime at the last read */
	double   spent;             /* of them lately, decayed (0: new or idle) */
};

struct sampler_cgroup {
	char dir[PROBE_CGROUP_PATH_LEN];
	int  version;
	int  ok;                     /* this second's read worked */
	struct probe_cgroup_cpu now;
	struct cg_proc *procs;       /* owned; nprocs, by pid as listed; NULL until it has a quota */
	int  nprocs;
	int  procs_ok;               /* the last listing and its CPU times are known */
	double   spent;              /* the group's CPU ticks lately, decayed */
};

/* A worker's cgroup is looked up again this often, as its listening
 * sockets are: a process moved to another group (systemctl set-property,
 * a container runtime) takes the new group's quota and throttling. */
#define CGROUP_RELOOK_NS (10 * NS)

/* w's group: its index + 1 (-1 none), looked up at its first pass and
 * again every CGROUP_RELOOK_NS. */
static int group_of(struct sampler *s, struct sworker *w, uint64_t now, pid_t *last_pid, int *last_cg)
{
	if (w->cg && now - w->cg_at < CGROUP_RELOOK_NS)
		return w->cg;
	w->cg_at = now;
	if (w->pid == *last_pid)   /* a process's threads come one after another */
		return w->cg = *last_cg;
	char dir[PROBE_CGROUP_PATH_LEN];
	int version = probe_cgroup_cpu_dir(w->pid, dir, sizeof(dir));
	w->cg = -1;
	if (version > 0) {
		size_t i = 0;
		while (i < s->ncg && strcmp(s->cg[i].dir, dir) != 0)
			i++;
		if (i == s->ncg && s->ncg < SAMPLER_MAX_CGROUPS) {
			struct sampler_cgroup *g = realloc(s->cg, (s->ncg + 1) * sizeof(*g));
			if (g) {
				s->cg = g;
				memset(&g[i], 0, sizeof(g[i]));
				memcpy(g[i].dir, dir, sizeof(dir));
				g[i].version = version;
				s->ncg++;
			}
		}
		if (i < s->ncg)
			w->cg = (int)i + 1;
	}
	*last_pid = w->pid;
	*last_cg = w->cg;
	return w->cg;
}

/* The CPU time of g's processes since the last second, into each cg_proc. */
static void read_spenders(struct sampler_cgroup *g)
{
	pid_t pids[CG_PROCS];
	struct cg_proc cur[CG_PROCS];
	int n = probe_cgroup_procs(g->dir, pids, CG_PROCS);
	g->procs_ok = 0;
	if (n < 0 || (!g->procs && !(g->procs = calloc(CG_PROCS, sizeof(*g->procs)))))
		return;
	g->spent = 0;
	for (int i = 0; i < n; i++) {
		struct probe_stat st;
		cur[i] = (struct cg_proc){ .pid = pids[i] };
		if (probe_stat_read(pids[i], 0, &st) < 0)
			continue;
		cur[i].ticks = st.utime + st.stime;
		for (int k = 0; k < g->nprocs; k++)
			if (g->procs[k].pid == pids[i] && g->procs[k].ticks <= cur[i].ticks)
				cur[i].spent = CG_DECAY * g->procs[k].spent + (double)(cur[i].ticks - g->procs[k].ticks);
		g->spent += cur[i].spent;
	}
	g->procs_ok = g->nprocs > 0;   /* a second listing: the differences hold */
	memcpy(g->procs, cur, (size_t)n * sizeof(cur[0]));
	g->nprocs = n;
}

/* Whether pid only shares g's quota: 1 when it spent under
 * CG_SPENDER_SHARE of what the group spent lately, 0 when it spent more,
 * -1 when that is unknown (a first listing, nobody spent, past CG_PROCS). */
static int shares_only(const struct sampler_cgroup *g, pid_t pid)
{
	if (!g->procs_ok || !g->spent)
		return -1;
	for (int k = 0; k < g->nprocs; k++)
		if (g->procs[k].pid == pid)
			return g->procs[k].spent < CG_SPENDER_SHARE * g->spent;
	return -1;
}

int sampler_cgroup_spenders(const struct sampler *s, int cg, pid_t *pids, int cap, const char **name)
{
	*name = NULL;
	if (cg <= 0 || (size_t)cg > s->ncg)
		return 0;
	const struct sampler_cgroup *g = &s->cg[cg - 1];
	*name = probe_cgroup_name(g->dir);
	int n = 0;
	if (!g->procs_ok || !g->spent)
		return 0;
	/* the largest first: a few passes over a short list */
	double above = INFINITY;
	while (n < cap) {
		int best = -1;
		for (int k = 0; k < g->nprocs; k++)
			if (g->procs[k].spent < above && g->procs[k].spent >= CG_SPENDER_SHARE * g->spent &&
			    (best < 0 || g->procs[k].spent > g->procs[best].spent))
				best = k;
		if (best < 0)
			break;
		pids[n++] = g->procs[best].pid;
		above = g->procs[best].spent;
	}
	return n;
}

static void read_cgroups(struct sampler *s, uint64_t now)
{
	pid_t last_pid = 0;
	int last_cg = 0;
	for (size_t i = 0; i < s->n; i++)
		if (!s->w[i]->gone_ns)
			group_of(s, s->w[i], now, &last_pid, &last_cg);
	for (size_t i = 0; i < s->ncg; i++) {
		struct sampler_cgroup *g = &s->cg[i];
		g->ok = probe_cgroup_cpu_read(g->dir, g->version, &g->now) == 0;
		if (g->ok && !isnan(g->now.quota_cpus))
			read_spenders(g);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->gone_ns || w->cg <= 0 || !s->cg[w->cg - 1].ok)
			continue;
		const struct sampler_cgroup *g = &s->cg[w->cg - 1];
		series_add_cgroup(&w->series, now, (uint32_t)w->cg, g->now.throttled_ns, g->now.quota_cpus,
				  isnan(g->now.quota_cpus) ? -1 : shares_only(g, w->pid));
	}
}

/* ---- listening sockets ---- */

#define LISTEN_RESCAN_NS (10 * NS)   /* a process's fds are walked this often */
#define LISTEN_MAX_ROWS  4096        /* LISTEN rows kept per namespace */

struct sampler_listener {
	pid_t    pid;
	int      seen;
	int      matched;            /* its namespace's table was read this pass */
	uint64_t scanned_ns;
	struct probe_listen_set set;
	struct probe_listen now;
};

/* pid's entry, made (and its fds walked) at its first pass; NULL: no room. */
static struct sampler_listener *listener_of(struct sampler *s, pid_t pid, uint64_t now)
{
	size_t i;
	if (!idmap_get(&s->by_listener, (uint64_t)pid, &i)) {
		struct sampler_listener *l = realloc(s->lis, (s->nlis + 1) * sizeof(*l));
		if (!l)
			return NULL;
		s->lis = l;
		i = s->nlis;
		if (idmap_put(&s->by_listener, (uint64_t)pid, i) < 0)
			return NULL;
		s->lis[s->nlis++] = (struct sampler_listener){ .pid = pid };
	}
	struct sampler_listener *l = &s->lis[i];
	if (!l->scanned_ns || now - l->scanned_ns >= LISTEN_RESCAN_NS) {
		if (probe_listen_scan(pid, &l->set) < 0)
			l->set.n = 0;
		l->scanned_ns = now ? now : 1;
	}
	l->seen = 1;
	return l;
}

static void read_listeners(struct sampler *s, uint64_t now)
{
	if (!s->listen_rows && !(s->listen_rows = malloc(LISTEN_MAX_ROWS * sizeof(*s->listen_rows))))
		return;
	for (size_t i = 0; i < s->nlis; i++)
		s->lis[i].seen = 0;
	for (size_t i = 0; i < s->n; i++)
		if (!s->w[i]->gone_ns)
			listener_of(s, s->w[i]->pid, now);
	/* the entries of processes gone, out; then each namespace's tables once */
	size_t j = 0;
	for (size_t i = 0; i < s->nlis; i++)
		if (s->lis[i].seen)
			s->lis[j++] = s->lis[i];
	s->nlis = j;
	idmap_clear(&s->by_listener);
	for (size_t i = 0; i < s->nlis; i++) {
		idmap_put(&s->by_listener, (uint64_t)s->lis[i].pid, i);
		s->lis[i].now = (struct probe_listen){ 0 };
		s->lis[i].matched = 0;
	}
	for (size_t i = 0; i < s->nlis; i++) {
		struct sampler_listener *l = &s->lis[i];
		if (l->set.n == 0 || l->matched)
			continue;   /* no socket at all, or its namespace was read */
		int n = probe_listen_table(l->pid, l->set.netns, s->listen_rows, LISTEN_MAX_ROWS);
		for (size_t k = i; k < s->nlis; k++) {   /* every process of the namespace */
			struct sampler_listener *o = &s->lis[k];
			if (o->set.n && o->set.netns == l->set.netns && (k == i || l->set.netns)) {
				o->matched = 1;
				if (n > 0)
					probe_listen_match(&o->set, s->listen_rows, n, &o->now);
			}
		}
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		size_t k;
		if (w->gone_ns || !idmap_get(&s->by_listener, (uint64_t)w->pid, &k) || !s->lis[k].now.sockets)
			continue;
		series_add_listen(&w->series, now, s->lis[k].now.queue, s->lis[k].now.limit);
	}
}

int sampler_holds_epoll(struct sampler *s, pid_t pid)
{
	size_t k;
	if (!idmap_get(&s->by_listener, (uint64_t)pid, &k))
		return -1;
	return s->lis[k].set.eventpolls > 0;
}

int sampler_listens(struct sampler *s, pid_t pid)
{
	size_t k;
	if (!idmap_get(&s->by_listener, (uint64_t)pid, &k))
		return -1;
	return s->lis[k].now.sockets > 0;
}

void sampler_read_limits(struct sampler *s, uint64_t now)
{
	read_cgroups(s, now);
	read_listeners(s, now);
}

void sampler_free_limits(struct sampler *s)
{
	for (size_t i = 0; i < s->ncg; i++)
		free(s->cg[i].procs);
	free(s->cg);
	s->cg = NULL;
	s->ncg = 0;
	free(s->lis);
	s->lis = NULL;
	s->nlis = 0;
	idmap_done(&s->by_listener);
	free(s->listen_rows);
	s->listen_rows = NULL;
}
