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

const char *snap_role_name(enum snap_role r)
{
	static const char *const names[] = {
		[SNAP_ROLE_UNKNOWN] = "unknown", [SNAP_ROLE_SERVER] = "server", [SNAP_ROLE_CLIENT] = "client",
		[SNAP_ROLE_INTERACTIVE] = "interactive", [SNAP_ROLE_HELPER] = "helper",
	};
	return (unsigned)r < SNAP_NROLES ? names[r] : "unknown";
}
