/*
 * sampler_roles.h — what each loop is for, judged from what it
 * waits on (sampler_roles.c). Private to the sampler.
 */
#ifndef LOOPSTAT_SAMPLER_ROLES_H
#define LOOPSTAT_SAMPLER_ROLES_H

#include <stdint.h>

#include "collect/sampler_int.h"

/* sampler_roles.c, on the sampling thread with s->lock held, after
 * sampler_read_limits read the listening sockets: the roles of the loops not judged yet and
 * of those judged long ago. 1 while a loop shown by its role is not
 * judged yet: the next pass is then due soon. */
int  sampler_judge_roles(struct sampler *s, uint64_t now);
/* Whether the snapshot shows w, by its role (s->servers_only). */
int  sampler_role_shown(const struct sampler *s, const struct sworker *w);

#endif /* LOOPSTAT_SAMPLER_ROLES_H */
