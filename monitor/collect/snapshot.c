/*
 * snapshot.c — freeing what the sampler hands out.
 */
#include "collect/snapshot.h"

#include <stdlib.h>
#include <string.h>

void snapshot_done(struct snapshot *snap)
{
	free(snap->w);
	free(snap->pools);
	memset(snap, 0, sizeof(*snap));
}
