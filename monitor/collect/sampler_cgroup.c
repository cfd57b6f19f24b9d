/*
 * sampler_cgroup.c — each worker's CPU quota and its group's throttling,
 * read once a second per cgroup however many workers share it (a pod's
 * threads all do), into every member's series (series_add_cgroup).
 */
#include "collect/sampler_int.h"
#include "probe_cgroup.h"

#include <stdlib.h>
#include <string.h>

/* Groups a sampler keeps at most: a worker of a further one has no quota
 * figures (container churn must not grow a long run without bound). */
#define SAMPLER_MAX_CGROUPS 1024

struct sampler_cgroup {
	char dir[PROBE_CGROUP_PATH_LEN];
	int  version;
	int  ok;                     /* this second's read worked */
	struct probe_cgroup_cpu now;
};

/* w's group: its index + 1, found at its first pass (0 before, -1 none). */
static int group_of(struct sampler *s, struct sworker *w, pid_t *last_pid, int *last_cg)
{
	if (w->cg)
		return w->cg;
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

void sampler_read_cgroups(struct sampler *s, uint64_t now)
{
	pid_t last_pid = 0;
	int last_cg = 0;
	for (size_t i = 0; i < s->n; i++)
		if (!s->w[i]->gone_ns)
			group_of(s, s->w[i], &last_pid, &last_cg);
	for (size_t i = 0; i < s->ncg; i++)
		s->cg[i].ok = probe_cgroup_cpu_read(s->cg[i].dir, s->cg[i].version, &s->cg[i].now) == 0;
	for (size_t i = 0; i < s->n; i++) {
		struct sworker *w = s->w[i];
		if (w->gone_ns || w->cg <= 0 || !s->cg[w->cg - 1].ok)
			continue;
		const struct probe_cgroup_cpu *c = &s->cg[w->cg - 1].now;
		series_add_cgroup(&w->series, now, c->throttled_ns, c->quota_cpus);
	}
}

void sampler_free_cgroups(struct sampler *s)
{
	free(s->cg);
	s->cg = NULL;
	s->ncg = 0;
}
