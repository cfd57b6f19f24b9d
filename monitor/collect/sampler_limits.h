/*
 * sampler_limits.h — the workers' cgroups and listening sockets
 * (sampler_limits.c). Private to the sampler.
 */
#ifndef LOOPSTAT_SAMPLER_LIMITS_H
#define LOOPSTAT_SAMPLER_LIMITS_H

#include <stdint.h>

#include "collect/sampler_int.h"

/* sampler_limits.c, on the sampling thread with s->lock held: once a
 * second, each worker's cgroup's quota and throttled time and its process's
 * fullest accept queue into its series */
void sampler_read_limits(struct sampler *s, uint64_t now);
/* The processes spending group cg's quota (cg: a worker's cg field), the
 * largest first, at most cap into pids: how many; the group's path in
 * *name (NULL: no group). */
int  sampler_cgroup_spenders(const struct sampler *s, int cg, pid_t *pids, int cap, const char **name);
/* Whether pid holds a listening TCP socket, as of the last pass: 1, 0,
 * or -1 when its sockets were not read yet. */
int  sampler_listens(struct sampler *s, pid_t pid);
/* Whether pid holds an epoll instance, as of its last fd walk; -1: not walked yet. */
int  sampler_holds_epoll(struct sampler *s, pid_t pid);
void sampler_free_limits(struct sampler *s);

#endif /* LOOPSTAT_SAMPLER_LIMITS_H */
